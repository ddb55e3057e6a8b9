"""helpers.seq2seq_eval: greedy decoding against a brute-force oracle, the scores, the head's inputs."""

import pytest
import torch

from helpers import seq2seq as s2s
from helpers import seq2seq_eval as ev


@pytest.fixture(params=[None, "dot", "additive"])
def model(request):
    torch.manual_seed(0)
    return s2s.Seq2Seq(5, d_embed=4, d_hidden=6, attention=request.param).eval()


def _oracle_greedy(model, src, steps):
    """Greedy decoding by brute force: rerun the teacher-forced pass on the prefix decoded so far
    (padded with BOS; causality makes the padding irrelevant) and take the argmax at the next position."""
    out = torch.zeros(src.shape[0], steps, dtype=torch.long)
    with torch.no_grad():
        for t in range(steps):
            logits, _ = model(src, out)  # position t sees only out[:, :t]
            out[:, t] = logits[:, t].argmax(-1)
    return out


def test_greedy_decoding_matches_the_teacher_forced_pass_on_its_own_outputs(model):
    src = s2s.random_tokens(7, 6, 5, torch.Generator().manual_seed(1))
    for steps in (6, 3, 9):
        assert torch.equal(ev.greedy_decode(model, src, steps), _oracle_greedy(model, src, steps))
    assert ev.greedy_decode(model, src).shape == (7, 6), "default: as many steps as source tokens"
    assert not model.training


def test_greedy_decoding_restores_training_mode():
    torch.manual_seed(0)
    net = s2s.Seq2Seq(5, 4, 6).train()
    ev.greedy_decode(net, s2s.random_tokens(2, 3, 5))
    assert net.training


def test_scores_count_tokens_and_whole_sequences(model):
    src = s2s.random_tokens(40, 5, 5, torch.Generator().manual_seed(2))
    greedy = ev.greedy_decode(model, src)
    # the model's own greedy output is, by construction, reproduced perfectly both ways
    perfect = ev.decoding_accuracy(model, src, greedy)
    assert perfect == {"forced_tokens": 1.0, "forced_sequences": 1.0, "greedy_tokens": 1.0, "greedy_sequences": 1.0}
    tgt = src.clone()
    scores = ev.decoding_accuracy(model, src, tgt)
    assert scores["greedy_tokens"] == pytest.approx((greedy == tgt).float().mean().item())
    assert scores["greedy_sequences"] == pytest.approx((greedy == tgt).all(1).float().mean().item())
    assert scores["forced_tokens"] == pytest.approx(s2s.position_accuracy(model, src, tgt).mean().item())
    # a sequence is right free-running exactly when every teacher-forced prediction along it is right
    assert scores["forced_sequences"] == scores["greedy_sequences"]


def test_head_inputs_give_back_the_forward_logits(model):
    src = s2s.random_tokens(4, 5, 5, torch.Generator().manual_seed(3))
    tgt = src.flip(1)
    s, context = ev.head_inputs(model, src, tgt)
    assert s.shape == context.shape == (4, 5, 6)
    logits, _ = model(src, tgt)
    assert torch.allclose(model.head(torch.cat([s, context], -1)), logits, atol=1e-6)
    if model.attention is None:
        assert torch.equal(context[:, 0], context[:, -1]), "the fixed context is the same at every step"


@pytest.mark.parametrize("call, message", [
    (lambda m: ev.greedy_decode("not a model", torch.ones(2, 3, dtype=torch.long)), "model must be a Seq2Seq"),
    (lambda m: ev.greedy_decode(m, torch.ones(2, 3)), "src must be a LongTensor"),
    (lambda m: ev.greedy_decode(m, torch.full((2, 3), 9)), "src tokens must lie in"),
    (lambda m: ev.greedy_decode(m, torch.ones(2, 3, dtype=torch.long), steps=0), "steps must be >= 1"),
    (lambda m: ev.decoding_accuracy(m, torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3)), "tgt must be a LongTensor"),
    (lambda m: ev.head_inputs(m, torch.ones(2, 3, dtype=torch.long), torch.ones(3, dtype=torch.long)), "tgt must be"),
])
def test_bad_arguments_are_refused_by_name(model, call, message):
    with pytest.raises(ValueError, match=message):
        call(model)
