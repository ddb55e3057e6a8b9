"""helpers.seq2seq: attention scores against brute force and torch kernels, tasks, model, training."""

import math

import pytest
import torch

from helpers import seq2seq as s2s


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


# --------------------------------------------------------------------------- tasks


def test_copy_and_reversal_targets(gen):
    src, tgt = s2s.copy_task(50, 7, 5, gen)
    assert src.shape == tgt.shape == (50, 7) and src.dtype == torch.long
    assert torch.equal(src, tgt) and src.data_ptr() != tgt.data_ptr()
    assert src.min() >= 1 and src.max() <= 5, "data tokens are 1..vocab_size; 0 is BOS"
    src, tgt = s2s.reversal_task(50, 7, 5, gen)
    for b in range(50):
        assert tgt[b].tolist() == src[b].tolist()[::-1]


def test_tokens_are_uniform_and_seeded():
    a = s2s.random_tokens(20000, 3, 4, torch.Generator().manual_seed(1))
    b = s2s.random_tokens(20000, 3, 4, torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    freq = torch.bincount(a.flatten(), minlength=5)[1:].float() / a.numel()
    assert torch.allclose(freq, torch.full((4,), 0.25), atol=0.01)


def test_make_task_dispatches_and_rejects_bad_arguments(gen):
    src, tgt = s2s.make_task("reversal", 3, 4, 6, gen)
    assert torch.equal(tgt, src.flip(1))
    with pytest.raises(ValueError, match="task must be one of"):
        s2s.make_task("sort", 3, 4, 6)
    with pytest.raises(ValueError, match="length must be a positive integer"):
        s2s.copy_task(3, 0, 6)
    with pytest.raises(ValueError, match="vocab_size must be a positive integer"):
        s2s.reversal_task(3, 4, 2.5)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        s2s.copy_task(True, 4, 6)


# --------------------------------------------------------------------------- attention


def test_additive_scores_match_a_brute_force_loop():
    torch.manual_seed(0)
    B, Tq, Tk, dq, dk, da = 2, 3, 5, 4, 6, 7
    q, k = torch.randn(B, Tq, dq), torch.randn(B, Tk, dk)
    W_q, W_k, v = torch.randn(da, dq), torch.randn(da, dk), torch.randn(da)
    got = s2s.additive_scores(q, k, W_q, W_k, v)
    want = torch.empty(B, Tq, Tk)
    for b in range(B):
        for i in range(Tq):
            for j in range(Tk):
                want[b, i, j] = v @ torch.tanh(W_q @ q[b, i] + W_k @ k[b, j])
    torch.testing.assert_close(got, want)
    # 2-D queries give (B, T_k)
    torch.testing.assert_close(s2s.additive_scores(q[:, 0], k, W_q, W_k, v), want[:, 0])


def test_additive_weights_are_a_softmax_of_the_brute_force_scores():
    torch.manual_seed(1)
    att = s2s.Attention("additive", 4, 6, d_attn=5)
    q, k = torch.randn(3, 2, 4), torch.randn(3, 8, 6)
    context, weights = att(q, k)
    for b in range(3):
        for i in range(2):
            e = torch.stack([att.v @ torch.tanh(att.W_q @ q[b, i] + att.W_k @ k[b, j]) for j in range(8)])
            alpha = torch.exp(e) / torch.exp(e).sum()
            torch.testing.assert_close(weights[b, i], alpha)
            torch.testing.assert_close(context[b, i], (alpha[:, None] * k[b]).sum(0))


def test_dot_scores_equal_bmm_and_weights_sum_to_one():
    torch.manual_seed(2)
    q, k = torch.randn(4, 3, 8), torch.randn(4, 9, 8)
    torch.testing.assert_close(s2s.dot_scores(q, k), torch.bmm(q, k.transpose(1, 2)))
    torch.testing.assert_close(s2s.dot_scores(q, k, scale=True), torch.bmm(q, k.transpose(1, 2)) / math.sqrt(8))
    torch.testing.assert_close(s2s.dot_scores(q[:, 1], k), torch.bmm(k, q[:, 1, :, None]).squeeze(-1))
    context, weights = s2s.attend(s2s.dot_scores(q, k), k)
    assert weights.shape == (4, 3, 9) and context.shape == (4, 3, 8)
    assert (weights >= 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 3))
    torch.testing.assert_close(context, torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)), -1), k))


def test_attend_limits_uniform_and_one_hot():
    values = torch.randn(2, 5, 3)
    context, weights = s2s.attend(torch.zeros(2, 5), values)
    torch.testing.assert_close(context, values.mean(1))
    scores = torch.zeros(2, 5)
    scores[:, 3] = 1e4
    context, _ = s2s.attend(scores, values)
    torch.testing.assert_close(context, values[:, 3])


def test_dot_attention_has_no_parameters_and_additive_has_the_textbook_count():
    assert sum(p.numel() for p in s2s.Attention("dot", 8, 8).parameters()) == 0
    assert sum(p.numel() for p in s2s.Attention("additive", 4, 6, d_attn=5).parameters()) == 5 * 4 + 5 * 6 + 5


def test_attention_rejects_bad_arguments():
    with pytest.raises(ValueError, match="kind must be one of"):
        s2s.Attention("multiplicative", 4, 4)
    with pytest.raises(ValueError, match="d_query == d_key"):
        s2s.Attention("dot", 4, 6)
    with pytest.raises(ValueError, match="same width|one width"):
        s2s.dot_scores(torch.randn(2, 3, 4), torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match="keys must have shape"):
        s2s.dot_scores(torch.randn(2, 4), torch.randn(2, 4))
    with pytest.raises(ValueError, match="batch size"):
        s2s.dot_scores(torch.randn(2, 4), torch.randn(3, 5, 4))
    with pytest.raises(ValueError, match="queries must have shape"):
        s2s.dot_scores(torch.randn(4), torch.randn(1, 5, 4))
    with pytest.raises(ValueError, match="W_k must have shape"):
        s2s.additive_scores(torch.randn(2, 4), torch.randn(2, 5, 6), torch.randn(3, 4), torch.randn(3, 5), torch.randn(3))
    with pytest.raises(ValueError, match="v must have shape"):
        s2s.additive_scores(torch.randn(2, 4), torch.randn(2, 5, 6), torch.randn(3, 4), torch.randn(3, 6), torch.randn(2))
    with pytest.raises(ValueError, match="do not match values"):
        s2s.attend(torch.randn(2, 4), torch.randn(2, 5, 3))


# --------------------------------------------------------------------------- model and training


@pytest.mark.parametrize("attention", [None, "dot", "additive"])
def test_model_shapes_and_weights(attention, gen):
    net = s2s.Seq2Seq(6, d_embed=5, d_hidden=7, attention=attention)
    src, tgt = s2s.copy_task(3, 4, 6, gen)
    logits, weights = net(src, torch.cat([tgt, tgt[:, :2]], 1))  # T_out = 6 != T_in = 4
    assert logits.shape == (3, 6, 7)
    if attention is None:
        assert weights is None
        with pytest.raises(ValueError, match="no attention"):
            s2s.attention_weights(net, src, tgt)
    else:
        assert weights.shape == (3, 6, 4)
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 6))


def test_dot_attention_model_has_exactly_the_parameters_of_the_fixed_context_model():
    count = lambda m: sum(p.numel() for p in m.parameters())
    assert count(s2s.Seq2Seq(8, 16, 32, attention="dot")) == count(s2s.Seq2Seq(8, 16, 32, attention=None))


def test_teacher_forcing_is_causal(gen):
    """Logits at step t depend on tgt[:, :t] only, never on tgt[:, t:]."""
    torch.manual_seed(0)
    net = s2s.Seq2Seq(6, 5, 7, attention="additive")
    src, tgt = s2s.copy_task(2, 5, 6, gen)
    changed = tgt.clone()
    changed[:, 3] = changed[:, 3] % 6 + 1
    a, _ = net(src, tgt)
    b, _ = net(src, changed)
    torch.testing.assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4], b[:, 4])


def test_model_rejects_bad_input(gen):
    with pytest.raises(ValueError, match="attention must be None or one of"):
        s2s.Seq2Seq(6, attention="general")
    with pytest.raises(ValueError, match="d_hidden must be a positive integer"):
        s2s.Seq2Seq(6, d_hidden=0)
    net = s2s.Seq2Seq(6)
    src, tgt = s2s.copy_task(2, 4, 6, gen)
    with pytest.raises(ValueError, match="tokens must lie in 0..6"):
        net(src + 5, tgt)
    with pytest.raises(ValueError, match="tgt must be a LongTensor"):
        net(src, tgt.float())
    with pytest.raises(ValueError, match="share the batch size"):
        net(src, tgt[:1])


def test_training_learns_a_short_copy_and_is_reproducible(gen):
    def run():
        torch.manual_seed(3)
        net = s2s.Seq2Seq(4, 8, 16, attention="dot")
        return net, s2s.train_seq2seq(net, "copy", 3, steps=120, batch_size=32, lr=2e-2, seed=5)

    net, losses = run()
    _, again = run()
    assert losses == again
    assert len(losses) == 120 and losses[-1] < 0.3 * losses[0]
    acc = s2s.position_accuracy(net, *s2s.copy_task(500, 3, 4, gen))
    assert acc.shape == (3,) and acc.min() > 0.9


def test_position_accuracy_brute_force(gen):
    torch.manual_seed(0)
    net = s2s.Seq2Seq(5, 4, 6)
    src, tgt = s2s.copy_task(40, 4, 5, gen)
    logits, _ = net(src, tgt)
    want = [sum(int(logits[b, t].argmax() == tgt[b, t]) for b in range(40)) / 40 for t in range(4)]
    torch.testing.assert_close(s2s.position_accuracy(net, src, tgt), torch.tensor(want))


def test_training_rejects_bad_arguments():
    net = s2s.Seq2Seq(4)
    with pytest.raises(ValueError, match="task must be one of"):
        s2s.train_seq2seq(net, "sorting", 3)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        s2s.train_seq2seq(net, "copy", 3, steps=0)
    with pytest.raises(ValueError, match="lr must be positive"):
        s2s.train_seq2seq(net, "copy", 3, lr=0)
    with pytest.raises(ValueError, match="model must be a Seq2Seq"):
        s2s.train_seq2seq(torch.nn.GRU(2, 2), "copy", 3)


# --------------------------------------------------------------------------- learning curves


def test_callback_sees_every_step_in_order():
    torch.manual_seed(0)
    seen = []
    s2s.train_seq2seq(s2s.Seq2Seq(4, 4, 8), "copy", 3, steps=7, batch_size=8,
                      callback=lambda step, net: seen.append((step, isinstance(net, s2s.Seq2Seq))))
    assert seen == [(k, True) for k in range(1, 8)]


def test_learning_curve_scores_the_model_as_it_was_after_each_checkpoint(gen):
    src, tgt = s2s.copy_task(200, 4, 5, gen)
    torch.manual_seed(1)
    net = s2s.Seq2Seq(5, 4, 8)
    curve = s2s.learning_curve(net, "copy", 4, [20, 5], src, tgt, batch_size=16, seed=2)
    assert curve["steps"] == [5, 20] and len(curve["accuracy"]) == 2 and len(curve["positions"]) == 4
    # the oracle: a fresh copy trained separately for exactly 5 and 20 steps on the same batches
    for k, steps in enumerate([5, 20]):
        torch.manual_seed(1)
        again = s2s.Seq2Seq(5, 4, 8)
        losses = s2s.train_seq2seq(again, "copy", 4, steps=steps, batch_size=16, seed=2)
        acc = s2s.position_accuracy(again, src, tgt)
        assert curve["accuracy"][k] == pytest.approx(acc.mean().item(), abs=1e-6)
    assert curve["positions"] == pytest.approx(acc.tolist(), abs=1e-6)
    assert curve["loss_final"] == pytest.approx(sum(losses[-50:]) / len(losses[-50:]), rel=1e-6)


def test_learning_curve_rejects_bad_arguments(gen):
    net = s2s.Seq2Seq(5, 4, 8)
    src, tgt = s2s.copy_task(10, 4, 5, gen)
    with pytest.raises(ValueError, match="checkpoints must be positive"):
        s2s.learning_curve(net, "copy", 4, [0, 5], src, tgt)
    with pytest.raises(ValueError, match=r"shape \(N, length=3\)"):
        s2s.learning_curve(net, "copy", 3, [5], src, tgt)
