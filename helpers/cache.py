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
statements, is written in a canonical form (``canonical_dump``) and hashed. Editing a
comment or a docstring keeps a cache valid; changing a statement, a default, a constant
or a name makes it stale. The canonical form does not depend on the Python version, so a
cache written under Python 3.11 is fresh under Colab's 3.13 (``ast.dump``, which the older
``python-ast-v1`` key hashed, differs between the two). ``python -m helpers.cache rekey NAME``
moves an entry with an older key to the current one after checking that the old key still
matches; ``python -m helpers.cache widen NAME FILE --since COMMIT`` adds a module the key
left out, after checking that it has not changed since the entry was committed;
``python -m helpers.cache rekey-guards NAME --since COMMIT`` moves an entry's key over argument checks
added since a commit under which it was fresh, after checking that nothing else changed
(``rekey_over_guards``). All three keep their proof in the manifest's ``key_history``.
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
#: ``manifest["code_hash_kind"]`` of a key computed by ``code_hash``: the canonical syntax tree, the same
#: under every Python from 3.11 on. Older kinds, accepted only by ``rekey``: "python-ast-v1" (``ast.dump``,
#: which differs between Python versions) and no kind at all (the files' bytes).
CODE_HASH_KIND = "python-ast-v2"
LEGACY_KINDS = (None, "python-ast-v1")


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
        # resolved, as REPO_ROOT is: a checkout reached through a symlink must give the same labels
        path = (path if path.is_absolute() else REPO_ROOT / path).resolve()
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


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` without docstrings and other bare string statements (a body left empty gets ``pass``)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        kept = [stmt for stmt in body
                if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                        and isinstance(stmt.value.value, str))]
        node.body = kept or [ast.Pass()]
    return tree


def _parse(text: str, label: str) -> ast.AST:
    try:
        return ast.parse(textwrap.dedent(text))
    except SyntaxError as err:
        raise ValueError(f"{label} is not valid Python ({err}); the code key parses it") from None


def canonical_dump(node: Any) -> str:
    """A syntax tree as text that is the same under every Python version that parses it to the same tree.

    ``ast.dump`` is not: Python 3.13 leaves out empty fields (``kwonlyargs=[]``, ``type_params=[]``) that
    3.11 and 3.12 print, and 3.12 added ``type_params``, which 3.11 lacks. Here every node is written as
    its class name and its fields sorted by name, a field whose value is ``None`` or an empty list is
    left out, and a constant is written as its ``repr``. A field a later Python adds with an empty
    default therefore changes nothing; a renamed node or field would, and ``tests/test_cache.py`` pins
    the key of a fixed snippet so that such a change is seen on the interpreter that brings it.
    """
    if isinstance(node, ast.AST):
        fields = []
        for field in sorted(node._fields):
            value = getattr(node, field, None)
            if value is None or (isinstance(value, list) and not value):
                continue
            fields.append(f"{field}={canonical_dump(value)}")
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(canonical_dump(item) for item in node) + "]"
    return repr(node)


def normalised_source(text: str, label: str = "<source>") -> str:
    """The syntax tree of Python ``text`` as canonical text (``canonical_dump``), without comments and docstrings.

    Two sources that differ only in comments, docstrings, bare string statements,
    blank lines or line breaks give the same string; any other edit gives a different one.
    The string is the same under Python 3.11, 3.12 and 3.13.
    """
    return canonical_dump(_strip_docstrings(_parse(text, label)))


def _normalised_source_v1(text: str, label: str = "<source>") -> str:
    """The ``python-ast-v1`` form: ``ast.dump`` of the same tree, which depends on the interpreter.

    Kept only so that ``rekey`` can prove an entry keyed with it is still fresh before moving it to
    ``CODE_HASH_KIND``; it matches a recorded v1 key only under the Python that wrote it (3.11 here).
    """
    return ast.dump(_strip_docstrings(_parse(text, label)), annotate_fields=True, include_attributes=False)


#: helpers modules a key never needs to follow into: they hold paths, glue and this cache, no computation.
NOT_FOLLOWED = ("helpers/book.py", "helpers/cache.py")


def _imported_modules(file: str) -> list[str]:
    """The ``helpers`` modules that the repository file ``file`` imports, as repository paths."""
    tree = _parse((REPO_ROOT / file).read_text(encoding="utf-8"), file)
    package = Path(file).parent.as_posix().replace("/", ".")
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom):   # `from .x import y` (level 1) or `from helpers.x import y`
            base = ".".join(filter(None, [package if node.level else "", node.module]))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            path = name.replace(".", "/") + ".py"
            if name.split(".")[0] == "helpers" and (REPO_ROOT / path).is_file():
                found.append(path)
    return sorted(set(found) - {file})


def with_imports(code: Iterable[Any]) -> list[Any]:
    """``code`` and every ``helpers`` module it imports, directly or through others (``NOT_FOLLOWED`` aside).

    What a cached model runs is more than the modules its writer names: a GPT's blocks run
    ``helpers/attention.py`` although the writer names only ``helpers/gpt.py``. A module of which
    ``code`` names single functions (say ``helpers.gpt.Block``) counts as named: its other functions
    stay outside the key, but the modules it imports are followed.
    """
    code = list(code)
    labels = [_source_of(item)[0] for item in code]
    named = {_file_of(label) for label in labels}
    todo, seen = sorted(named), set(named)
    extra = []
    while todo:
        for dep in _imported_modules(todo.pop()):
            if dep not in seen and dep not in NOT_FOLLOWED:
                seen.add(dep)
                todo.append(dep)
                extra.append(dep)
    return code + sorted(extra)


def code_hash(code: Iterable[Any], config: dict[str, Any], kind: str | None = CODE_HASH_KIND) -> str:
    """SHA-256 over what every item of ``code`` does and the JSON of ``config``.

    A Python item (module, function, class, ``.py`` path) counts through
    ``normalised_source``: comment and docstring edits keep the hash, code edits change
    it. Any other file counts byte for byte. Any change of ``config`` changes the hash.
    ``kind`` selects an older key (``LEGACY_KINDS``), which only ``rekey`` needs.
    """
    if kind not in (CODE_HASH_KIND, *LEGACY_KINDS):
        raise ValueError(f"unknown code key kind {kind!r}; this helpers.cache knows {CODE_HASH_KIND!r} "
                         f"and, to re-key old entries, {LEGACY_KINDS!r}")
    normalise = {CODE_HASH_KIND: normalised_source, "python-ast-v1": _normalised_source_v1}.get(kind)
    return _digest([(label, normalise(text, label) if is_python and normalise is not None else text)
                    for label, text, is_python in sorted(_source_of(item) for item in code)], config)


def _digest(keyed: list[tuple[str, str]], config: dict[str, Any]) -> str:
    """The key itself: SHA-256 over each (label, normalised text) in the order given, then ``config``'s JSON."""
    digest = hashlib.sha256()
    for label, text in keyed:
        digest.update(label.encode() + b"\0" + text.encode() + b"\0")
    digest.update(json.dumps(config, sort_keys=True).encode())
    return digest.hexdigest()


def file_bytes_hash(code: Iterable[Any], config: dict[str, Any]) -> str:
    """The oldest code key (no ``code_hash_kind``): SHA-256 over the full text of every item and the config."""
    return code_hash(code, config, kind=None)


def _recorded_key(manifest: dict[str, Any], code: list, config: dict[str, Any]) -> str:
    """The current key of ``code``/``config``, computed the way ``manifest``'s key was."""
    kind = manifest.get("code_hash_kind")
    if kind != CODE_HASH_KIND and kind not in LEGACY_KINDS:
        raise CorruptCacheError(
            f"cache/{manifest.get('name', '?')} has code_hash_kind {kind!r}; this helpers.cache "
            f"knows {CODE_HASH_KIND!r} only (update the helpers package)"
        )
    return code_hash(code, config, kind=kind)


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
    code = with_imports(code)
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


def _cost(manifest: dict[str, Any]) -> str:
    """How long the recorded run took, and on what: "about 108 min on 2 CPU cores"."""
    seconds = float(manifest.get("wall_time_s") or 0)
    hardware = manifest.get("hardware", {})
    where = (f"a {hardware['cuda']} GPU" if hardware.get("cuda")
             else f"{hardware.get('cpu_count', '?')} CPU cores")
    took = f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{max(1, round(seconds / 60))} min"
    return f"about {took} on {where}"


def _stale_message(name: str, manifest: dict[str, Any], current: str) -> str:
    """What a stale entry means, for a reader (Colab, or a build with HEAVY_EVAL=False) and for a developer."""
    from .book import in_colab, repository_url

    kind = manifest.get("code_hash_kind")
    what = (f"cache/{name} holds results that the code now in this copy of the book did not produce: the code "
            f"or settings behind them changed after they were saved (key {manifest.get('code_hash', '?')[:12]} "
            f"recorded, {current[:12]} now; the key covers {', '.join(manifest.get('code', []))}). "
            f"The cached results are not used, since they would not match the code shown.")
    if kind in LEGACY_KINDS:
        what += (f" This entry still has an old key ({kind or 'file bytes'}) that depends on "
                 f"{'the Python version' if kind else 'comments too'}: if the code itself is unchanged, "
                 f"`python -m helpers.cache rekey {name}` under the Python that wrote it "
                 f"({manifest.get('versions', {}).get('python', '?')}) moves it to {CODE_HASH_KIND}.")
    reader = (f"Reading the book, you did nothing wrong: this is a fault of the book's copy you opened. "
              f"Please report it at {repository_url()}/issues, quoting this message. To see the section "
              f"anyway, set HEAVY_EVAL = True where the notebook defines it and run the notebook again: it "
              f"retrains everything and rewrites the cache (the recorded run took {_cost(manifest)}).")
    if in_colab():
        return f"{what}\n\n{reader}"
    return f"{what}\n\n{reader}\n\nDeveloping the book: regenerate it with {_regenerate_hint(manifest, name)}"


def _verify_files(name: str, manifest: dict[str, Any], cache_dir: Path | None) -> None:
    """Raise ``CorruptCacheError`` unless every file of entry ``name`` matches its SHA-256 in ``manifest``."""
    folder = Path(cache_dir or CACHE_DIR) / name
    hint = _regenerate_hint(manifest, name)
    for fname, expected in manifest.get("files", {}).items():
        if not (folder / fname).is_file():
            raise CorruptCacheError(f"cache/{name}/{fname} is missing: {hint}")
        if sha256_of(folder / fname) != expected:
            raise CorruptCacheError(
                f"cache/{name}/{fname} does not match the SHA-256 in its manifest (corrupt or "
                f"edited by hand). Restore it with `git checkout -- cache/{name}`, or regenerate: {hint}"
            )


def verify_cache(
    name: str, *, code: Iterable[Any], config: dict[str, Any], cache_dir: Path | None = None,
    follow_imports: bool = True,
) -> dict[str, Any]:
    """Check cache entry ``name`` without loading it; returns its manifest.

    Raises ``CorruptCacheError`` if a file's SHA-256 differs from the manifest's and
    ``StaleCacheError`` if ``code``/``config`` no longer hash to the recorded code hash.
    ``code`` is taken with the helpers modules it imports (``with_imports``), as ``save_cache``
    records it; ``follow_imports=False`` checks exactly the items given (for re-keying).
    """
    manifest = read_manifest(name, cache_dir)
    _verify_files(name, manifest, cache_dir)
    code = list(code)
    if follow_imports and manifest.get("code_hash_kind") == CODE_HASH_KIND:
        code = with_imports(code)
    current = _recorded_key(manifest, code, config)
    if current != manifest.get("code_hash"):
        raise StaleCacheError(_stale_message(name, manifest, current))
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


def _write_manifest(name: str, manifest: dict[str, Any], cache_dir: Path | None) -> None:
    path = Path(cache_dir or CACHE_DIR) / name / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _record_key_change(manifest: dict[str, Any], **change: Any) -> None:
    """Append to the manifest's ``key_history``: what a re-key changed and the proof that allowed it."""
    manifest.setdefault("key_history", []).append(
        {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "python": platform.python_version(), **change})


def rekey(name: str, *, regenerate: str | None = None, cache_dir: Path | None = None) -> dict[str, Any]:
    """Move entry ``name`` from an old key kind (``LEGACY_KINDS``) to ``CODE_HASH_KIND``; returns the new manifest.

    The proof: the entry is intact and its old key, recomputed from the current code, equals the
    recorded one, so the current code is the code that produced it (a ``python-ast-v1`` key can be
    recomputed only under the Python version that wrote it). The new key is then computed from the
    same sources. Both keys are kept in ``key_history``. ``regenerate``, if given, replaces the command
    that error messages quote.
    """
    manifest = read_manifest(name, cache_dir)
    old_kind = manifest.get("code_hash_kind")
    if old_kind == CODE_HASH_KIND:
        raise ValueError(f"cache/{name} already has a {CODE_HASH_KIND} key; nothing to do")
    code = manifest.get("code", [])
    if old_kind is None:
        for label in code:
            if not (REPO_ROOT / label).is_file():
                raise ValueError(f"cache/{name} lists {label!r}, not a file of the repository: rekey needs paths")
    verify_cache(name, code=code, config=manifest["config"], cache_dir=cache_dir)  # old key, files intact
    old_key = manifest["code_hash"]
    if old_kind is None:
        manifest["code_hash_file_bytes"] = old_key
    manifest["code_hash"] = code_hash(code, manifest["config"])
    manifest["code_hash_kind"] = CODE_HASH_KIND
    _record_key_change(manifest, change=f"key kind {old_kind or 'file bytes'} -> {CODE_HASH_KIND}",
                       old_key=old_key, new_key=manifest["code_hash"],
                       proof=f"the {old_kind or 'file bytes'} key recomputed from the current code equalled the recorded one")
    if regenerate:
        manifest["regenerate"] = regenerate
    _write_manifest(name, manifest, cache_dir)
    return manifest


def widen_key(name: str, extra: Iterable[Any], *, since: str, reproduced: str | None = None,
              cache_dir: Path | None = None) -> dict[str, Any]:
    """Add ``extra`` code items to entry ``name``'s key, with proof that they did not change; returns the manifest.

    For an entry whose key left out code that its result depends on (say, a module behind a model's
    blocks). ``since`` is the git commit that committed the entry. The proof: the entry is fresh under
    its recorded key, and each extra item's normalised source at ``since`` equals its source now, so
    the code that produced the entry already ran the extra items as they are. An item that did change
    is accepted only with ``reproduced``: the caller's statement that a retrain with the current code
    reproduced the cached values (recorded as the proof). Refused otherwise.
    """
    import subprocess

    manifest = read_manifest(name, cache_dir)
    verify_cache(name, code=manifest["code"], config=manifest["config"], cache_dir=cache_dir, follow_imports=False)
    added, changed = [], []
    for item in extra:
        label, text, _ = _source_of(item)
        if label in manifest["code"]:
            continue
        file = _file_of(label)
        if label != file:
            raise ValueError(f"cache/{name}: widen_key takes whole modules or files, not {label!r}")
        try:
            old_file = subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{since}:{file}"], check=True,
                                      capture_output=True, text=True).stdout
        except subprocess.CalledProcessError as err:
            raise ValueError(f"cache/{name}: cannot read {file} at commit {since!r}: {err.stderr.strip()}") from None
        if normalised_source(old_file, label) != normalised_source(text, label):
            if not reproduced:
                raise ValueError(f"cache/{name}: {label} changed since {since} (not only in comments or "
                                 f"docstrings); an entry's key can only be widened over unchanged code, or over "
                                 f"code shown to reproduce it: retrain it instead")
            changed.append(label)
        added.append(label)
    if not added:
        return manifest
    old_key = manifest["code_hash"]
    manifest["code"] = sorted([*manifest["code"], *added])
    manifest["code_hash"] = code_hash(manifest["code"], manifest["config"])
    unchanged = [a for a in added if a not in changed]
    proof = ["fresh under its recorded key"]
    if unchanged:
        proof.append(f"{', '.join(unchanged)} unchanged since commit {since}, which committed the entry "
                     f"(normalised sources equal)")
    if changed:
        proof.append(f"{', '.join(changed)} changed since {since}, and {reproduced}")
    _record_key_change(manifest, change=f"key widened over {', '.join(added)}", old_key=old_key,
                       new_key=manifest["code_hash"], proof="; ".join(proof))
    _write_manifest(name, manifest, cache_dir)
    return manifest


def narrow_key(name: str, code: Iterable[Any], *, cache_dir: Path | None = None) -> dict[str, Any]:
    """Re-record entry ``name``'s key over ``code``, a narrower list of what produced it; returns the manifest.

    For an entry keyed on whole modules of which it uses a few functions: afterwards, editing the
    rest of those modules no longer makes it stale. Refuses unless the entry is fresh under its
    recorded key (the code is still the code that produced it) and every new item lives in a file
    the old key covered.
    """
    manifest = read_manifest(name, cache_dir)
    verify_cache(name, code=manifest["code"], config=manifest["config"], cache_dir=cache_dir, follow_imports=False)
    old_files = {_file_of(label) for label in manifest["code"]}
    code = with_imports(code)
    outside = [label for label, _, _ in map(_source_of, code) if _file_of(label) not in old_files]
    if outside:
        raise ValueError(f"cache/{name}: {outside} lie outside the code its key covered ({sorted(old_files)})")
    manifest["code"] = sorted(_source_of(item)[0] for item in code)
    old_key = manifest["code_hash"]
    manifest["code_hash"] = code_hash(code, manifest["config"])
    _record_key_change(manifest, change="key narrowed", old_key=old_key, new_key=manifest["code_hash"],
                       proof="fresh under its recorded key; every new item lies in a file the old key covered")
    _write_manifest(name, manifest, cache_dir)
    return manifest


# ------------------------------------------------------------------ re-keying over argument checks added since a commit

#: The module whose functions a guard statement may call, and builtins a guard's condition may call: they read
#: their arguments and return or raise, nothing else.
CHECKS_FILE = REPO_ROOT / "helpers" / "checks.py"
READ_ONLY_BUILTINS = frozenset({"isinstance", "issubclass", "len", "min", "max", "abs", "all", "any", "type",
                                "callable", "bool", "int", "float", "str", "repr", "tuple", "list", "sorted",
                                "round"})
GUARD_ERRORS = frozenset({"ValueError", "TypeError"})
GUARD_RULE = ("removing from both versions only guard statements: `if` statements without `else` whose body is "
              "one `raise` of ValueError or TypeError, bare calls of read-only helpers.checks functions, imports "
              "of helpers.checks whose names the old code did not use, and new helpers.checks functions the old "
              "code did not name; every condition and argument read-only (no walrus, lambda, yield or await, "
              "calls only of read-only builtins)")


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    try:
        return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as err:
        raise ValueError(f"git {' '.join(args)} failed in {cwd}: {err.stderr.strip()}") from None


def _path_of(label: str) -> Path:
    """The file, as an absolute path, that holds the source of the code item ``label``."""
    path = Path(_file_of(label))
    return path if path.is_absolute() else REPO_ROOT / path


def _is_file_label(label: str) -> bool:
    return label.endswith(".py") or "/" in label


def _item_tree(label: str, file_text: str) -> ast.Module:
    """The syntax tree that ``code_hash`` hashes for ``label``, from the text of the file that holds it:
    the whole file, or, for a function or class named ``module.Qualified.name``, a module of that one node."""
    tree = _parse(file_text, label)
    if _is_file_label(label):
        return tree
    module = _file_of(label).removesuffix(".py").replace("/", ".")
    node: Any = tree
    for part in label.removeprefix(module + ".").split("."):
        found = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                 and n.name == part]
        if not found:
            raise ValueError(f"{label}: no function or class {part!r} in that version of {_file_of(label)}")
        node = found[-1]          # a later definition wins, as at import
    return ast.Module(body=[node], type_ignores=[])


def _bound_names(tree: ast.AST, skip: tuple = ()) -> set[str]:
    """Every name ``tree`` binds (assignments, arguments, definitions, imports, handlers), except by ``skip``."""
    bound = set()
    for node in ast.walk(tree):
        if node in skip:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and not any(node is s for s in skip):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def _checks_import(stmt: ast.stmt, file: Path) -> dict[str, str] | None:
    """{local name: ``"*module*"`` or a helpers.checks function} that ``stmt`` binds, if it imports helpers.checks only."""
    if not isinstance(stmt, ast.ImportFrom) or any(a.name == "*" for a in stmt.names):
        return None
    package = ("helpers" if stmt.level == 1 and file.resolve().parent == CHECKS_FILE.resolve().parent
               else None if stmt.level else "")
    if package is None:
        return None
    base = ".".join(filter(None, [package, stmt.module]))
    if base == "helpers.checks":
        return {a.asname or a.name: a.name for a in stmt.names}
    if base == "helpers" and all(a.name == "checks" for a in stmt.names):
        return {a.asname or a.name: "*module*" for a in stmt.names}
    return None


def _read_only(node: ast.AST, builtins: set[str]) -> bool:
    """Whether evaluating expression ``node`` only reads: no walrus, lambda, yield or await, and no call but of
    ``builtins``. (Attribute reads, indexing, iteration, comparison and arithmetic on the values are taken as
    reads; they are, on the lists, arrays, tensors and numbers that the helpers' arguments are.)"""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.NamedExpr, ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(sub, ast.Call) and not (isinstance(sub.func, ast.Name) and sub.func.id in builtins):
            return False
    return True


def _read_only_function(fn: ast.AST, builtins: set[str], errors: frozenset) -> bool:
    """A function whose body (docstring aside) is only guard ``if`` statements and one final read-only ``return``."""
    if not isinstance(fn, ast.FunctionDef):
        return False
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (not fn.decorator_list and bool(body)
            and isinstance(body[-1], ast.Return) and (body[-1].value is None or _read_only(body[-1].value, builtins))
            and all(_guard_if(s, builtins, errors) for s in body[:-1]))


def _guard_if(stmt: ast.stmt, builtins: set[str], errors: frozenset = GUARD_ERRORS) -> bool:
    """``if <read-only condition>: raise ValueError(...)`` (or TypeError), without ``else``."""
    if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1
            and isinstance(stmt.body[0], ast.Raise) and _read_only(stmt.test, builtins)):
        return False
    exc = stmt.body[0].exc
    exc = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(exc, ast.Name) and exc.id in errors


class _GuardContext:
    """What decides, in one version of one file, which statements are guards."""

    def __init__(self, file: Path, file_tree: ast.Module, checks_tree: ast.Module):
        imports = [(s, _checks_import(s, file)) for s in file_tree.body]
        self.imports = [s for s, names in imports if names]
        names = {k: v for _, n in imports if n for k, v in n.items()}
        other = _bound_names(file_tree, skip=tuple(self.imports))
        self.builtins = set(READ_ONLY_BUILTINS) - other
        self.errors = GUARD_ERRORS - other
        checks_bound = _bound_names(checks_tree)
        self.read_only_checks = {f.name for f in checks_tree.body if _read_only_function(
            f, set(READ_ONLY_BUILTINS) - checks_bound, GUARD_ERRORS - checks_bound)}
        self.imported = {k: v for k, v in names.items()}       # what the helpers.checks imports bind
        self.trusted = {k: v for k, v in names.items() if k not in other}   # ... and nothing else rebinds

    def guard_call(self, stmt: ast.stmt) -> bool:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        call, func = stmt.value, stmt.value.func
        if isinstance(func, ast.Name):
            target = self.trusted.get(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and self.trusted.get(func.value.id) == "*module*":
            target = func.attr
        else:
            return False
        return (target in self.read_only_checks
                and all(_read_only(a, self.builtins) for a in [*call.args, *(k.value for k in call.keywords)]))

    def is_guard(self, stmt: ast.stmt) -> bool:
        return _guard_if(stmt, self.builtins, self.errors) or self.guard_call(stmt)


def _without_guards(tree: ast.Module, ctx: _GuardContext, drop: tuple = ()) -> ast.Module:
    """``tree`` with every guard statement removed from every statement list (a body left empty gets ``pass``),
    and the module-level statements in ``drop`` (compared by their canonical form) removed too."""
    dropped = {canonical_dump(s) for s in drop}
    tree.body = [s for s in tree.body if canonical_dump(s) not in dropped]
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                kept = [s for s in stmts if not ctx.is_guard(s)]
                setattr(node, field, kept or ([ast.Pass()] if field == "body" else []))
    return tree


def _first_difference(old: list[ast.stmt], new: list[ast.stmt], prefix: str = "") -> str:
    """The first function, class or statement in which two statement lists differ, for a refusal message."""
    for i in range(max(len(old), len(new))):
        a, b = (old[i] if i < len(old) else None), (new[i] if i < len(new) else None)
        if a is not None and b is not None and canonical_dump(a) == canonical_dump(b):
            continue
        node = b if b is not None else a
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            same = isinstance(a, type(node)) and isinstance(b, type(node)) and a.name == b.name
            if same and isinstance(node, ast.ClassDef) and canonical_dump(a.body) != canonical_dump(b.body):
                inner = _first_difference(a.body, b.body, prefix=name + ".")
                if not inner.startswith("the statement"):
                    return inner
            return f"{'function' if not isinstance(node, ast.ClassDef) else 'class'} {name}"
        where = f"line {node.lineno} of the {'current' if b is not None else 'old'} version"
        text = ast.unparse(node).splitlines()[0]
        return f"the statement `{text[:60]}{'...' if len(text) > 60 else ''}` ({where})"
    return "nothing"


def rekey_over_guards(name: str, *, since: str, cache_dir: Path | None = None) -> dict[str, Any]:
    """Move entry ``name``'s key to the current code when all that changed since commit ``since`` is argument checks.

    For an entry made stale only by checks that raise on bad input: a run that did not raise computes the
    same numbers with or without them. The proof, all of it mechanical:

    1. the entry's files are intact and its recorded key equals the key of its code as it was at ``since``
       (read with ``git show``), so ``since`` holds the code that produced it;
    2. the current code still imports exactly the modules the key lists (``with_imports``), and every keyed
       item's syntax tree now equals its tree at ``since`` once only *guard statements* are removed from both:

       - an ``if`` with no ``else`` whose body is one ``raise`` of ``ValueError`` or ``TypeError`` (the
         message is only built when raising);
       - a bare call (its value unused) of a helpers.checks function that is read-only: its body is guard
         ``if`` statements and one final ``return`` of a read-only expression (``check_int``, ``check_choice``);
       - a module-level ``from .checks import ...`` / ``from . import checks`` whose names the old file did not use;
       - in helpers/checks.py, a new top-level function that no keyed file named at ``since``;

       where every condition, argument and returned value is *read-only*: no walrus, lambda, yield or await,
       and no call but of builtins that only read (``READ_ONLY_BUILTINS``; attribute reads, indexing,
       iteration and comparison on the arguments are taken as reads). A name rebound in the file (a local
       ``checks``, a shadowed ``ValueError`` or ``len``) is not trusted, so its statements are not guards;
    3. the new key, ``code_hash`` of the current code, is recorded with ``since`` (as a full commit) and this
       rule in ``key_history``.

    Anything else that differs is refused with the file and the first differing function. Returns the manifest.
    """
    manifest = read_manifest(name, cache_dir)
    if manifest.get("code_hash_kind") != CODE_HASH_KIND:
        raise ValueError(f"cache/{name} has a {manifest.get('code_hash_kind') or 'file bytes'} key: "
                         f"`python -m helpers.cache rekey {name}` first")
    _verify_files(name, manifest, cache_dir)
    code, config = manifest["code"], manifest["config"]
    if code_hash(code, config) == manifest["code_hash"]:
        return manifest                   # fresh already (say, re-keyed before): nothing to prove or record
    files = {label: _path_of(label) for label in code}
    commit = _git(files[code[0]].parent if code else REPO_ROOT, "rev-parse", "--verify", f"{since}^{{commit}}").strip()
    old_text, new_text = {}, {}
    for path in sorted(set(files.values())):
        try:
            old_text[path] = _git(path.parent, "show", f"{commit}:./{path.name}")
        except ValueError as err:
            raise ValueError(f"cache/{name}: cannot read {path} at commit {since!r}: {err}") from None
        new_text[path] = path.read_text(encoding="utf-8")

    # 1. the code at `since` is the code that produced the entry
    keyed_then = []
    for label in sorted(code):
        text = old_text[files[label]]
        keyed_then.append((label, canonical_dump(_strip_docstrings(_item_tree(label, text)))
                           if files[label].suffix == ".py" else text))
    if _digest(keyed_then, config) != manifest["code_hash"]:
        raise StaleCacheError(f"cache/{name}: its recorded key is not the key of its code at commit {since} "
                              f"({commit[:12]}), so that commit is not the code that produced it; give the "
                              f"commit that did (the one that committed the entry or a later one)")
    if sorted(_source_of(c)[0] for c in with_imports(code)) != sorted(code):
        raise ValueError(f"cache/{name}: the current code imports helpers modules its key does not list; "
                         f"widen the key (python -m helpers.cache widen) before re-keying over guards")

    # 2. only guard statements differ
    # helpers.checks as each version had it; when the key does not cover it, no call of it can count as a guard
    checks_file = next((p for p in files.values() if p.resolve() == CHECKS_FILE.resolve()), None)
    checks = {v: _strip_docstrings(_parse(t[checks_file], str(checks_file)) if checks_file else ast.Module(body=[]))
              for v, t in (("old", old_text), ("new", new_text))}
    used_then = {}                        # every name each keyed file used at `since`
    for path in set(files.values()):
        if path.suffix == ".py":
            used_then[path] = {node.id if isinstance(node, ast.Name) else node.attr
                               if isinstance(node, ast.Attribute) else getattr(node, "name", None)
                               for node in ast.walk(_parse(old_text[path], str(path)))}
    old_names = set().union(*used_then.values())
    old_checks_defs = {n.name for n in checks["old"].body if isinstance(n, ast.FunctionDef)}
    new_checks_fns = tuple(n for n in checks["new"].body if isinstance(n, ast.FunctionDef)
                           and n.name not in old_checks_defs and n.name not in old_names)
    for label in sorted(code):
        path = files[label]
        if path.suffix != ".py":
            if old_text[path] != new_text[path]:
                raise ValueError(f"cache/{name}: {label} changed since {since} and is not Python: retrain instead")
            continue
        trees, contexts = {}, {}
        for version, texts in (("old", old_text), ("new", new_text)):
            contexts[version] = _GuardContext(path, _parse(texts[path], label), checks[version])
        new_binds = set(contexts["new"].imported) - set(contexts["old"].imported)
        reused = sorted(new_binds & used_then[path])
        drop = {"old": tuple(contexts["old"].imports), "new": tuple(contexts["new"].imports)}
        if reused:                        # a new import of a name the old file used: not a pure guard import
            drop["new"] = tuple(s for s in drop["new"] if not set(_checks_import(s, path)) & set(reused))
        if path.resolve() == CHECKS_FILE.resolve():
            drop["new"] += new_checks_fns
        if not _is_file_label(label):
            drop = {"old": (), "new": ()}  # imports and new functions live in the file, outside this item
        for version, texts in (("old", old_text), ("new", new_text)):
            tree = _strip_docstrings(_item_tree(label, texts[path]))
            trees[version] = _without_guards(tree, contexts[version], drop[version])
        if canonical_dump(trees["old"]) != canonical_dump(trees["new"]):
            where = _first_difference(trees["old"].body, trees["new"].body)
            raise ValueError(f"cache/{name}: {label}: {where} differs from commit {since} by more than guard "
                             f"statements (argument checks that only raise); the entry cannot be re-keyed over "
                             f"it: retrain it instead")

    # 3. record the new key and the proof
    old_key = manifest["code_hash"]
    manifest["code_hash"] = code_hash(code, config)
    _record_key_change(manifest, change=f"key moved over guard statements added since commit {commit}",
                       old_key=old_key, new_key=manifest["code_hash"], since=commit,
                       proof=f"intact, and its recorded key equals the key of its code at commit {commit}; "
                             f"every keyed item's syntax tree now equals the one at that commit after {GUARD_RULE}")
    _write_manifest(name, manifest, cache_dir)
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
    move = sub.add_parser("rekey", help=f"move an entry from an old key kind to {CODE_HASH_KIND}")
    move.add_argument("name")
    move.add_argument("--regenerate", help="the command that regenerates the entry, quoted in errors")
    widen = sub.add_parser("widen", help="add unchanged modules to an entry's key")
    widen.add_argument("name")
    widen.add_argument("modules", nargs="+", help="repository paths, e.g. helpers/attention.py")
    widen.add_argument("--since", required=True, help="the git commit that committed the entry")
    guards = sub.add_parser("rekey-guards", help="move an entry's key over argument checks added since a commit")
    guards.add_argument("name")
    guards.add_argument("--since", required=True, help="a git commit under which the entry is fresh")
    args = parser.parse_args(argv)
    if args.command in ("rekey", "widen", "rekey-guards"):
        old = read_manifest(args.name)["code_hash"]
        manifest = (rekey(args.name, regenerate=args.regenerate) if args.command == "rekey"
                    else widen_key(args.name, args.modules, since=args.since) if args.command == "widen"
                    else rekey_over_guards(args.name, since=args.since))
        if manifest["code_hash"] == old and args.command != "rekey":
            print(f"cache/{args.name}: code_hash {old[:12]} is already the key of the current code; nothing to do")
            return 0
        print(f"cache/{args.name}: code_hash {old[:12]} -> {manifest['code_hash'][:12]} ({CODE_HASH_KIND}); "
              f"proof: {manifest.get('key_history', [{}])[-1].get('proof', 'nothing changed')}")
        return 0
    names = args.names or sorted(p.parent.name for p in CACHE_DIR.glob(f"*/{MANIFEST_FILE}"))
    for entry in names:
        manifest = read_manifest(entry)
        verify_cache(entry, code=manifest["code"], config=manifest["config"])
        print(f"cache/{entry}: intact and fresh ({manifest.get('code_hash_kind', 'file bytes')} key, "
              f"Python {platform.python_version()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
