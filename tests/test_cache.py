"""The cache: round trip, and refusal of stale, corrupt and missing entries."""

import json

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


COMMITTED = sorted(p.parent.name for p in cache.CACHE_DIR.glob("*/manifest.json"))


def _current(name):
    """The code and config that the book's current helpers would record for a cache entry,
    computed from the modules (not read back from the entry's own manifest)."""
    from helpers import charlm, m4benchmark

    writers = {charlm.CACHE_NAME: ([charlm], charlm.cache_config()),
               m4benchmark.CACHE_NAME: (m4benchmark.cache_code(), m4benchmark.cache_config())}
    assert name in writers, f"cache/{name}: no module writes it; register its code and config in tests/test_cache.py"
    return writers[name]


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_cache_entries_are_fresh_and_intact(name):
    """Every entry in cache/ matches its files and the code and config the current helpers use
    (a changed HEAVY_RUN or training code makes the entry stale, and this fails)."""
    code, config = _current(name)
    cache.verify_cache(name, code=code, config=config)


def test_cache_folder_is_lean():
    total = sum(p.stat().st_size for p in cache.CACHE_DIR.rglob("*") if p.is_file())
    assert total < 30 * 2**20, f"cache/ holds {total / 2**20:.1f} MB; keep it well under 30 MB"
