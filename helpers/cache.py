"""Cached results of heavy training, saved with a manifest and checked before every use.

A cache entry is a folder ``cache/<name>/`` holding

- ``tensors.safetensors``  weights and arrays (loaded safely: no pickle involved),
- ``results.json``         curves, tables, samples: anything JSON can hold,
- ``manifest.json``        how it was made: the config, a hash of the code that made it,
                           library versions, hardware, wall time, metrics, and the
                           SHA-256 of the two files above.

``load_cache`` refuses an entry whose files do not match their recorded SHA-256
(``CorruptCacheError``) or whose code or config changed since it was made
(``StaleCacheError``); both messages say how to regenerate it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any, Iterable

import torch
from safetensors.torch import load_file, save_file

from .book import REPO_ROOT, repo_path
from .data import sha256_of

CACHE_DIR = repo_path("cache")
TENSORS_FILE = "tensors.safetensors"
RESULTS_FILE = "results.json"
MANIFEST_FILE = "manifest.json"


class CacheError(RuntimeError):
    """A cache entry cannot be used."""


class MissingCacheError(CacheError):
    """The cache entry does not exist."""


class CorruptCacheError(CacheError):
    """A file of the cache entry is missing, unreadable or altered."""


class StaleCacheError(CacheError):
    """The code or config that produced the cache entry has changed since."""


@dataclass(frozen=True)
class CachedResult:
    """What ``load_cache`` returns: the tensors, the JSON results and the manifest."""

    tensors: dict[str, torch.Tensor]
    results: dict[str, Any]
    manifest: dict[str, Any]


def _source_of(item: Any) -> tuple[str, str]:
    """(label, source text) of a code item: a path, a module, a function or a class."""
    if isinstance(item, (str, Path)):
        path = Path(item)
        path = path if path.is_absolute() else REPO_ROOT / path
        if not path.is_file():
            raise ValueError(f"code file {item!s} does not exist (paths are relative to the repo root)")
        label = path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else str(path)
        return label, path.read_text(encoding="utf-8")
    if isinstance(item, ModuleType):
        return _source_of(Path(inspect.getfile(item)))
    if isinstance(item, (FunctionType, type)):
        return f"{item.__module__}.{item.__qualname__}", inspect.getsource(item)
    raise TypeError(
        f"code items must be file paths, modules, functions or classes, got {type(item).__name__}"
    )


def code_hash(code: Iterable[Any], config: dict[str, Any]) -> str:
    """SHA-256 over the source of every item of ``code`` and the JSON of ``config``.

    Any edit to that code or any change of config gives a different hash.
    """
    digest = hashlib.sha256()
    for label, text in sorted(_source_of(item) for item in code):
        digest.update(label.encode() + b"\0" + text.encode() + b"\0")
    digest.update(json.dumps(config, sort_keys=True).encode())
    return digest.hexdigest()


def environment() -> dict[str, Any]:
    """Library versions and hardware of this run, for the manifest."""
    versions = {"python": platform.python_version(), "torch": torch.__version__}
    for name in ("numpy", "pandas", "safetensors", "statsforecast", "tokenizers"):
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = getattr(module, "__version__", "unknown")
    hardware = {
        "machine": platform.machine(),
        "processor": platform.processor() or "unknown",
        "system": platform.system(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    return {"versions": versions, "hardware": hardware}


def _regenerate_hint(manifest_or_cmd: dict[str, Any] | str | None, name: str) -> str:
    cmd = manifest_or_cmd.get("regenerate") if isinstance(manifest_or_cmd, dict) else manifest_or_cmd
    return cmd or f"re-run the notebook that produces cache/{name} with HEAVY_EVAL=True"


def save_cache(
    name: str,
    *,
    code: Iterable[Any],
    config: dict[str, Any],
    tensors: dict[str, torch.Tensor] | None = None,
    results: dict[str, Any] | None = None,
    metrics: dict[str, float] | None = None,
    wall_time_s: float,
    regenerate: str,
    cache_dir: Path | None = None,
) -> Path:
    """Write the cache entry ``name`` and its manifest; returns the entry's folder.

    ``code`` lists what produced the result (helpers modules, functions, file paths),
    ``config`` its settings; together they give the code hash that ``load_cache``
    checks. ``regenerate`` is the command that rebuilds the entry, quoted in errors.
    """
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"cache name must be a plain folder name, got {name!r}")
    code = list(code)
    folder = Path(cache_dir or CACHE_DIR) / name
    folder.mkdir(parents=True, exist_ok=True)
    # clone: tensors that share memory (e.g. tied embeddings) must be stored separately
    tensors = {k: v.detach().cpu().clone().contiguous() for k, v in (tensors or {}).items()}
    save_file(tensors, str(folder / TENSORS_FILE))
    (folder / RESULTS_FILE).write_text(json.dumps(results or {}, indent=1, sort_keys=True) + "\n")
    manifest = {
        "name": name,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": config,
        "code": [label for label, _ in sorted(_source_of(item) for item in code)],
        "code_hash": code_hash(code, config),
        **environment(),
        "wall_time_s": round(float(wall_time_s), 3),
        "metrics": metrics or {},
        "regenerate": regenerate,
        "files": {f: sha256_of(folder / f) for f in (TENSORS_FILE, RESULTS_FILE)},
    }
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return folder


def read_manifest(name: str, cache_dir: Path | None = None) -> dict[str, Any]:
    """The manifest of cache entry ``name`` (raises ``MissingCacheError``/``CorruptCacheError``)."""
    folder = Path(cache_dir or CACHE_DIR) / name
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise MissingCacheError(
            f"no cache entry {name!r} in {folder.parent}: {_regenerate_hint(None, name)}."
        )
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CorruptCacheError(
            f"{path} is not valid JSON ({err}); restore it with `git checkout -- cache/{name}` "
            f"or {_regenerate_hint(None, name)}."
        ) from err


def verify_cache(
    name: str, *, code: Iterable[Any], config: dict[str, Any], cache_dir: Path | None = None
) -> dict[str, Any]:
    """Check cache entry ``name`` without loading it; returns its manifest.

    Raises ``CorruptCacheError`` if a file's SHA-256 differs from the manifest's and
    ``StaleCacheError`` if ``code``/``config`` no longer hash to the recorded code hash.
    """
    folder = Path(cache_dir or CACHE_DIR) / name
    manifest = read_manifest(name, cache_dir)
    hint = _regenerate_hint(manifest, name)
    for fname, expected in manifest.get("files", {}).items():
        if not (folder / fname).is_file():
            raise CorruptCacheError(f"cache/{name}/{fname} is missing: {hint}")
        if sha256_of(folder / fname) != expected:
            raise CorruptCacheError(
                f"cache/{name}/{fname} does not match the SHA-256 in its manifest (corrupt or "
                f"edited by hand). Restore it with `git checkout -- cache/{name}`, or regenerate: {hint}"
            )
    current = code_hash(code, config)
    if current != manifest.get("code_hash"):
        raise StaleCacheError(
            f"cache/{name} was produced by different code or config than the current one "
            f"(code hash {manifest.get('code_hash', '?')[:12]} recorded, {current[:12]} now; "
            f"code: {', '.join(manifest.get('code', []))}). The cached results no longer match "
            f"the code shown. Regenerate it: {hint}"
        )
    return manifest


def load_cache(
    name: str, *, code: Iterable[Any], config: dict[str, Any], cache_dir: Path | None = None
) -> CachedResult:
    """Load cache entry ``name`` after ``verify_cache``; tensors load via safetensors (no pickle)."""
    code = list(code)
    manifest = verify_cache(name, code=code, config=config, cache_dir=cache_dir)
    folder = Path(cache_dir or CACHE_DIR) / name
    try:
        tensors = load_file(str(folder / TENSORS_FILE))
        results = json.loads((folder / RESULTS_FILE).read_text())
    except Exception as err:  # a file that matched its hash but cannot be parsed
        raise CorruptCacheError(
            f"cache/{name} cannot be read ({err}); {_regenerate_hint(manifest, name)}"
        ) from err
    return CachedResult(tensors=tensors, results=results, manifest=manifest)
