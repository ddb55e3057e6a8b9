"""The vendored data: checksums enforced, shapes as the competition and corpus define them."""

import shutil

import numpy as np
import pytest

from helpers import data


def test_every_vendored_file_matches_its_checksum():
    for name in data.CHECKSUMS:
        assert data.verified_path(name).is_file()


def test_altered_file_is_refused_with_the_fix(tmp_path):
    shutil.copy(data.DATA_DIR / "tinyshakespeare.txt", tmp_path / "tinyshakespeare.txt")
    with open(tmp_path / "tinyshakespeare.txt", "r+b") as fh:
        fh.seek(1000)
        fh.write(b"#")
    with pytest.raises(data.DataIntegrityError, match="git checkout -- data/tinyshakespeare.txt"):
        data.verified_path("tinyshakespeare.txt", data_dir=tmp_path)


def test_missing_file_and_unknown_name_are_clear_errors(tmp_path):
    with pytest.raises(data.DataIntegrityError, match="is missing"):
        data.verified_path("m4-hourly-test.csv", data_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown data file"):
        data.verified_path("shakespeare.txt")


def test_tiny_shakespeare_is_the_char_rnn_corpus():
    text = data.load_tiny_shakespeare()
    assert len(text) == 1_115_394
    assert len(set(text)) == 65
    assert text.startswith("First Citizen:")


def test_m4_hourly_train_and_test_shapes():
    train = data.load_m4_hourly("train")
    test = data.load_m4_hourly("test")
    lengths = train.groupby("unique_id").size()
    assert len(lengths) == 414
    assert set(lengths.unique()) == {700, 960}
    assert (test.groupby("unique_id").size() == data.M4_HOURLY_HORIZON).all()
    assert not train["y"].isna().any() and not test["y"].isna().any()
    # the test window continues each history: first test ds = history length + 1
    first_test = test.groupby("unique_id")["ds"].min()
    assert (first_test == lengths.loc[first_test.index] + 1).all()
    # series come in numeric order H1, H2, ..., H414
    assert list(train["unique_id"].drop_duplicates()[:3]) == ["H1", "H2", "H3"]
    assert np.isclose(train["y"].iloc[0], 605.0)


def test_m4_split_name_is_checked():
    with pytest.raises(ValueError, match="split must be 'train' or 'test'"):
        data.load_m4_hourly("validation")
