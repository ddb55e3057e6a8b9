"""helpers.ngram: interpolated Kneser–Ney against a brute-force implementation of its definition."""

from collections import Counter

import numpy as np
import pytest

from helpers.ngram import KneserNey


def brute_force_kn(train, V, n):
    """p(w | h) straight from the definition in helpers/ngram.py's docstring, with Python dicts: the model
    of order len(h) + 1 (at most n), whose highest order counts occurrences and whose lower orders count
    continuations (distinct tokens seen before)."""
    grams = lambda m: [tuple(train[i:i + m]) for i in range(len(train) - m + 1)]  # noqa: E731
    occurrences = {m: Counter(grams(m)) for m in range(1, n + 1)}
    continuations = {m: Counter(g[1:] for g in set(grams(m + 1))) for m in range(1, n)}

    def discount(table):
        c = list(table.values())
        return c.count(1) / (c.count(1) + 2 * c.count(2)) if c.count(1) else 0.5

    def p(w, h, top=True):
        m = len(h) + 1
        table = occurrences[m] if top else continuations[m]
        lower = 1 / V if m == 1 else p(w, h[1:], top=False)
        rows = {g: c for g, c in table.items() if g[:-1] == h}
        if not rows:
            return lower
        d = discount(table)
        return (max(rows.get(h + (w,), 0) - d, 0) + d * len(rows) * lower) / sum(rows.values())

    return p


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    # a text with structure: a repeated phrase with random substitutions, 4 symbols
    base = np.tile([0, 1, 2, 3, 1, 2], 60)
    noise = rng.random(len(base)) < 0.2
    train = np.where(noise, rng.integers(0, 4, len(base)), base)
    test = np.where(rng.random(120) < 0.2, rng.integers(0, 4, 120), np.tile([0, 1, 2, 3, 1, 2], 20))
    return train, test


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("window", [None, 5])
def test_matches_the_definition(small, order, window):
    train, test = small
    p = brute_force_kn(train.tolist(), 4, order)
    expected = []
    for t in range(1, len(test)):
        history = t if window is None else (t - 1) % window + 1
        h = tuple(test[t - min(history, order - 1):t].tolist())
        expected.append(-np.log(p(int(test[t]), h)))
    got = KneserNey(train, 4, order).nll(test, window=window)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_every_context_gets_a_distribution(small):
    train, _ = small
    kn = KneserNey(train, 4, 3)
    rng = np.random.default_rng(1)
    for h in [(0, 1), (3, 3), (2, 0)] + [tuple(rng.integers(0, 4, 2)) for _ in range(5)]:
        probs = [np.exp(-kn.nll(np.array(h + (w,)))[-1]) for w in range(4)]
        assert sum(probs) == pytest.approx(1.0, abs=1e-12), h
        assert min(probs) > 0, "an unseen continuation still gets probability"


def test_more_context_helps_on_structured_text(small):
    train, test = small
    nats = [KneserNey(train, 4, n).nll(test).mean() for n in (1, 2, 4)]
    assert nats[0] > nats[1] > nats[2]


@pytest.mark.parametrize("kwargs, message", [
    (dict(ids=[0, 1, 2], vocab_size=4, order=0), "order must be >= 1"),
    (dict(ids=[[0, 1], [1, 2]], vocab_size=4, order=2), "1-D array of integer token ids"),
    (dict(ids=[0.5, 1.0, 2.0], vocab_size=4, order=2), "1-D array of integer token ids"),
    (dict(ids=[0, 1, 7], vocab_size=4, order=1), "outside 0..3"),
    (dict(ids=[0, 1], vocab_size=4, order=3), "needs more than 3"),
    (dict(ids=list(range(65)) * 3, vocab_size=65, order=10), "overflows the int64 keys"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        KneserNey(**kwargs)


def test_bad_scoring_arguments_are_named(small):
    kn = KneserNey(small[0], 4, 2)
    with pytest.raises(ValueError, match="window must be >= 1"):
        kn.nll(small[1], window=0)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        kn.nll([1])
    with pytest.raises(ValueError, match="outside 0..3"):
        kn.nll([1, 4])
