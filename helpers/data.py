"""The book's data sets, vendored in ``data/`` and verified by SHA-256 every time they are loaded.

- tiny Shakespeare: ~40,000 lines of the plays, the corpus of char-rnn and nanoGPT.
- M4 Hourly: the 414 hourly series of the M4 forecasting competition (horizon 48).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from .book import repo_path

DATA_DIR = repo_path("data")

#: SHA-256 of every vendored file. A file that does not match is never used.
CHECKSUMS = {
    "tinyshakespeare.txt": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
    "m4-hourly-train.csv": "ea59b7783573c49077a835ab6465c7d66f1474783360f310988a9a737fbca62f",
    "m4-hourly-test.csv": "71a57fccb15e534d973626ada4fb87febf789e9317715b7cc6dd3b5f90db6f42",
}

#: M4 Hourly's forecast horizon and seasonal period, as the competition defines them.
M4_HOURLY_HORIZON = 48
M4_HOURLY_SEASONALITY = 24


class DataIntegrityError(RuntimeError):
    """A vendored data file is missing or its content is not what the book was written for."""


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified_path(name: str, data_dir: Path | None = None) -> Path:
    """Path of the vendored file ``name`` after checking its SHA-256.

    Raises ``ValueError`` for an unknown name and ``DataIntegrityError`` when the file
    is missing or altered.
    """
    if name not in CHECKSUMS:
        raise ValueError(f"unknown data file {name!r}; the book ships {sorted(CHECKSUMS)}")
    path = Path(data_dir or DATA_DIR) / name
    if not path.is_file():
        raise DataIntegrityError(
            f"{path} is missing. Restore it with `git checkout -- data/{name}` "
            "(or re-clone the repository)."
        )
    actual = sha256_of(path)
    if actual != CHECKSUMS[name]:
        raise DataIntegrityError(
            f"{path} has SHA-256 {actual}, expected {CHECKSUMS[name]}: the file is corrupt or was "
            f"edited. Restore it with `git checkout -- data/{name}`."
        )
    return path


def load_tiny_shakespeare() -> str:
    """The tiny Shakespeare corpus as one string (1,115,394 characters)."""
    return verified_path("tinyshakespeare.txt").read_text(encoding="utf-8")


def load_m4_hourly(split: str = "train") -> pd.DataFrame:
    """M4 Hourly in long format: columns ``unique_id`` (H1…H414), ``ds`` (1, 2, …) and ``y``.

    ``split="train"`` gives each series' history (700 or 960 hours); ``split="test"``
    gives the 48 hours that follow it, with ``ds`` continuing from the history.
    Rows are ordered by series number, then time.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    wide = pd.read_csv(verified_path(f"m4-hourly-{split}.csv"), index_col=0)
    long = wide.stack().dropna().rename("y").reset_index()  # drop the padding cells
    long.columns = ["unique_id", "col", "y"]
    long["ds"] = long["col"].str.lstrip("V").astype(int) - 1  # V2 is the first value
    if split == "test":
        lengths = load_m4_hourly("train").groupby("unique_id")["ds"].max()
        long["ds"] += long["unique_id"].map(lengths)
    long["order"] = long["unique_id"].str.lstrip("H").astype(int)
    long = long.sort_values(["order", "ds"]).reset_index(drop=True)
    return long[["unique_id", "ds", "y"]].astype({"y": np.float64})
