"""Cached results of heavy training, saved with a manifest and checked before every use.

A cache entry is a folder ``cache/<name>/`` holding

- ``tensors.safetensors``  weights and arrays (loaded safely: no pickle involved),
- ``results.json``         curves, tables, samples: anything JSON can hold,
- ``manifest.json``        how it was made: the config, a key of the code that made it,
                           library versions, hardware, wall time, metrics, and the
                           SHA-256 of the two files above.

``load_cache`` refuses an entry whose files do not match their recorded SHA-256
(``CorruptCacheError``) or whose code or config changed since it was made
(``StaleCacheError``); both messages say how to regenerate it.

The code key covers what the code *does*, not how it is written up: each Python source
is parsed and its syntax tree, without comments, docstrings or other bare string
statements, is hashed. Editing a comment or a docstring keeps a cache valid; changing a
statement, a default, a constant or a name makes it stale. (Manifests written before
this key, marked by the absence of ``code_hash_kind``, are checked with the old key, a
hash of the files' bytes; ``python -m helpers.cache rekey NAME`` moves such an entry to
the new key after checking that the old one still matches.)
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import inspect
import json
import os
import platform
import sys
import time
import textwrap
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
#: ``manifest["code_hash_kind"]`` of a key computed by ``code_hash`` (absent: the old byte hash).
CODE_HASH_KIND = "python-ast-v1"


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


def _source_of(item: Any) -> tuple[str, str, bool]:
    """(label, source text, is Python) of a code item: a path, a module, a function or a class."""
    if isinstance(item, str) and not item.endswith(".py") and "/" not in item and "." in item:
        return _source_of(_import_label(item))       # a function or class recorded as "module.qualname"
    if isinstance(item, (str, Path)):
        path = Path(item)
        path = path if path.is_absolute() else REPO_ROOT / path
        if not path.is_file():
            raise ValueError(f"code file {item!s} does not exist (paths are relative to the repo root)")
        label = path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else str(path)
        return label, path.read_text(encoding="utf-8"), path.suffix == ".py"
    if isinstance(item, ModuleType):
        return _source_of(Path(inspect.getfile(item)))
    if isinstance(item, (FunctionType, type)):
        return f"{item.__module__}.{item.__qualname__}", inspect.getsource(item), True
    raise TypeError(
        f"code items must be file paths, modules, functions or classes, got {type(item).__name__}"
    )


def _import_label(label: str) -> Any:
    """The function or class a manifest names as ``"package.module.Qualified.name"``."""
    import importlib

    parts = label.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            break
        return obj
    raise ValueError(f"code item {label!r} names no importable function or class")


def normalised_source(text: str, label: str = "<source>") -> str:
    """The syntax tree of Python ``text`` as a string, without comments and docstrings.

    Two sources that differ only in comments, docstrings, bare string statements,
    blank lines or line breaks give the same string; any other edit gives a different one.
    """
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError as err:
        raise ValueError(f"{label} is not valid Python ({err}); the code key parses it") from None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        kept = [stmt for stmt in body
                if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                        and isinstance(stmt.value.value, str))]
        node.body = kept or [ast.Pass()]
    return ast.dump(tree, annotate_fields=True, include_attributes=False)


def code_hash(code: Iterable[Any], config: dict[str, Any]) -> str:
    """SHA-256 over what every item of ``code`` does and the JSON of ``config``.

    A Python item (module, function, class, ``.py`` path) counts through
    ``normalised_source``: comment and docstring edits keep the hash, code edits change
    it. Any other file counts byte for byte. Any change of ``config`` changes the hash.
    """
    digest = hashlib.sha256()
    for label, text, is_python in sorted(_source_of(item) for item in code):
        if is_python:
            text = normalised_source(text, label)
        digest.update(label.encode() + b"\0" + text.encode() + b"\0")
    digest.update(json.dumps(config, sort_keys=True).encode())
    return digest.hexdigest()


def file_bytes_hash(code: Iterable[Any], config: dict[str, Any]) -> str:
    """The old code key: SHA-256 over the full text of every item and the config.

    Kept only to check manifests written before ``CODE_HASH_KIND`` (any edit, even a
    comment, changes it).
    """
    digest = hashlib.sha256()
    for label, text, _ in sorted(_source_of(item) for item in code):
        digest.update(label.encode() + b"\0" + text.encode() + b"\0")
    digest.update(json.dumps(config, sort_keys=True).encode())
    return digest.hexdigest()


def _recorded_key(manifest: dict[str, Any], code: list, config: dict[str, Any]) -> str:
    """The current key of ``code``/``config``, computed the way ``manifest``'s key was."""
    kind = manifest.get("code_hash_kind")
    if kind is None:
        return file_bytes_hash(code, config)
    if kind != CODE_HASH_KIND:
        raise CorruptCacheError(
            f"cache/{manifest.get('name', '?')} has code_hash_kind {kind!r}; this helpers.cache "
            f"knows {CODE_HASH_KIND!r} only (update the helpers package)"
        )
    return code_hash(code, config)


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
        "code": [label for label, _, _ in sorted(_source_of(item) for item in code)],
        "code_hash": code_hash(code, config),
        "code_hash_kind": CODE_HASH_KIND,
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
    current = _recorded_key(manifest, list(code), config)
    if current != manifest.get("code_hash"):
        raise StaleCacheError(
            f"cache/{name} was produced by different code or config than the current one "
            f"(code hash {manifest.get('code_hash', '?')[:12]} recorded, {current[:12]} now; "
            f"code: {', '.join(manifest.get('code', []))}). The cached results no longer match "
            f"the code shown. Regenerate it: {hint}"
            + ("" if manifest.get("code_hash_kind") else
               f" (This manifest predates the syntax-tree key, so even a comment edit makes it "
               f"stale: if only comments or docstrings changed, restore the files, run "
               f"`python -m helpers.cache rekey {name}`, then redo the edit.)")
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


def rekey(name: str, *, regenerate: str | None = None, cache_dir: Path | None = None) -> dict[str, Any]:
    """Move entry ``name`` from the old byte key to ``CODE_HASH_KIND``; returns the new manifest.

    Refuses unless the entry is intact and its old key still matches the files its
    manifest lists, i.e. unless the current code is byte for byte the code that produced
    it. The old key is kept in the manifest as ``code_hash_file_bytes``. ``regenerate``,
    if given, replaces the command that error messages quote.
    """
    manifest = read_manifest(name, cache_dir)
    if manifest.get("code_hash_kind"):
        raise ValueError(f"cache/{name} already has a {manifest['code_hash_kind']} key; nothing to do")
    code = manifest.get("code", [])
    for label in code:
        if not (REPO_ROOT / label).is_file():
            raise ValueError(f"cache/{name} lists {label!r}, not a file of the repository: rekey needs paths")
    verify_cache(name, code=code, config=manifest["config"], cache_dir=cache_dir)  # old key, files intact
    manifest["code_hash_file_bytes"] = manifest["code_hash"]
    manifest["code_hash"] = code_hash(code, manifest["config"])
    manifest["code_hash_kind"] = CODE_HASH_KIND
    if regenerate:
        manifest["regenerate"] = regenerate
    path = Path(cache_dir or CACHE_DIR) / name / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def narrow_key(name: str, code: Iterable[Any], *, cache_dir: Path | None = None) -> dict[str, Any]:
    """Re-record entry ``name``'s key over ``code``, a narrower list of what produced it; returns the manifest.

    For an entry keyed on whole modules of which it uses a few functions: afterwards, editing the
    rest of those modules no longer makes it stale. Refuses unless the entry is fresh under its
    recorded key (the code is still the code that produced it) and every new item lives in a file
    the old key covered.
    """
    manifest = read_manifest(name, cache_dir)
    verify_cache(name, code=manifest["code"], config=manifest["config"], cache_dir=cache_dir)
    old_files = {_file_of(label) for label in manifest["code"]}
    code = list(code)
    outside = [label for label, _, _ in map(_source_of, code) if _file_of(label) not in old_files]
    if outside:
        raise ValueError(f"cache/{name}: {outside} lie outside the code its key covered ({sorted(old_files)})")
    manifest["code"] = sorted(_source_of(item)[0] for item in code)
    manifest["code_hash"] = code_hash(code, manifest["config"])
    path = Path(cache_dir or CACHE_DIR) / name / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _file_of(label: str) -> str:
    """The repository file that holds a code item's source, from its manifest label."""
    if label.endswith(".py") or "/" in label:
        return label
    return Path(inspect.getfile(_import_label(label))).resolve().relative_to(REPO_ROOT).as_posix()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.cache", description="Check or re-key cache entries.")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="verify entries against the code their manifests list")
    check.add_argument("names", nargs="*", help="entry names (default: every entry in cache/)")
    move = sub.add_parser("rekey", help="move an entry from the old byte key to the syntax-tree key")
    move.add_argument("name")
    move.add_argument("--regenerate", help="the command that regenerates the entry, quoted in errors")
    args = parser.parse_args(argv)
    if args.command == "rekey":
        manifest = rekey(args.name, regenerate=args.regenerate)
        print(f"cache/{args.name}: code_hash {manifest['code_hash_file_bytes'][:12]} (file bytes) -> "
              f"{manifest['code_hash'][:12]} ({CODE_HASH_KIND})")
        return 0
    names = args.names or sorted(p.parent.name for p in CACHE_DIR.glob(f"*/{MANIFEST_FILE}"))
    for entry in names:
        manifest = read_manifest(entry)
        verify_cache(entry, code=manifest["code"], config=manifest["config"])
        print(f"cache/{entry}: intact and fresh ({manifest.get('code_hash_kind', 'file bytes')} key)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
