"""Can the code still produce what the caches hold? One short run of every heavy cache, retrained.

``helpers.reproduce`` retrains seed 0 of a cheap run of each entry (§14.48, §14.53, §14.59's two models,
§14.63's Transformer; about three minutes on two cores) and compares it with the cache. The tolerance is
the entry's own seed range for that run: a rerun that moved further than changing the seed does would
mean the cached comparison is not what the code computes. Each rerun's cached and new figures are
written to the test's output, and ``cache/reproduction.json`` keeps the ones the book shows.
"""

from __future__ import annotations

import pytest
import torch

from helpers import position_lm, reproduce


@pytest.fixture(scope="module")
def reruns():
    return reproduce.rerun_all(jobs=2, log=lambda line: None)


def test_every_heavy_entry_has_a_rerun():
    from helpers import cache

    assert set(reproduce.RERUNS) == {p.parent.name for p in cache.CACHE_DIR.glob("*/manifest.json")}


@pytest.mark.full
def test_each_rerun_lands_within_its_entrys_seed_range(reruns, capsys):
    with capsys.disabled():   # both figures in the test's output, pass or fail
        print("".join(f"\nrerun: {r.line()}" for r in reruns))
    assert len(reruns) == 6
    for r in reruns:
        assert r.seed_range > 0, r.line()
        assert r.within_seed_range, f"{r.line()}: the rerun moved further than a change of seed"


def test_two_runs_of_one_seed_on_one_machine_are_bit_identical():
    """What the text promises for a rerun on the same machine, on a short §14.53 run (30 steps)."""
    config = {**position_lm.HEAVY_RUN, "steps": 30, "eval_windows": 16}
    first, second = position_lm.one_run("rope", 0, config), position_lm.one_run("rope", 0, config)
    assert first["per_position"] == second["per_position"]
    assert all(torch.equal(first["state"][k], v) for k, v in second["state"].items())
    other = position_lm.one_run("rope", 1, config)
    assert other["per_position"] != first["per_position"]   # the comparison can fail: another seed differs


def test_the_recorded_figures_are_a_rerun_of_the_current_cache():
    """cache/reproduction.json, which the book shows, holds one rerun per run of ``helpers.reproduce`` and the
    cached value it was compared with is the cached value today (a retrained entry needs a new record)."""
    record = reproduce.read_record()
    runs = {(r["entry"], r["run"]): r for r in record["reruns"]}
    assert len(runs) == 6
    assert all(abs(r["rerun"] - r["cached"]) <= r["seed_range"] for r in runs.values())
    gpt = runs[("charlm", "gpt_77s_seed0")]
    from helpers import charlm

    cached = {r["name"]: r["curve"][-1]["val_loss"] for r in charlm.load().results["runs"]}
    assert gpt["cached"] == cached["gpt_77s_seed0"] and runs[("charlm", "lstm_77s_seed0")]["cached"] == \
        cached["lstm_77s_seed0"]


def test_an_unknown_entry_is_named():
    with pytest.raises(ValueError, match=r"entries must name cache entries with reruns.*'nope'"):
        reproduce.rerun_all(entries=["nope"])
