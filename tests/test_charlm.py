"""helpers.charlm (§14.59's models, evaluation, training loop and protocol): oracles, not the notebook's claims."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

from helpers import charlm
from helpers.gpt import GPT, GPTConfig

V = 11


@pytest.fixture
def data():
    return torch.randint(V, (203,), generator=torch.Generator().manual_seed(0))  # not a multiple of any context


def tiny(kind, context=8):
    torch.manual_seed(1)
    if kind == "gpt":
        return GPT(GPTConfig(vocab_size=V, block_size=context, n_layers=1, n_heads=2, d_model=8))
    return charlm.CharLSTM(charlm.LSTMConfig(vocab_size=V, context=context, n_layer=1, d_model=8))


@pytest.mark.parametrize("kind", ["gpt", "lstm"])
def test_evaluate_scores_every_character_once_in_consecutive_windows(kind, data):
    # brute force: cut the split into windows of the context, the last one shorter, and score each
    # character from the ones before it in its window
    model = tiny(kind).eval()
    T, total, n = model.context, 0.0, len(data) - 1
    with torch.no_grad():
        for s in range(0, n, T):
            x, y = data[s:min(s + T, n)], data[s + 1:min(s + T, n) + 1]
            total += F.cross_entropy(model(x[None])[0][0], y, reduction="sum").item()
    model.train()
    assert charlm.evaluate(model, data, batch=3) == pytest.approx(total / n, rel=1e-6)
    assert model.training, "evaluate leaves a model in training mode as it found it"
    assert charlm.evaluate(model, data[:8 * 5 + 1], batch=2) > 0    # a split that is a whole number of windows


@pytest.mark.parametrize("kind", ["gpt", "lstm"])
def test_models_are_causal_and_return_logits_and_loss(kind):
    model = tiny(kind).eval()
    x = torch.randint(V, (2, 8), generator=torch.Generator().manual_seed(2))
    changed = x.clone()
    changed[:, 5] = (changed[:, 5] + 1) % V
    with torch.no_grad():
        (a, none), (b, _) = model(x), model(changed)
        _, loss = model(x, changed)
    assert a.shape == (2, 8, V) and none is None
    assert torch.allclose(a[:, :5], b[:, :5], atol=1e-6), "a later character changed an earlier prediction"
    assert not torch.allclose(a[:, 5:], b[:, 5:])
    assert loss.item() == pytest.approx(F.cross_entropy(a.flatten(0, 1), changed.flatten()).item(), rel=1e-6)


def test_random_batch_targets_are_the_next_characters(data):
    x, y = charlm.random_batch(data, 16, 8, torch.Generator().manual_seed(3))
    assert x.shape == y.shape == (16, 8)
    assert torch.equal(x[:, 1:], y[:, :-1])
    for row_x, row_y in zip(x, y):  # every window is a slice of the data
        assert any(torch.equal(data[i:i + 8], row_x) and torch.equal(data[i + 1:i + 9], row_y)
                   for i in range(len(data) - 8))
    with pytest.raises(ValueError, match="too short for context 203"):
        charlm.random_batch(data, 1, 203, torch.Generator())


def test_learning_rate_warms_up_then_follows_a_cosine_to_its_floor_at_the_last_step():
    cfg = charlm.TrainConfig(steps=101, lr=1e-3, warmup_steps=10, min_lr_ratio=0.1)
    assert charlm.lr_at(cfg, 0) == pytest.approx(1e-4)           # first of 10 warm-up steps
    assert charlm.lr_at(cfg, 9) == pytest.approx(1e-3 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 9 / 100))))
    assert charlm.lr_at(cfg, 50) == pytest.approx(1e-3 * (0.1 + 0.9 * 0.5))   # half-way: mid-cosine
    assert charlm.lr_at(cfg, 100) == pytest.approx(1e-4)         # the floor, at the last step
    assert charlm.lr_at(cfg, 500) == pytest.approx(1e-4)         # and not below it afterwards


def test_eval_steps_are_evenly_spaced_and_end_at_the_last_step():
    assert charlm.eval_steps(charlm.TrainConfig(steps=800, n_evals=8)) == list(range(100, 801, 100))
    assert charlm.eval_steps(charlm.TrainConfig(steps=3, n_evals=8)) == [1, 2, 3]
    assert charlm.eval_steps(charlm.TrainConfig(steps=57, n_evals=1)) == [57]


def test_configs_name_the_bad_argument():
    with pytest.raises(ValueError, match="steps must be >= 1"):
        charlm.TrainConfig(steps=0)
    with pytest.raises(ValueError, match="lr must be a finite number > 0"):
        charlm.TrainConfig(steps=5, lr=-1.0)
    with pytest.raises(ValueError, match="context must be >= 1"):
        charlm.LSTMConfig(context=0)
    with pytest.raises(ValueError, match="kind must be one of"):
        charlm.build_model("rnn", V, 0)
    with pytest.raises(ValueError, match="n_tune must be under half"):
        charlm.tuning_split(torch.arange(100), 60)


def test_tuning_split_never_reaches_the_validation_split():
    train, val, _ = charlm.load_corpus()
    fit, tune = charlm.tuning_split(train, len(val))
    assert torch.equal(torch.cat([fit, tune]), train) and len(tune) == len(val)


def test_budget_steps_converts_seconds_at_the_measured_rate_and_refuses_an_unmeasured_batch():
    rates = {"steps_per_s": {"gpt": {"16": 9.5}}}
    assert charlm.budget_steps("gpt", 16, 520.0, rates) == 4940
    with pytest.raises(ValueError, match="no throughput measured for gpt at batch 32"):
        charlm.budget_steps("gpt", 32, 520.0, rates)


def test_training_is_reproducible_and_scores_each_split_the_same_way(data):
    cfg = charlm.TrainConfig(steps=6, batch=4, warmup_steps=2, n_evals=3, seed=5)
    runs = []
    for _ in range(2):
        model = tiny("gpt")
        runs.append(charlm.train(model, data, cfg, {"train": data[:80], "val": data[80:]}))
    a, b = runs
    assert [r["step"] for r in a["curve"]] == [2, 4, 6]
    assert [r["chars"] for r in a["curve"]] == [2 * 4 * 8, 4 * 4 * 8, 6 * 4 * 8]
    assert [r["val_loss"] for r in a["curve"]] == [r["val_loss"] for r in b["curve"]]
    assert a["curve"][-1]["train_loss"] == pytest.approx(charlm.evaluate(model, data[:80]))


def test_greedy_generation_is_the_argmax_of_the_model():
    # temperature 0 is greedy: each character is the argmax given everything before it (the LSTM
    # carries its state; feeding the whole text again must give the same choice)
    from helpers.tokenization import CharTokenizer

    tok = CharTokenizer("abcdefghijk")
    model = tiny("lstm", context=4)
    out = charlm.generate(model, tok, "abc", 6, temperature=0.0)
    ids = tok.encode("abc")
    with torch.no_grad():
        for ch in out:
            nxt = int(model.eval()(torch.tensor([ids]))[0][0, -1].argmax())
            assert tok.decode([nxt]) == ch
            ids.append(nxt)
    with pytest.raises(ValueError, match="prompt must contain"):
        charlm.generate(model, tok, "", 3)


def test_protocol_tunes_on_the_tuning_slice_and_keeps_the_longest_first_seed(monkeypatch):
    # a miniature of the heavy run: every budget a handful of steps
    rates = {"steps_per_s": {"gpt": {"12": 0.1, "16": 0.1, "32": 0.05}, "lstm": {"16": 0.1, "32": 0.05}}}
    config = {**charlm.HEAVY_RUN, "budgets_s": [20.0, 40.0], "tune_budget_s": 20.0, "seeds": [0, 1], "jobs": 1,
              "curve_points": 2, "sample": {"prompt": "A", "chars": 5, "temperature": 1.0},
              "search": {**charlm.HEAVY_RUN["search"], "extend": 0}}
    monkeypatch.setattr(charlm, "evaluate", lambda model, data, batch=64: float(len(data)) + model.context)
    tensors, results, metrics = charlm.heavy_run(config, rates, log=lambda *a: None)
    tune_sizes = {r["curve"][-1]["tune_loss"] for r in results["tuning"]}
    assert len(results["tuning"]) == 2 * 3 + 2
    assert all(r["config"]["steps"] == 2 for r in results["tuning"] if r["config"]["batch"] == 16)
    assert tune_sizes <= {config["n_tune"] + 64.0}          # scored on the tuning slice only
    names = {r["name"] for r in results["runs"]}
    assert names == {f"{k}_{b:g}s_seed{s}" for k in ("gpt", "lstm") for b in (20, 40) for s in (0, 1)} | \
        {"nanogpt_20s_seed0", "nanogpt_40s_seed0"}
    assert {k.split(".")[0] for k in tensors} == {"gpt_40s_seed0", "lstm_40s_seed0"}
    assert set(metrics) == names


def test_learning_rate_search_steps_past_an_edge_of_the_grid(monkeypatch):
    # the jobs are not trained: each tuning "run" scores (log2 lr - log2 best)^2, so the search's choices
    # can be followed exactly. The LSTM's best, 0.03, lies beyond the grid's top: two extensions (0.016,
    # 0.032), then the limit; the Transformer's, 0.004, is inside it: no extension.
    best = {"gpt": 0.004, "lstm": 0.03}

    def fake_jobs(jobs, n_jobs):
        out = []
        for job in jobs:
            cfg = job["cfg"]
            loss = (math.log2(cfg.lr) - math.log2(best[job["kind"]])) ** 2 + (cfg.batch == 32) * 0.01
            curve = [{"step": cfg.steps, "chars": 0, "seconds": 0.0,
                      **{f"{s}_loss": loss for s in (["tune"] if job["split"] == "tune" else ["train", "val"])}}]
            out.append({"result": {"name": job["name"], "kind": job["kind"], "samples": [], "parameters": 1,
                                   "curve": curve, "steps": cfg.steps, "train_seconds": 0.0,
                                   "config": {"batch": cfg.batch, "lr": cfg.lr}}, "weights": {}})
        return out

    monkeypatch.setattr(charlm, "_run_jobs", fake_jobs)
    _, results, _ = charlm.heavy_run(charlm.HEAVY_RUN, log=lambda *a: None)
    tried = {k: sorted(r["config"]["lr"] for r in results["tuning"] if r["kind"] == k and r["config"]["batch"] == 16)
             for k in ("gpt", "lstm")}
    assert tried["gpt"] == [0.002, 0.004, 0.008]
    assert tried["lstm"] == pytest.approx([0.002, 0.004, 0.008, 0.016, 0.032])
    assert results["chosen"] == {"gpt": {"batch": 16, "lr": 0.004}, "lstm": {"batch": 16, "lr": pytest.approx(0.032)}}


@pytest.mark.parametrize("seconds", [-5, 0, float("nan"), float("inf"), "520", True])
def test_budget_steps_refuses_a_budget_that_is_not_a_positive_number(seconds):
    """Before, -5 and 0 seconds silently gave one step."""
    rates = {"steps_per_s": {"gpt": {"16": 9.5}}}
    with pytest.raises(ValueError, match=rf"seconds must be a finite number > 0, got {re.escape(repr(seconds))}"):
        charlm.budget_steps("gpt", 16, seconds, rates)


def test_budget_steps_accepts_the_smallest_budgets():
    rates = {"steps_per_s": {"gpt": {"16": 9.5}}}
    assert charlm.budget_steps("gpt", 16, 1e-9, rates) == 1 and charlm.budget_steps("gpt", 16, 1, rates) == 10


@pytest.mark.parametrize("batch, message", [
    (0, r"batch must be >= 1, got 0"), (-1, r"batch must be >= 1, got -1"),
    (16.0, r"batch must be an integer, got 16.0 \(float\)"), ("16", r"batch must be an integer, got '16' \(str\)"),
    (True, r"batch must be an integer, got True \(bool\)"),
])
def test_budget_steps_refuses_a_batch_that_is_not_a_positive_integer(batch, message):
    """Before: 'no throughput measured for gpt at batch 0' (as if it could be measured), and '16' silently worked."""
    rates = {"steps_per_s": {"gpt": {"16": 9.5}}}
    with pytest.raises(ValueError, match=message):
        charlm.budget_steps("gpt", batch, 520.0, rates)


def test_budget_steps_names_an_unknown_kind_and_accepts_a_batch_of_one():
    rates = {"steps_per_s": {"gpt": {"1": 9.5}}}
    with pytest.raises(ValueError, match=r"kind must be one of \['gpt'\], got 'rnn'"):
        charlm.budget_steps("rnn", 1, 520.0, rates)
    assert charlm.budget_steps("gpt", 1, 520.0, rates) == 4940


@pytest.mark.parametrize("batch, context, message", [
    (0, 8, r"batch must be >= 1, got 0"), (-1, 8, r"batch must be >= 1, got -1"),
    (2, 0, r"context must be >= 1, got 0"), (2, 2.5, r"context must be an integer, got 2.5"),
])
def test_random_batch_refuses_empty_or_negative_sizes(batch, context, message):
    """Before: batch 0 and context 0 silently returned empty tensors, -1 and 2.5 torch's own errors."""
    with pytest.raises(ValueError, match=message):
        charlm.random_batch(torch.arange(100) % 5, batch, context, torch.Generator().manual_seed(0))


def test_random_batch_accepts_one_window_of_one_character():
    x, y = charlm.random_batch(torch.arange(2), 1, 1, torch.Generator().manual_seed(0))
    assert x.tolist() == [[0]] and y.tolist() == [[1]]


def test_evaluate_refuses_a_zero_batch_or_a_split_without_a_prediction():
    """Before: 'range() arg 3 must not be zero', and ZeroDivisionError for a one-character split."""
    model = charlm.CharLSTM(charlm.LSTMConfig(vocab_size=5, context=8, d_model=8, n_layer=1))
    data = torch.arange(100) % 5
    with pytest.raises(ValueError, match=r"batch must be >= 1, got 0"):
        charlm.evaluate(model, data, 0)
    with pytest.raises(ValueError, match=r"data must hold at least 2 characters .*got 1"):
        charlm.evaluate(model, data[:1])
    assert math.isfinite(charlm.evaluate(model, data[:2], 1))


@pytest.mark.parametrize("kwargs, message", [
    (dict(grad_clip=0.0), r"grad_clip must be a finite number > 0, got 0.0"),
    (dict(grad_clip=-1.0), r"grad_clip must be a finite number > 0, got -1.0"),
    (dict(weight_decay=-0.1), r"weight_decay must be a finite number >= 0, got -0.1"),
    (dict(lr=float("inf")), r"lr must be a finite number > 0, got inf"),
])
def test_train_config_refuses_settings_that_train_nothing_or_diverge(kwargs, message):
    """Before: all four were accepted silently (torch does not check a param group's weight decay)."""
    with pytest.raises(ValueError, match=message):
        charlm.TrainConfig(steps=5, **kwargs)


def test_train_config_accepts_no_weight_decay_and_a_tiny_clip():
    cfg = charlm.TrainConfig(steps=5, weight_decay=0, grad_clip=1e-12)
    assert cfg.weight_decay == 0 and cfg.grad_clip == 1e-12


def test_kept_run_names_an_unknown_kind():
    """Before: kept_run('rnn') returned the name of a run that does not exist."""
    with pytest.raises(ValueError, match=r"kind must be one of \['gpt', 'lstm'\], got 'rnn'"):
        charlm.kept_run("rnn")
    assert charlm.kept_run("lstm") == "lstm_520s_seed0"
