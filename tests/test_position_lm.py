"""helpers.position_lm: §14.53's train-short, test-long experiment on helpers.gpt models."""

from dataclasses import asdict

import pytest
import torch

from helpers import position_lm
from helpers.gpt import GPT

SMALL = {**position_lm.HEAVY_RUN, "model": {"n_layers": 1, "n_heads": 2, "d_model": 16}, "T_train": 8,
         "T_eval": 16, "steps": 4, "batch": 2, "warmup_steps": 2, "eval_windows": 5}


def test_schemes_differ_only_in_positions():
    configs = {s: asdict(position_lm.model_config(s, 65)) for s in position_lm.HEAVY_RUN["schemes"]}
    for s, cfg in configs.items():
        assert cfg["positions"] == s and cfg["block_size"] == position_lm.HEAVY_RUN["T_train"]
        assert {k: v for k, v in cfg.items() if k != "positions"} == \
            {k: v for k, v in configs["rope"].items() if k != "positions"}


def test_learning_rate_warms_up_then_decays_to_its_floor():
    run = position_lm.HEAVY_RUN
    lrs = [position_lm.lr_at(step) for step in range(run["steps"] + 1)]
    assert lrs[0] == pytest.approx(run["lr"] / run["warmup_steps"], rel=1e-2)
    assert max(lrs) == pytest.approx(run["lr"], rel=1e-2)
    assert lrs[-1] == pytest.approx(run["lr"] * run["min_lr_ratio"])
    peak = lrs.index(max(lrs))
    assert all(a >= b for a, b in zip(lrs[peak:], lrs[peak + 1:])), "monotone decay after the warm-up"


def test_eval_windows_are_fixed_and_targets_are_the_next_characters():
    data = torch.arange(1000)
    x1, y1 = position_lm.eval_windows(data, SMALL)
    x2, _ = position_lm.eval_windows(data, SMALL)
    assert x1.shape == (5, 16) and torch.equal(x1, x2)
    assert torch.equal(y1, x1 + 1)


def test_one_seed_gives_every_scheme_the_same_batches_and_training_lowers_the_loss():
    torch.manual_seed(0)
    data = torch.randint(5, (500,))
    losses = {}
    for s in ("rope", "alibi"):
        torch.manual_seed(0)
        losses[s] = position_lm.train_steps(GPT(position_lm.model_config(s, 5, SMALL)), data, seed=3, config=SMALL)
        assert len(losses[s]) == SMALL["steps"]
    # at step 0 both see the same batch with (nearly) uniform logits: losses agree closely
    assert losses["rope"][0] == pytest.approx(losses["alibi"][0], abs=0.05)


def test_loss_by_position_matches_the_models_own_loss():
    torch.manual_seed(0)
    model = GPT(position_lm.model_config("rope", 7, SMALL)).eval()
    x, y = torch.randint(7, (6, 16)), torch.randint(7, (6, 16))
    curve = position_lm.loss_by_position(model, x, y, batch=4)
    assert curve.shape == (16,)
    with torch.no_grad():
        assert curve.mean().item() == pytest.approx(model(x, y)[1].item(), rel=1e-5)


def test_model_from_tensors_round_trips_and_names_what_is_stored():
    torch.manual_seed(0)
    model = GPT(position_lm.model_config("rope", 7, SMALL)).eval()
    tensors = {f"rope/1.{k}": v for k, v in model.state_dict().items()}
    back = position_lm.model_from_tensors(tensors, "rope", 1, 7, SMALL)
    x = torch.randint(7, (2, 16))
    with torch.no_grad():
        assert torch.equal(back(x)[0], model(x)[0])
    with pytest.raises(ValueError, match="no weights for 'alibi' seed 1"):
        position_lm.model_from_tensors(tensors, "alibi", 1, 7, SMALL)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"step must be an integer from 0 to config\['steps'\]"):
        position_lm.lr_at(-1)
    with pytest.raises(ValueError, match="step must be an integer"):
        position_lm.lr_at(position_lm.HEAVY_RUN["steps"] + 1)  # the cosine would climb again
    x = torch.zeros(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        position_lm.loss_by_position(None, x, x, batch=0)
    with pytest.raises(ValueError, match=r"x and y must be non-empty windows of one shape \(n, T\), got \(2, 5\) and \(2, 4\)"):
        position_lm.loss_by_position(None, x, x[:, :4])
