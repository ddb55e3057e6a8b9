"""helpers.sampling: temperature, top-k, nucleus and greedy against closed forms, torch.topk and brute force."""

import itertools
import math

import numpy as np
import pytest
import torch

from helpers.sampling import filter_logits, sample_next

INF = float("inf")


def kept(filtered):
    """Set of kept indices of a (V,) filtered logit vector."""
    return set(torch.nonzero(torch.isfinite(filtered)).flatten().tolist())


def brute_force_nucleus(p, top_p):
    """The nucleus by enumerating every subset: among the smallest subsets whose mass reaches top_p, those of
    largest mass (the most probable tokens); with ties there are several, and their union is kept."""
    V = len(p)
    for size in range(1, V + 1):
        subsets = [s for s in itertools.combinations(range(V), size) if sum(p[i] for i in s) >= top_p - 1e-12]
        if subsets:
            best = max(sum(p[i] for i in s) for s in subsets)
            return set().union(*(set(s) for s in subsets if sum(p[i] for i in s) >= best - 1e-12))
    return set(range(V))


# --- nucleus (top-p) on known distributions ---------------------------------------------------------

@pytest.mark.parametrize("top_p, expected", [
    (0.8, {0, 1}), (0.5, {0}), (0.3, {0}), (0.51, {0, 1}), (0.95, {0, 1, 2}),
    (0.96, {0, 1, 2, 3}), (1.0, {0, 1, 2, 3}),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nucleus_on_a_known_distribution(top_p, expected, dtype):
    logits = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64).log().to(dtype)
    assert kept(filter_logits(logits, top_p=top_p)) == expected


def test_nucleus_does_not_depend_on_token_order():
    p = torch.tensor([0.05, 0.3, 0.15, 0.5])
    assert kept(filter_logits(p.log(), top_p=0.8)) == {1, 3}


def test_nucleus_keeps_ties_together():
    uniform = torch.zeros(4)
    assert kept(filter_logits(uniform, top_p=0.5)) == {0, 1, 2, 3}
    p = torch.tensor([0.4, 0.2, 0.2, 0.2])
    assert kept(filter_logits(p.log(), top_p=0.5)) == {0, 1, 2, 3}
    assert kept(filter_logits(p.log(), top_p=0.4)) == {0}


def test_nucleus_matches_brute_force_on_random_distributions():
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        V = int(torch.randint(2, 9, (1,), generator=g))
        logits = torch.randn(V, generator=g, dtype=torch.float64) * 2
        if _ % 2:  # integer logits: plenty of ties
            logits = logits.round()
        top_p = float(torch.rand(1, generator=g)) * 0.98 + 0.01
        p = torch.softmax(logits, -1).tolist()
        assert kept(filter_logits(logits, top_p=top_p)) == brute_force_nucleus(p, top_p)


def test_nucleus_is_the_smallest_set_reaching_top_p():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(50, 1000, generator=g)
    for top_p in (0.1, 0.5, 0.9):
        out = filter_logits(logits, top_p=top_p)
        p = torch.softmax(logits.double(), -1)
        keep = torch.isfinite(out)
        mass = (p * keep).sum(-1)
        assert torch.all(mass >= top_p - 1e-6)
        # dropping the least probable kept token falls short of top_p
        smallest_kept = torch.where(keep, p, torch.ones_like(p)).min(-1).values
        assert torch.all(mass - smallest_kept < top_p)


def test_nucleus_tiny_top_p_keeps_the_argmax():
    logits = torch.tensor([[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]])
    out = filter_logits(logits, top_p=1e-9)
    assert torch.isfinite(out).sum(-1).tolist() == [1, 1]
    assert out.argmax(-1).tolist() == [1, 2]


# --- top-k against torch.topk -----------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 5, 17, 50])
def test_top_k_keeps_exactly_torch_topk(k):
    g = torch.Generator().manual_seed(k)
    logits = torch.randn(8, 50, generator=g)  # continuous: no ties
    out = filter_logits(logits, top_k=k)
    idx = torch.topk(logits, k, dim=-1).indices
    expected = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, idx, True)
    assert torch.equal(torch.isfinite(out), expected)
    assert torch.equal(out[expected], logits[expected]), "kept logits are unchanged at temperature 1"


def test_top_k_larger_than_vocabulary_keeps_everything_and_ties_are_kept():
    logits = torch.tensor([1.0, 2.0, 3.0])
    assert torch.equal(filter_logits(logits, top_k=10), logits)
    assert kept(filter_logits(torch.tensor([3.0, 1.0, 3.0, 2.0]), top_k=1)) == {0, 2}


def test_top_k_then_top_p_uses_the_renormalised_distribution():
    p = torch.tensor([0.4, 0.3, 0.2, 0.1])
    # after top-2: 0.4/0.7 = 0.571..., so a nucleus of 0.55 needs only the first token
    assert kept(filter_logits(p.log(), top_k=2, top_p=0.55)) == {0}
    assert kept(filter_logits(p.log(), top_p=0.55)) == {0, 1}


# --- temperature -------------------------------------------------------------------------------------

@pytest.mark.parametrize("T", [0.25, 0.5, 1.0, 2.0, 10.0])
def test_temperature_matches_the_closed_form(T):
    z = torch.tensor([2.0, 1.0, 0.0, -1.5], dtype=torch.float64)
    got = torch.softmax(filter_logits(z, temperature=T), -1)
    expected = torch.tensor([math.exp(v / T) for v in z.tolist()], dtype=torch.float64)
    assert torch.allclose(got, expected / expected.sum(), atol=1e-12)


def test_temperature_limits():
    z = torch.tensor([2.0, 1.0, 0.0])
    cold = torch.softmax(filter_logits(z, temperature=0.01), -1)
    hot = torch.softmax(filter_logits(z, temperature=1000.0), -1)
    assert cold[0] > 0.999
    assert torch.allclose(hot, torch.full((3,), 1 / 3), atol=1e-3)


def test_leading_dimensions_and_input_untouched():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(3, 4, 30, generator=g)
    before = logits.clone()
    out = filter_logits(logits, temperature=0.7, top_k=5, top_p=0.9)
    assert out.shape == logits.shape and out.dtype == logits.dtype
    assert torch.equal(logits, before)
    rows = torch.stack([filter_logits(r, temperature=0.7, top_k=5, top_p=0.9) for r in logits.reshape(-1, 30)])
    assert torch.equal(out.reshape(-1, 30), rows), "batched = row by row"


def test_existing_minus_infinity_is_respected():
    logits = torch.tensor([-INF, 1.0, 0.5, -INF])
    assert kept(filter_logits(logits, top_k=3)) == {1, 2}
    assert kept(filter_logits(logits, top_p=1.0)) == {1, 2}


# --- sampling ----------------------------------------------------------------------------------------

def chi_square_p_value(counts, probs):
    """Pearson chi-square goodness-of-fit p-value (scipy if present, else the Wilson-Hilferty approximation)."""
    n = counts.sum()
    expected = n * probs
    stat = float(((counts - expected) ** 2 / expected).sum())
    df = len(probs) - 1
    try:
        from scipy.stats import chi2

        return float(chi2.sf(stat, df))
    except ImportError:
        z = ((stat / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
        return 0.5 * math.erfc(z / math.sqrt(2))


@pytest.mark.parametrize("options", [
    dict(), dict(temperature=0.5), dict(temperature=2.0), dict(top_k=3), dict(top_p=0.8),
    dict(temperature=1.5, top_k=4, top_p=0.9),
])
def test_sample_frequencies_match_the_filtered_distribution(options):
    logits = torch.tensor([1.2, 0.8, 0.3, 0.0, -0.5, -1.0])
    probs = torch.softmax(filter_logits(logits, **options).double(), -1).numpy()
    g = torch.Generator().manual_seed(123)
    n = 40_000
    draws = sample_next(logits.expand(n, -1), **options, generator=g)
    counts = np.bincount(draws.numpy(), minlength=len(probs)).astype(float)
    support = probs > 0
    assert counts[~support].sum() == 0, "a filtered-out token was drawn"
    assert chi_square_p_value(counts[support], probs[support]) > 1e-3
    assert np.abs(counts / n - probs).max() < 0.01


def test_greedy_equals_argmax():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 5, 40, generator=g)
    for kwargs in (dict(), dict(top_k=3), dict(top_p=0.2)):
        assert torch.equal(sample_next(logits, temperature=0, **kwargs), logits.argmax(-1))
    assert sample_next(torch.tensor([0.0, 3.0, 1.0]), temperature=0).item() == 1


def test_shapes_and_dtype():
    g = torch.Generator().manual_seed(4)
    assert sample_next(torch.randn(7), generator=g).shape == ()
    out = sample_next(torch.randn(3, 2, 7), generator=g)
    assert out.shape == (3, 2) and out.dtype == torch.long
    assert int(out.min()) >= 0 and int(out.max()) < 7


def test_top_k_one_is_greedy():
    g = torch.Generator().manual_seed(5)
    logits = torch.randn(100, 20, generator=g)
    assert torch.equal(sample_next(logits, top_k=1, generator=g), logits.argmax(-1))


def test_seeded_generator_reproduces_draws():
    logits = torch.randn(64, 30, generator=torch.Generator().manual_seed(6))
    draw = lambda seed: sample_next(logits, temperature=1.3, top_p=0.95,
                                    generator=torch.Generator().manual_seed(seed))
    assert torch.equal(draw(11), draw(11))
    assert not torch.equal(draw(11), draw(12))
    # the global generator is untouched when an explicit one is passed
    torch.manual_seed(0)
    a = torch.rand(3)
    torch.manual_seed(0)
    draw(11)
    assert torch.equal(torch.rand(3), a)


# --- errors ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, word", [
    (dict(temperature=0), "temperature"), (dict(temperature=-1.0), "temperature"),
    (dict(temperature=float("nan")), "temperature"), (dict(top_k=0), "top_k"), (dict(top_k=2.5), "top_k"),
    (dict(top_k=True), "top_k"), (dict(top_p=0), "top_p"), (dict(top_p=1.5), "top_p"), (dict(top_p=-0.1), "top_p"),
])
def test_filter_logits_rejects_bad_arguments_by_name(kwargs, word):
    with pytest.raises(ValueError, match=word):
        filter_logits(torch.zeros(5), **kwargs)


def test_error_messages_state_the_valid_range():
    with pytest.raises(ValueError, match=r"> 0"):
        filter_logits(torch.zeros(5), temperature=0)
    with pytest.raises(ValueError, match=r">= 1"):
        filter_logits(torch.zeros(5), top_k=0)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        filter_logits(torch.zeros(5), top_p=2)


@pytest.mark.parametrize("kwargs", [dict(temperature=-0.5), dict(top_k=0), dict(top_p=0.0)])
def test_sample_next_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        sample_next(torch.zeros(5), **kwargs)


@pytest.mark.parametrize("bad", [torch.zeros(5, dtype=torch.long), torch.zeros(()), torch.zeros(3, 0), [0.0, 1.0]])
def test_bad_logits(bad):
    with pytest.raises(ValueError, match="logits"):
        filter_logits(bad)
    with pytest.raises(ValueError, match="logits"):
        sample_next(bad)


def test_all_options_combined_on_batches_keep_at_least_one_token():
    g = torch.Generator().manual_seed(7)
    for T, k, p in itertools.product((0.1, 1.0, 5.0), (None, 1, 3), (None, 1e-6, 0.5, 1.0)):
        out = filter_logits(torch.randn(16, 12, generator=g) * 5, temperature=T, top_k=k, top_p=p)
        assert torch.all(torch.isfinite(out).sum(-1) >= 1)
