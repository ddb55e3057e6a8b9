"""helpers.charlm (§14.59's models, evaluation and training loop): oracles, not the notebook's claims."""

import math

import pytest
import torch
import torch.nn.functional as F

from helpers import charlm

V = 11


@pytest.fixture
def data():
    return torch.randint(V, (203,), generator=torch.Generator().manual_seed(0))  # not a multiple of any context


def tiny(kind, context=8):
    torch.manual_seed(1)
    if kind == "gpt":
        return charlm.CharGPT(charlm.GPTConfig(vocab_size=V, context=context, n_layer=1, n_head=2, d_model=8))
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
            total += F.cross_entropy(model(x[None])[0], y, reduction="sum").item()
    assert charlm.evaluate(model, data, batch=3) == pytest.approx(total / n, rel=1e-6)
    assert model.training, "evaluate leaves the model in training mode"


@pytest.mark.parametrize("kind", ["gpt", "lstm"])
def test_models_are_causal(kind):
    model = tiny(kind).eval()
    x = torch.randint(V, (2, 8), generator=torch.Generator().manual_seed(2))
    changed = x.clone()
    changed[:, 5] = (changed[:, 5] + 1) % V
    with torch.no_grad():
        a, b = model(x), model(changed)
    assert a.shape == (2, 8, V)
    assert torch.allclose(a[:, :5], b[:, :5], atol=1e-6), "a later character changed an earlier prediction"
    assert not torch.allclose(a[:, 5:], b[:, 5:])


def test_random_batch_targets_are_the_next_characters(data):
    x, y = charlm.random_batch(data, 16, 8, torch.Generator().manual_seed(3))
    assert x.shape == y.shape == (16, 8)
    assert torch.equal(x[:, 1:], y[:, :-1])
    for row_x, row_y in zip(x, y):  # every window is a slice of the data
        s = next(i for i in range(len(data) - 8) if torch.equal(data[i:i + 8], row_x) and torch.equal(data[i + 1:i + 9], row_y))
        assert s >= 0
    with pytest.raises(ValueError, match="too short for context 203"):
        charlm.random_batch(data, 1, 203, torch.Generator())


def test_learning_rate_warms_up_then_follows_a_cosine_to_its_floor():
    cfg = charlm.TrainConfig(seconds=100.0, lr=1e-3, warmup_steps=10, min_lr_ratio=0.1)
    assert charlm._lr_at(cfg, 0, 0.0) == pytest.approx(1e-4)          # first of 10 warm-up steps
    assert charlm._lr_at(cfg, 9, 0.0) == pytest.approx(1e-3)
    assert charlm._lr_at(cfg, 50, 50.0) == pytest.approx(1e-3 * (0.1 + 0.9 * 0.5))  # half-way: mid-cosine
    assert charlm._lr_at(cfg, 99, 100.0) == pytest.approx(1e-4)       # the floor, at the end of the budget
    assert charlm._lr_at(cfg, 99, 500.0) == pytest.approx(1e-4)       # and not below it afterwards
    steps = charlm.TrainConfig(lr=1e-3, warmup_steps=1, schedule="steps", decay_steps=200, min_lr_ratio=0.0)
    assert charlm._lr_at(steps, 100, 1e9) == pytest.approx(1e-3 * 0.5 * (1 + math.cos(math.pi / 2)))


def test_train_config_rejects_bad_schedules():
    with pytest.raises(ValueError, match="schedule must be 'time' or 'steps'"):
        charlm.TrainConfig(schedule="epochs")
    with pytest.raises(ValueError, match="needs decay_steps"):
        charlm.TrainConfig(schedule="steps")


def test_gpt_config_names_the_bad_argument():
    with pytest.raises(ValueError, match="context must be a positive integer"):
        charlm.GPTConfig(context=0)
    with pytest.raises(ValueError, match=r"d_model \(30\) must be divisible by n_head \(4\)"):
        charlm.GPTConfig(d_model=30, n_head=4)


def test_greedy_generation_is_the_argmax_of_the_model(data):
    # temperature 0 is greedy: each character is the argmax given the (truncated) context
    from helpers.tokenization import CharTokenizer

    tok = CharTokenizer("abcdefghijk")
    model = tiny("lstm", context=4)
    out = charlm.generate(model, tok, "abc", 6, temperature=0.0)
    ids = tok.encode("abc")
    with torch.no_grad():
        for ch in out:
            nxt = int(model.eval()(torch.tensor([ids[-4:]]))[0, -1].argmax())
            assert tok.decode([nxt]) == ch
            ids.append(nxt)
    with pytest.raises(ValueError, match="prompt must contain"):
        charlm.generate(model, tok, "", 3)
