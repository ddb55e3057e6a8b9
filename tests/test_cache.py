"""The cache: round trip, and refusal of stale, corrupt and missing entries."""

import importlib
import json
import re
import shutil

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
    with pytest.raises(cache.StaleCacheError, match="did not produce"):
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
    with pytest.raises(cache.StaleCacheError, match="did not produce"):
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
    with pytest.raises(ValueError, match="already has a python-ast-v2 key"):
        cache.rekey("demo", cache_dir=folder.parent)


def test_unknown_key_kind_is_refused(tmp_path):
    code = _code_file(tmp_path, MODULE)
    folder = _save(tmp_path, code)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["code_hash_kind"] = "python-ast-v9"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(cache.CorruptCacheError, match="knows 'python-ast-v2' only"):
        cache.verify_cache("demo", code=[code], config=manifest["config"], cache_dir=folder.parent)


COMMITTED = sorted(p.parent.name for p in cache.CACHE_DIR.glob("*/manifest.json"))


def _current(name):
    """The code and config that the book's current helpers would record for a cache entry,
    computed from the modules (not read back from the entry's own manifest)."""
    from helpers import bottleneck, charlm, m4benchmark, position_lm, recall

    writers = {bottleneck.CACHE_NAME: (bottleneck.cache_code(), bottleneck.cache_config()),
               recall.CACHE_NAME: (recall.cache_code(), recall.cache_config()),
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


# ------------------------------------------------------------------ a key that does not depend on the Python version

SNIPPET = '''
"""A module docstring."""
from __future__ import annotations
import math


def scaled(q: float, *, d_k: int = 64, mask=None) -> float:
    """A docstring the key drops."""
    if mask is None:
        return q / math.sqrt(d_k)     # a comment the key drops
    return [x for x in mask if x][0] ** -0.5


class Block:
    width: int = 4

    def __init__(self, *args, **kwargs):
        self.name = f"block{len(args)!r:>3}"
        self.f = lambda x, /, y=2: x @ y
'''
#: sha256 of normalised_source(SNIPPET), computed once under Python 3.11.7 and checked under 3.13 too
#: (tests/test_colab_sim.py runs this file's key tests in Colab's Python): it must never move, or every
#: committed cache would go stale on some interpreter.
SNIPPET_KEY = "f81eefbe22e5bd46c134f761829e90e2c930e9e3d20a7b8eee717c4fa0a2b72a"


def test_the_key_of_a_fixed_snippet_is_pinned():
    import hashlib

    assert hashlib.sha256(cache.normalised_source(SNIPPET).encode()).hexdigest() == SNIPPET_KEY


def test_the_canonical_form_leaves_out_empty_fields_and_sorts_the_rest():
    """What made python-ast-v1 differ between 3.11 and 3.13: empty fields (kwonlyargs=[], type_params=[])
    that one ast.dump prints and the other omits. The canonical form has none, and names fields in order."""
    text = cache.normalised_source("def f(x):\n    return x\n")
    assert text == ("Module(body=[FunctionDef(args=arguments(args=[arg(arg='x')]), body=[Return("
                    "value=Name(ctx=Load(), id='x'))], name='f')])")
    assert "=[]" not in cache.normalised_source(SNIPPET) and "None" not in cache.normalised_source(SNIPPET)
    assert cache.normalised_source("x = None\n") != cache.normalised_source("x = 0\n")   # a None constant still shows
    assert cache.normalised_source("f(a, b)\n") != cache.normalised_source("f(b, a)\n")   # list order kept


def test_the_legacy_v1_key_is_the_interpreters_ast_dump(tmp_path):
    """An entry keyed with python-ast-v1 is checked with v1 and moves to v2 by rekey, under the Python that wrote it."""
    code = _code_file(tmp_path, MODULE)
    folder = _save(tmp_path, code)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["code_hash_kind"] = "python-ast-v1"
    manifest["code_hash"] = cache.code_hash([code], manifest["config"], kind="python-ast-v1")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert manifest["code_hash"] != cache.code_hash([code], manifest["config"])
    cache.verify_cache("demo", code=[code], config=manifest["config"], cache_dir=folder.parent)
    moved = cache.rekey("demo", cache_dir=folder.parent)
    assert moved["code_hash"] == cache.code_hash([code], manifest["config"])
    assert moved["key_history"][-1]["old_key"] == manifest["code_hash"]
    with pytest.raises(ValueError, match="unknown code key kind"):
        cache.code_hash([code], {}, kind="python-ast-v0")


def test_a_checkout_reached_through_a_symlink_gives_the_same_key(tmp_path):
    link = tmp_path / "book"
    link.symlink_to(cache.REPO_ROOT, target_is_directory=True)
    assert cache.code_hash([link / "helpers" / "attention.py"], {}) == cache.code_hash(["helpers/attention.py"], {})


@pytest.mark.parametrize("name", COMMITTED)
def test_every_key_covers_the_helpers_modules_its_code_imports(name):
    """What a cached model runs is covered: cache/charlm's GPT blocks run helpers/attention.py, so its key
    covers that file although charlm.cache_code() does not name it."""
    manifest = cache.read_manifest(name)
    assert sorted(cache._source_of(c)[0] for c in cache.with_imports(manifest["code"])) == manifest["code"]
    if name in ("charlm", "position_lm"):
        assert "helpers/attention.py" in manifest["code"]


def test_with_imports_follows_imports_through_modules_named_by_one_function():
    from helpers import gpt

    code = cache.with_imports([gpt.Block])
    assert "helpers/attention.py" in code and "helpers/transformer.py" in code   # gpt imports both
    assert "helpers/gpt.py" not in code                                          # the rest of gpt stays out
    assert not set(cache.NOT_FOLLOWED) & set(code)


def test_a_stale_entry_tells_a_colab_reader_what_happened_and_what_to_do(tmp_path, monkeypatch):
    import sys
    import types

    from helpers.book import repository_url

    code = _code_file(tmp_path)
    folder = _save(tmp_path, code)
    code.write_text("def train():\n    return 2\n")
    with pytest.raises(cache.StaleCacheError) as here:
        cache.verify_cache("demo", code=[code], config={"lr": 0.1, "steps": 10}, cache_dir=folder.parent)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    with pytest.raises(cache.StaleCacheError) as colab:
        cache.verify_cache("demo", code=[code], config={"lr": 0.1, "steps": 10}, cache_dir=folder.parent)
    for message in (str(here.value), str(colab.value)):
        assert "did not produce" in message and "you did nothing wrong" in message
        assert f"{repository_url()}/issues" in message and "HEAVY_EVAL = True" in message
        assert "about 1 min on" in message           # the recorded cost (1.25 s rounds up to a minute)
    assert "make book HEAVY_EVAL=True" in str(here.value)       # the developer's command, off Colab
    assert "Developing the book" not in str(colab.value)       # not in Colab, where there is no .venv


def test_a_checkout_imported_through_a_symlink_finds_its_caches_fresh(tmp_path):
    """Importing the book through a symlinked path (an editable install elsewhere, a linked home folder) gives
    module files under the link; the key resolves them, so every committed entry stays fresh."""
    import os
    import subprocess
    import sys

    link = tmp_path / "book"
    link.symlink_to(cache.REPO_ROOT, target_is_directory=True)
    probe = ("from helpers import cache, bottleneck, charlm, m4benchmark as m4, position_lm, recall\n"
             "print(charlm.__file__)\n"
             "for w in (bottleneck, charlm, m4, position_lm, recall):\n"
             "    cache.verify_cache(w.CACHE_NAME, code=w.cache_code(), config=w.cache_config())\n"
             "    print('fresh', w.CACHE_NAME)\n")
    out = subprocess.run([sys.executable, "-P", "-c", probe], cwd=link, capture_output=True, text=True,   # -P: no cwd on the path
                         env={**os.environ, "PYTHONPATH": str(link)})
    assert out.stdout.startswith(str(link)), out.stdout + out.stderr   # the modules came through the link
    assert out.returncode == 0 and out.stdout.count("fresh ") == len(COMMITTED), out.stderr[-2000:]


def test_widen_key_adds_a_module_unchanged_since_a_commit_and_records_the_proof(tmp_path):
    config = {"steps": 1}
    cache.save_cache("demo", code=["helpers/forecasting.py"], config=config, wall_time_s=1.0, regenerate="demo",
                     cache_dir=tmp_path)
    saved = cache.read_manifest("demo", tmp_path)["code"]        # forecasting.py and what it imports (checks.py)
    assert "helpers/sampling.py" not in saved
    manifest = cache.widen_key("demo", ["helpers/sampling.py"], since="HEAD", cache_dir=tmp_path)
    assert manifest["code"] == sorted([*saved, "helpers/sampling.py"])
    assert manifest["key_history"][-1]["proof"] == ("fresh under its recorded key; helpers/sampling.py unchanged "
                                                    "since commit HEAD, which committed the entry (normalised "
                                                    "sources equal)")
    cache.verify_cache("demo", code=[*saved, "helpers/sampling.py"], config=config, cache_dir=tmp_path)
    # a file that exists now but not at the commit; in a folder of its own, so that the tests that read
    # helpers/*.py on another worker never see it come and go
    with pytest.raises(ValueError, match="cannot read helpers/_widen_key_test/no_such_module.py at commit"):
        scratch = cache.REPO_ROOT / "helpers" / "_widen_key_test"
        scratch.mkdir()
        try:
            (scratch / "no_such_module.py").write_text("x = 1\n")
            cache.widen_key("demo", ["helpers/_widen_key_test/no_such_module.py"], since="HEAD", cache_dir=tmp_path)
        finally:
            shutil.rmtree(scratch)


# ------------------------------------------------------------------ re-keying over argument checks (rekey_over_guards)

PRODUCER = '''"""A producer module."""

import math

from .checks import check_choice

SCALE = 2.0


def train(steps: int = 10, mode: str = "a") -> float:
    """Train for ``steps`` steps."""
    check_choice("mode", mode, ("a", "b"))
    total = 0.0
    for i in range(steps):
        total += math.sqrt(i) * SCALE
    return total
'''
#: the same producer with argument checks only: a new import of helpers.checks, a bare check_int call, guard
#: `if`s (one inside the loop, one raising TypeError, one `raise ... from None`), a new docstring line
GUARDED = PRODUCER.replace("from .checks import check_choice", "from .checks import check_choice, check_int").replace(
    '''    """Train for ``steps`` steps."""
''', '''    """Train for ``steps`` steps (>= 1)."""
    check_int("steps", steps, 1)
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a string, got {type(mode).__name__}")
    if steps > 10 ** 6 or len(mode) != 1:
        raise ValueError("steps must be <= 10**6") from None
''').replace('''        total += math.sqrt(i) * SCALE''', '''        if not 0 <= i < steps:
            raise ValueError(f"i out of range: {i}")
        total += math.sqrt(i) * SCALE''')
NOT_ONLY_GUARDS = {
    "a changed default": GUARDED.replace("steps: int = 10", "steps: int = 11"),
    "a changed constant": GUARDED.replace("SCALE = 2.0", "SCALE = 2.5"),
    "an if with an else": GUARDED.replace('''        raise ValueError("steps must be <= 10**6") from None
''', '''        raise ValueError("steps must be <= 10**6") from None
    else:
        steps = steps
'''),
    "a raise of another type": GUARDED.replace("raise TypeError", "raise RuntimeError"),
    "a guard that also does something else": GUARDED.replace('''            raise ValueError(f"i out of range: {i}")''',
                                                              '''            total = 0.0
            raise ValueError(f"i out of range: {i}")'''),
    "a check whose value is kept": GUARDED.replace('    check_int("steps", steps, 1)',
                                                   '    steps = check_int("steps", steps, 1)'),
    "a condition that assigns": GUARDED.replace("if steps > 10 ** 6", "if (steps := steps + 1) > 10 ** 6"),
    "a condition that calls a non-builtin": GUARDED.replace("if steps > 10 ** 6", "if math.sqrt(steps) > 10 ** 3"),
    "a call of a helpers.checks function that is not read-only": GUARDED.replace(
        "from .checks import check_choice, check_int", "from .checks import check_choice, check_int, check_prob"
    ).replace('    check_int("steps", steps, 1)', '    check_prob("steps", steps)'),
}
#: names that a guard relies on, rebound in the file (in both versions): its statements are no longer guards
SHADOWED = {"ValueError": "ValueError = print", "check_int": "check_int = print", "len": "len = print"}


def _git_repo_entry(tmp_path, monkeypatch, producer=PRODUCER, checks=None):
    """A git repository holding a producer module and a copy of helpers/checks.py (committed, then taken as
    helpers.checks), and an entry keyed on both; returns (producer path, checks path, cache folder)."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "producer.py").write_text(producer)
    (repo / "checks.py").write_text(checks or (cache.REPO_ROOT / "helpers" / "checks.py").read_text())
    git = ["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@example.org"]
    for args in (["init", "-q"], ["add", "producer.py", "checks.py"], ["commit", "-q", "-m", "producer"]):
        subprocess.run(git + args, check=True, capture_output=True)
    monkeypatch.setattr(cache, "CHECKS_FILE", repo / "checks.py")
    cache.save_cache("demo", code=[repo / "producer.py", repo / "checks.py"], config={"steps": 1},
                     tensors={"w": torch.ones(2)}, wall_time_s=1.0, regenerate="demo", cache_dir=tmp_path / "cache")
    return repo / "producer.py", repo / "checks.py", tmp_path / "cache"


def test_rekey_over_guards_accepts_argument_checks_and_records_the_proof(tmp_path, monkeypatch):
    producer, checks, folder = _git_repo_entry(tmp_path, monkeypatch)
    producer.write_text(GUARDED)
    with pytest.raises(cache.StaleCacheError):
        cache.verify_cache("demo", code=[producer, checks], config={"steps": 1}, cache_dir=folder)
    manifest = cache.rekey_over_guards("demo", since="HEAD", cache_dir=folder)
    cache.verify_cache("demo", code=[producer, checks], config={"steps": 1}, cache_dir=folder)   # fresh again
    change = manifest["key_history"][-1]
    head = cache._git(producer.parent, "rev-parse", "HEAD").strip()
    assert change["since"] == head and change["change"].endswith(head) and len(head) == 40
    assert change["old_key"] != change["new_key"] == manifest["code_hash"]
    assert f"the key of its code at commit {head}" in change["proof"] and cache.GUARD_RULE in change["proof"]


def test_rekey_over_guards_accepts_a_new_helpers_checks_function_that_the_old_code_did_not_name(tmp_path, monkeypatch):
    producer, checks, folder = _git_repo_entry(tmp_path, monkeypatch)
    checks.write_text(checks.read_text() + '''

def check_small(name: str, value) -> int:
    """A new check."""
    if value > 10:
        raise ValueError(f"{name} must be <= 10, got {value}")
    return value
''')
    producer.write_text(PRODUCER.replace("import check_choice", "import check_choice, check_small").replace(
        '''    check_choice("mode", mode, ("a", "b"))''', '''    check_choice("mode", mode, ("a", "b"))
    check_small("steps", steps)'''))
    cache.rekey_over_guards("demo", since="HEAD", cache_dir=folder)
    cache.verify_cache("demo", code=[producer, checks], config={"steps": 1}, cache_dir=folder)


def test_rekey_over_guards_refuses_a_new_helpers_checks_function_that_the_old_code_named(tmp_path, monkeypatch):
    old = PRODUCER + "\n\ndef check_small(value):\n    return value\n"
    producer, checks, folder = _git_repo_entry(tmp_path, monkeypatch, producer=old)
    checks.write_text(checks.read_text() + "\n\ndef check_small(name, value):\n    return value\n")
    with pytest.raises(ValueError, match=r"checks\.py: function check_small differs from commit HEAD"):
        cache.rekey_over_guards("demo", since="HEAD", cache_dir=folder)


@pytest.mark.parametrize("edit", sorted(NOT_ONLY_GUARDS) + [f"a shadowed {name}" for name in sorted(SHADOWED)])
def test_rekey_over_guards_refuses_anything_but_guard_statements(tmp_path, monkeypatch, edit):
    shadow = SHADOWED.get(edit.removeprefix("a shadowed "))
    old, new = (PRODUCER + shadow, GUARDED + shadow) if shadow else (PRODUCER, NOT_ONLY_GUARDS[edit])
    producer, _, folder = _git_repo_entry(tmp_path, monkeypatch, producer=old)
    producer.write_text(new)
    before = (folder / "demo" / "manifest.json").read_text()
    where = {"a changed constant": "the statement `SCALE = 2.5`",   # a new import of a name the old code bound:
             "a shadowed check_int": "the statement `from .checks import check_choice, check_int`"}.get(edit,
                                                                                              "function train")
    with pytest.raises(ValueError, match=rf"producer\.py: {where}.* differs from commit HEAD by more than guard "
                                         r"statements .*retrain it instead"):
        cache.rekey_over_guards("demo", since="HEAD", cache_dir=folder)
    assert (folder / "demo" / "manifest.json").read_text() == before       # nothing written


def test_rekey_over_guards_refuses_a_commit_that_did_not_produce_the_entry(tmp_path, monkeypatch):
    import subprocess

    producer, _, folder = _git_repo_entry(tmp_path, monkeypatch)
    producer.write_text(PRODUCER.replace("SCALE = 2.0", "SCALE = 3.0"))
    subprocess.run(["git", "-C", str(producer.parent), "-c", "user.name=t", "-c", "user.email=t@example.org",
                    "commit", "-qam", "another scale"], check=True, capture_output=True)
    with pytest.raises(cache.StaleCacheError, match="is not the key of its code at commit HEAD"):
        cache.rekey_over_guards("demo", since="HEAD", cache_dir=folder)
    with pytest.raises(ValueError, match="failed"):
        cache.rekey_over_guards("demo", since="no-such-commit", cache_dir=folder)


def test_rekey_over_guards_from_the_command_line(tmp_path, monkeypatch, capsys):
    producer, _, folder = _git_repo_entry(tmp_path, monkeypatch)
    producer.write_text(GUARDED)
    monkeypatch.setattr(cache, "CACHE_DIR", folder)
    assert cache.main(["rekey-guards", "demo", "--since", "HEAD"]) == 0
    assert "proof: intact, and its recorded key equals the key of its code at commit" in capsys.readouterr().out
    assert cache.main(["check", "demo"]) == 0
    assert cache.main(["rekey-guards", "demo", "--since", "HEAD"]) == 0       # again: nothing to do, nothing written
    assert "is already the key of the current code; nothing to do" in capsys.readouterr().out


def test_the_item_tree_of_a_function_is_the_tree_its_key_hashes():
    """rekey_over_guards reads a function's source out of its whole file at a commit: the same tree as
    inspect.getsource, which the key hashes (decorators included)."""
    from helpers import gpt

    for obj in (gpt.alibi_slopes, gpt.GPTConfig, gpt.GPT):
        label, text, _ = cache._source_of(obj)
        tree = cache._item_tree(label, (cache.REPO_ROOT / "helpers" / "gpt.py").read_text())
        assert cache.canonical_dump(cache._strip_docstrings(tree)) == cache.normalised_source(text)
