"""The cache: round trip, and refusal of stale, corrupt and missing entries."""

import importlib
import json
import re

import pytest
import torch

from helpers import cache


def _code_file(tmp_path, body="def train():\n    return 1\n"):
    path = tmp_path / "producer.py"
    path.write_text(body)
    return path


def _save(tmp_path, code, config=None):
    return cache.save_cache(
        "demo", code=[code], config=config or {"lr": 0.1, "steps": 10},
        tensors={"w": torch.arange(6.0).reshape(2, 3)}, results={"curve": [3.0, 2.0, 1.5]},
        metrics={"val_loss": 1.5}, wall_time_s=1.25, regenerate="make book HEAVY_EVAL=True",
        cache_dir=tmp_path / "cache",
    )


def test_round_trip_and_manifest(tmp_path):
    code = _code_file(tmp_path)
    folder = _save(tmp_path, code)
    loaded = cache.load_cache("demo", code=[code], config={"lr": 0.1, "steps": 10}, cache_dir=folder.parent)
    assert torch.equal(loaded.tensors["w"], torch.arange(6.0).reshape(2, 3))
    assert loaded.results["curve"] == [3.0, 2.0, 1.5]
    m = loaded.manifest
    assert m["config"] == {"lr": 0.1, "steps": 10} and m["metrics"] == {"val_loss": 1.5}
    assert m["wall_time_s"] == 1.25 and m["versions"]["torch"] == torch.__version__
    assert m["hardware"]["cpu_count"] >= 1 and set(m["files"]) == {"tensors.safetensors", "results.json"}


def test_changed_code_is_stale(tmp_path):
    code = _code_file(tmp_path)
    folder = _save(tmp_path, code)
    code.write_text("def train():\n    return 2\n")
    with pytest.raises(cache.StaleCacheError, match="HEAVY_EVAL=True"):
        cache.load_cache("demo", code=[code], config={"lr": 0.1, "steps": 10}, cache_dir=folder.parent)


def test_changed_config_is_stale(tmp_path):
    code = _code_file(tmp_path)
    folder = _save(tmp_path, code)
    with pytest.raises(cache.StaleCacheError, match="different code or config"):
        cache.load_cache("demo", code=[code], config={"lr": 0.2, "steps": 10}, cache_dir=folder.parent)


@pytest.mark.parametrize("victim", ["tensors.safetensors", "results.json"])
def test_altered_file_is_corrupt(tmp_path, victim):
    code = _code_file(tmp_path)
    folder = _save(tmp_path, code)
    raw = bytearray((folder / victim).read_bytes())
    raw[-2] ^= 0xFF
    (folder / victim).write_bytes(bytes(raw))
    with pytest.raises(cache.CorruptCacheError, match="git checkout -- cache/demo"):
        cache.load_cache("demo", code=[code], config={"lr": 0.1, "steps": 10}, cache_dir=folder.parent)


def test_pickle_in_place_of_safetensors_is_refused(tmp_path):
    code = _code_file(tmp_path)
    folder = _save(tmp_path, code)
    torch.save({"w": torch.zeros(2)}, folder / "tensors.safetensors")  # a pickle: never loaded
    with pytest.raises(cache.CorruptCacheError):
        cache.load_cache("demo", code=[code], config={"lr": 0.1, "steps": 10}, cache_dir=folder.parent)


def test_unreadable_manifest_and_missing_entry(tmp_path):
    code = _code_file(tmp_path)
    folder = _save(tmp_path, code)
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(cache.CorruptCacheError, match="not valid JSON"):
        cache.load_cache("demo", code=[code], config={}, cache_dir=folder.parent)
    with pytest.raises(cache.MissingCacheError, match="no cache entry 'other'"):
        cache.load_cache("other", code=[code], config={}, cache_dir=folder.parent)


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match="plain folder name"):
        cache.save_cache("../x", code=[], config={}, wall_time_s=0, regenerate="-", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        cache.code_hash(["no/such/file.py"], {})
    with pytest.raises(TypeError, match="code items must be"):
        cache.code_hash([42], {})


def test_code_hash_covers_functions_and_is_order_free():
    assert cache.code_hash([cache.save_cache, cache.load_cache], {"a": 1}) == \
        cache.code_hash([cache.load_cache, cache.save_cache], {"a": 1})
    assert cache.code_hash([cache.save_cache], {"a": 1}) != cache.code_hash([cache.load_cache], {"a": 1})


MODULE = '''"""A producer module."""

import math

SCALE = 2.0  # the scale


def train(steps: int = 10) -> float:
    """Train for ``steps`` steps."""
    # a comment inside the body
    return math.sqrt(steps) * SCALE
'''

EDITS_THAT_KEEP = {
    "comment": MODULE.replace("# the scale", "# the scale, chosen by hand") + "\n# trailing comment\n",
    "docstring": MODULE.replace("Train for ``steps`` steps.", "Train.\n\n    Longer text.\n    "),
    "blank lines and wrapping": MODULE.replace("\n\n\ndef", "\n\ndef").replace(
        "def train(steps: int = 10) -> float:", "def train(\n    steps: int = 10,\n) -> float:"),
    "bare string statement": MODULE.replace("    # a comment", "    'a note'\n    # a comment"),
}
EDITS_THAT_BREAK = {
    "constant": MODULE.replace("SCALE = 2.0", "SCALE = 2.5"),
    "default argument": MODULE.replace("steps: int = 10", "steps: int = 11"),
    "operator": MODULE.replace("math.sqrt(steps) * SCALE", "math.sqrt(steps) / SCALE"),
    "new statement": MODULE + "\nSCALE = 3.0\n",
    "string used by the code": MODULE.replace("import math", "import math\nNAME = 'a'"),
}


@pytest.mark.parametrize("edit", sorted(EDITS_THAT_KEEP))
def test_comment_and_docstring_edits_keep_the_cache(tmp_path, edit):
    code = _code_file(tmp_path, MODULE)
    folder = _save(tmp_path, code)
    code.write_text(EDITS_THAT_KEEP[edit])
    assert code.read_text() != MODULE
    loaded = cache.load_cache("demo", code=[code], config={"lr": 0.1, "steps": 10}, cache_dir=folder.parent)
    assert loaded.manifest["code_hash_kind"] == cache.CODE_HASH_KIND


@pytest.mark.parametrize("edit", sorted(EDITS_THAT_BREAK))
def test_code_edits_make_the_cache_stale(tmp_path, edit):
    code = _code_file(tmp_path, MODULE)
    folder = _save(tmp_path, code)
    code.write_text(EDITS_THAT_BREAK[edit])
    with pytest.raises(cache.StaleCacheError, match="different code or config"):
        cache.load_cache("demo", code=[code], config={"lr": 0.1, "steps": 10}, cache_dir=folder.parent)


def test_functions_are_keyed_by_their_code_not_their_docstring():
    def f(x):
        """One docstring."""
        return x + 1  # one comment

    def g(x):
        """Another docstring, longer."""
        # another comment
        return x + 1

    def h(x):
        """One docstring."""
        return x + 2  # one comment

    def key(fn):  # the tree of the function's source, its own name blanked
        return re.sub(r"name='\w+'", "name=''", cache.normalised_source(cache.inspect.getsource(fn)), count=1)

    assert key(f) == key(g) and key(f) != key(h)


def test_code_that_does_not_parse_is_named(tmp_path):
    code = _code_file(tmp_path, "def broken(:\n")
    with pytest.raises(ValueError, match="producer.py is not valid Python"):
        cache.code_hash([code], {})


def _committed_sources():
    return [pytest.param(label, id=f"{path.parent.name}:{label}")
            for path in sorted(cache.CACHE_DIR.glob("*/manifest.json"))
            for label in json.loads(path.read_text())["code"]]


def _committed_files():
    return [p for p in _committed_sources() if p.values[0].endswith(".py")]


def _committed_functions():
    return [p for p in _committed_sources() if not p.values[0].endswith(".py")]


@pytest.mark.parametrize("label", _committed_files())
def test_real_modules_survive_comments_and_not_code_edits(label):
    """On the modules the committed caches list: a comment or docstring edit keeps the key."""
    text = (cache.REPO_ROOT / label).read_text()
    key = cache.normalised_source(text)
    assert '"""' in text and "#" in text
    commented = text.replace('"""', '"""Edited docstring. ', 1) + "\n# a comment appended by the test\n"
    assert cache.normalised_source(commented) == key
    first_def = re.search(r"^def (\w+)\(", text, flags=re.M).group(1)
    renamed = re.sub(rf"^def {first_def}\(", f"def {first_def}_renamed(", text, count=1, flags=re.M)
    assert cache.normalised_source(renamed) != key
    assert cache.normalised_source(text + "\nCACHE_NAME = 'other'\n") != key


@pytest.mark.parametrize("label", _committed_functions())
def test_real_functions_survive_comments_and_not_code_edits(label):
    """On the functions and classes the committed caches list by name: the same, inside their source."""
    import textwrap

    _, text, _ = cache._source_of(label)
    key = cache.normalised_source(text)
    assert cache.normalised_source(text + "\n# a comment appended by the test\n") == key
    lines = textwrap.dedent(text).splitlines()
    head = next(i for i, line in enumerate(lines) if re.match(r"(def|class) \w+", line))
    renamed = lines[:head] + [re.sub(r"^(def|class) (\w+)", r"\1 \2_renamed", lines[head])] + lines[head + 1:]
    assert cache.normalised_source("\n".join(renamed)) != key


TWO_FUNCTIONS = '''
def used(x):
    return x + 1


def unused(x):
    return x * 2
'''


def test_a_key_narrowed_to_the_functions_used_ignores_the_rest_of_their_module(tmp_path, monkeypatch):
    """cache.narrow_key: an entry keyed on a whole module, narrowed to the one function it uses, stays fresh
    when another function of the module changes and goes stale when the used one does."""
    import importlib
    import sys

    package = cache.REPO_ROOT / "helpers" / "_narrow_demo.py"   # narrow_key needs a file of the repository
    package.write_text(TWO_FUNCTIONS)
    try:
        monkeypatch.syspath_prepend(str(cache.REPO_ROOT))
        module = importlib.import_module("helpers._narrow_demo")
        config = {"steps": 1}
        cache.save_cache("demo", code=[module], config=config, wall_time_s=1.0, regenerate="demo", cache_dir=tmp_path)
        with pytest.raises(ValueError, match="outside the code its key covered"):
            cache.narrow_key("demo", [module.used, cache.code_hash], cache_dir=tmp_path)
        manifest = cache.narrow_key("demo", [module.used], cache_dir=tmp_path)
        assert manifest["code"] == ["helpers._narrow_demo.used"]
        package.write_text(TWO_FUNCTIONS.replace("x * 2", "x * 3"))       # the unused function changes
        cache.verify_cache("demo", code=["helpers._narrow_demo.used"], config=config, cache_dir=tmp_path)
        package.write_text(TWO_FUNCTIONS.replace("x + 1", "x + 2"))       # the used one changes
        importlib.reload(module)
        with pytest.raises(cache.StaleCacheError):
            cache.verify_cache("demo", code=["helpers._narrow_demo.used"], config=config, cache_dir=tmp_path)
        with pytest.raises(cache.StaleCacheError):                          # and narrowing a stale entry is refused
            cache.narrow_key("demo", [module.used], cache_dir=tmp_path)
    finally:
        package.unlink()
        sys.modules.pop("helpers._narrow_demo", None)


def _legacy_entry(tmp_path, body=MODULE):
    """An entry written with the old byte key (no code_hash_kind), as before python-ast-v1."""
    code = _code_file(tmp_path, body)
    folder = _save(tmp_path, code)
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["code_hash_kind"]
    manifest["code_hash"] = cache.file_bytes_hash([code], manifest["config"])
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return code, folder


def test_legacy_entries_keep_the_byte_key_until_rekeyed(tmp_path):
    code, folder = _legacy_entry(tmp_path)
    config = {"lr": 0.1, "steps": 10}
    cache.verify_cache("demo", code=[code], config=config, cache_dir=folder.parent)
    code.write_text(MODULE + "# a comment\n")
    with pytest.raises(cache.StaleCacheError, match="python -m helpers.cache rekey demo"):
        cache.verify_cache("demo", code=[code], config=config, cache_dir=folder.parent)
    with pytest.raises(cache.StaleCacheError):  # rekey refuses code that is not the producing code
        cache.rekey("demo", cache_dir=folder.parent)
    code.write_text(MODULE)
    manifest = cache.rekey("demo", regenerate="tools/book.py --only demo --heavy", cache_dir=folder.parent)
    assert manifest["code_hash_kind"] == cache.CODE_HASH_KIND
    assert manifest["code_hash_file_bytes"] == cache.file_bytes_hash([code], config)
    code.write_text(MODULE + "# a comment\n")  # now a comment is harmless
    assert cache.verify_cache("demo", code=[code], config=config, cache_dir=folder.parent)["regenerate"] \
        == "tools/book.py --only demo --heavy"
    with pytest.raises(ValueError, match="already has a python-ast-v1 key"):
        cache.rekey("demo", cache_dir=folder.parent)


def test_unknown_key_kind_is_refused(tmp_path):
    code = _code_file(tmp_path, MODULE)
    folder = _save(tmp_path, code)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["code_hash_kind"] = "python-ast-v9"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(cache.CorruptCacheError, match="knows 'python-ast-v1' only"):
        cache.verify_cache("demo", code=[code], config=manifest["config"], cache_dir=folder.parent)


COMMITTED = sorted(p.parent.name for p in cache.CACHE_DIR.glob("*/manifest.json"))


def _current(name):
    """The code and config that the book's current helpers would record for a cache entry,
    computed from the modules (not read back from the entry's own manifest)."""
    from helpers import bottleneck, charlm, m4benchmark, position_lm

    writers = {bottleneck.CACHE_NAME: (bottleneck.cache_code(), bottleneck.cache_config()),
               charlm.CACHE_NAME: (charlm.cache_code(), charlm.cache_config()),
               m4benchmark.CACHE_NAME: (m4benchmark.cache_code(), m4benchmark.cache_config()),
               position_lm.CACHE_NAME: (position_lm.cache_code(), position_lm.cache_config())}
    assert name in writers, f"cache/{name}: no module writes it; register its code and config in tests/test_cache.py"
    return writers[name]


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_cache_entries_are_fresh_and_intact(name):
    """Every entry in cache/ matches its files and the code and config the current helpers use
    (a changed HEAVY_RUN or training code makes the entry stale, and this fails)."""
    code, config = _current(name)
    cache.verify_cache(name, code=code, config=config)


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_entries_name_the_one_notebook_that_regenerates_them(name):
    """The hint is `tools/book.py --only <section> --heavy`, and that runs the right notebook only."""
    from tools import book

    manifest = cache.read_manifest(name)
    assert manifest["code_hash_kind"] == cache.CODE_HASH_KIND
    match = re.fullmatch(r"\.venv/bin/python tools/book\.py --only (\S+) --heavy", manifest["regenerate"])
    assert match, manifest["regenerate"]
    notebooks = [p for p in book.source_notebooks() if match.group(1) in p.name]
    assert len(notebooks) == 1, notebooks
    producers = set(re.findall(r"(\w+)\.train_and_cache\(", notebooks[0].read_text()))
    assert [importlib.import_module(f"helpers.{m}").CACHE_NAME for m in producers] == [name]
    with pytest.raises(cache.StaleCacheError) as err:
        cache.verify_cache(name, code=manifest["code"], config={**manifest["config"], "changed": True})
    assert manifest["regenerate"] in str(err.value) and "make book" not in str(err.value)


def test_cache_folder_is_lean():
    total = sum(p.stat().st_size for p in cache.CACHE_DIR.rglob("*") if p.is_file())
    assert total < 30 * 2**20, f"cache/ holds {total / 2**20:.1f} MB; keep it well under 30 MB"
