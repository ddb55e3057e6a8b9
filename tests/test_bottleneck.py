"""helpers.bottleneck: §14.48's cached learning-curve experiment."""

import pytest
import torch

from helpers import bottleneck as bn
from helpers import cache
from helpers.seq2seq import position_accuracy

TINY = {**bn.CONFIG, "lengths": [3, 5], "t_probe": 5, "seeds": [0, 1, 2], "checkpoints": [2, 4], "attention_checkpoints": [2],
        "n_test": 30, "d_hidden": 6, "d_hidden_wide": 12, "d_embed": 4, "batch_size": 8}


def test_runs_cover_every_length_task_and_seed():
    runs = bn.runs()
    cfg = bn.CONFIG
    fixed = {(r["length"], r["seed"]) for r in runs if r["model"] == "fixed" and r["task"] == "copy"}
    assert fixed == {(T, s) for T in cfg["lengths"] for s in cfg["seeds"]}
    dot = {(r["length"], r["seed"]) for r in runs if r["model"] == "dot" and r["task"] == "copy"}
    assert dot == fixed
    for model, task in (("fixed", "reversal"), ("wide", "copy")):
        assert {(r["length"], r["seed"]) for r in runs if (r["model"], r["task"]) == (model, task)} \
            == {(cfg["t_probe"], s) for s in cfg["seeds"]}
    assert len(cfg["seeds"]) >= 3, "comparisons rest on at least three seeds"
    # every run has its own initialisation and data seed, and its own name in the cache
    assert len({bn.run_seed(r) for r in runs}) == len(runs)
    assert len({bn.key(r) for r in runs}) == len(runs)


def test_checkpoints_double_so_a_plateau_can_be_read_off_the_last_doubling():
    for steps in (bn.CONFIG["checkpoints"], bn.CONFIG["attention_checkpoints"]):
        assert all(b == 2 * a for a, b in zip(steps, steps[1:]))
    assert bn.CONFIG["attention_checkpoints"] == bn.CONFIG["checkpoints"][:len(bn.CONFIG["attention_checkpoints"])]


def test_parallel_seeds_give_the_same_numbers_as_one_process():
    one, w1, _ = bn.experiment(TINY, jobs=1)
    two, w2, _ = bn.experiment(TINY, jobs=2)
    strip = lambda res: [{k: v for k, v in r.items() if k != "seconds"} for r in res["runs"]]
    assert strip(one) == strip(two)
    assert w1.keys() == w2.keys() and all(torch.equal(w1[k], w2[k]) for k in w1)


def test_cached_weights_rebuild_the_models_that_were_scored(tmp_path):
    results, tensors, _ = bn.experiment(TINY)
    cache.save_cache("tiny", code=bn.cache_code(), config=TINY, tensors=tensors, results=results,
                     wall_time_s=0.0, regenerate="test", cache_dir=tmp_path)
    cached = cache.load_cache("tiny", code=bn.cache_code(), config=TINY, cache_dir=tmp_path)
    assert len(cached.results["runs"]) == len(bn.runs(TINY))
    for run in cached.results["runs"]:
        net = bn.trained_model(cached, run, TINY)
        acc = position_accuracy(net, *bn.test_set(run["task"], run["length"], TINY))
        assert acc.tolist() == pytest.approx(run["positions"], abs=1e-6)
        assert run["accuracy"][-1] == pytest.approx(acc.mean().item(), abs=1e-6)


def test_test_sets_are_fixed_and_differ_between_tasks():
    a, b = bn.test_set("copy", 5, TINY), bn.test_set("copy", 5, TINY)
    assert torch.equal(a[0], b[0])
    rev = bn.test_set("reversal", 5, TINY)
    assert torch.equal(rev[1], rev[0].flip(1))
    assert not torch.equal(rev[0], a[0])


def test_an_unknown_task_is_named():
    with pytest.raises(ValueError, match=r"task must be one of \('copy', 'reversal'\), got 'sort'"):
        bn.test_set("sort", 5)
