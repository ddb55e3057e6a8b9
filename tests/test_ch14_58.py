"""§14.58: the claims its prose makes, asserted on the values its notebook glued."""

import math

import numpy as np
import pytest

STEM = "14_58_language_modelling_objective"


def test_split_and_vocabulary(g):
    assert g["V"] == 65
    assert g["n_train"] + g["n_val"] == 1_115_394
    assert g["n_train"] == int(0.9 * 1_115_394)
    assert g["block"] == 8


@pytest.mark.claim("one-pass-equals-prefixes", "takeaway-one-pass")
def test_one_pass_gives_the_prefix_by_prefix_losses_for_models_that_keep_the_order(g):
    float32_eps = 2.0 ** -23
    for key in ("bigram", "gru"):
        # float rounding: a few ulps of losses near 4 nats
        assert g[f"tf_gap_{key}"] <= 8 * float32_eps * max(g[f"tf_one_pass_{key}"], 1.0), key
        assert g[f"tf_one_pass_{key}"] == pytest.approx(g[f"tf_by_prefix_{key}"], abs=1e-5), key


@pytest.mark.claim("bidirectional-leaks")
def test_a_bidirectional_model_differs_at_every_position_but_the_last(g):
    import ast
    gaps = ast.literal_eval(g["tf_gaps_bigru"])  # (T,) the largest gap over the batch at each position
    assert g["tf_min_gap_bigru"] == pytest.approx(min(gaps[:-1]), rel=1e-6)
    assert g["tf_gap_bigru"] == pytest.approx(max(gaps), rel=1e-6)
    assert g["tf_last_gap_bigru"] == pytest.approx(gaps[-1], abs=1e-9)
    assert g["tf_min_gap_bigru"] > 1000 * g["tf_gap_gru"], "far above rounding, at every position before the last"
    assert g["tf_gap_bigru"] >= g["tf_min_gap_bigru"]
    assert g["tf_last_gap_bigru"] <= 8 * 2.0 ** -23 * g["tf_one_pass_bigru"], "...but the last: both passes read all of it"
    assert g["tf_one_pass_bigru"] != pytest.approx(g["tf_by_prefix_bigru"], abs=1e-3)


@pytest.mark.claim("uniform-ln-v")
def test_unit_conversions(g):
    assert abs(g["uniform_nats"] - math.log(65)) < 1e-12, "uniform cross-entropy is ln V exactly"
    assert g["ln_V"] == pytest.approx(math.log(65), abs=1e-15)
    assert g["uniform_bits"] == pytest.approx(math.log2(65), abs=1e-12)
    assert g["uniform_ppl"] == pytest.approx(65, abs=1e-9)
    assert g["ppl_routes_gap"] < 1e-9
    for key in ("unigram", "bigram"):
        assert g[f"{key}_val_bits"] == pytest.approx(g[f"{key}_val_nats"] / math.log(2), rel=1e-12)
        assert g[f"{key}_val_ppl"] == pytest.approx(math.exp(g[f"{key}_val_nats"]), rel=1e-12)


@pytest.mark.claim("about-a-dozen")
def test_baseline_ordering_on_validation(g):
    assert g["uniform_val_nats"] > g["unigram_val_nats"] > g["bigram_val_nats"]
    assert abs(g["bigram_val_ppl"] - 12) < 2.5, "'about a dozen' continuations"
    # fitted on training text: validation is (slightly) worse than training
    assert g["unigram_val_nats"] > g["unigram_train_nats"]
    assert g["bigram_val_nats"] > g["bigram_train_nats"]


@pytest.fixture(scope="module")
def codes():
    """The notebook's split, encoded with the training vocabulary (no glued value)."""
    import numpy as np

    from helpers.data import load_tiny_shakespeare
    from helpers.tokenization import CharTokenizer, train_val_split

    text = load_tiny_shakespeare()
    train_text, val_text = train_val_split(text)
    tok = CharTokenizer.fit(train_text)
    return {"all": np.array(tok.encode(text), dtype=np.int64), "n_train": len(train_text), "V": tok.vocab_size,
            "train": np.array(tok.encode(train_text)), "val": np.array(tok.encode(val_text))}


@pytest.fixture(scope="module")
def unseen_bigrams(codes):
    tr, va = codes["train"], codes["val"]
    seen = set(zip(tr[:-1].tolist(), tr[1:].tolist()))
    return [p for p in zip(va[:-1].tolist(), va[1:].tolist()) if p not in seen]


@pytest.mark.claim("unseen-pairs")
def test_uniform_closed_forms_and_unseen_bigrams_recounted(g, unseen_bigrams):
    assert g["uniform_val_bits"] == pytest.approx(math.log2(65)) and g["uniform_val_ppl"] == pytest.approx(65)
    assert g["n_unseen_bigrams"] == len(unseen_bigrams)
    assert g["n_unseen_bigrams_distinct"] == len(set(unseen_bigrams))


@pytest.mark.claim("zero-makes-infinite", "raw-bigram-infinite")
def test_unseen_bigrams_make_the_raw_bigram_infinite(g, codes):
    import numpy as np

    tr, va, V = codes["train"], codes["val"], codes["V"]
    counts = np.bincount(tr[:-1] * V + tr[1:], minlength=V * V).reshape(V, V).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        P = counts / counts.sum(axis=1, keepdims=True)  # the raw relative frequencies
        nll = -np.log(P[va[:-1], va[1:]])
    assert g["n_unseen_bigrams"] > 0 and np.isinf(nll).sum() == g["n_unseen_bigrams"]
    assert np.isinf(nll.mean()), "one zero makes the validation cross-entropy infinite"


@pytest.mark.claim("gd-from-above", "cannot-beat-counting")
def test_gradient_descent_recovers_the_counts(g):
    assert 0 <= g["neural_bigram_train_nats"] - g["mle_bigram_train_nats"] < 2e-3


def test_leakage(g):
    assert g["leaky_bigram_val_nats"] < g["bigram_val_nats"], "fitting on validation flatters the model"
    assert g["random_optimism_best"] > 0.1


@pytest.mark.claim("smoothing-hardly-matters")
def test_ngram_overfitting(g):
    assert 3 <= g["best_order"] < g["max_order"], "validation has an interior minimum"
    assert g["max_order_val_nats"] > g["best_order_val_nats"] + 0.3, "and rises again"
    assert g["max_order_train_nats"] < g["best_order_val_nats"]
    assert g["best_order_val_nats"] < g["bigram_val_nats"]
    assert g["best_order_val_bits"] == pytest.approx(g["best_order_val_nats"] / math.log(2))
    assert g["bigram_k_effect"] < 0.02, "for bigrams the smoothing constant hardly matters"
    assert g["unigram_k_effect"] < 0.02, "nor for unigrams"
    assert g["unigram_k_effect"] == pytest.approx(abs(g["unigram_k001_val_nats"] - g["unigram_val_nats"]))


@pytest.mark.claim("mle-counts", "perturbations-increase", "alpha-barely-matters", "bpe-per-token-higher", "bpe-worse-per-token")
def test_exercise_solutions(g, glued):
    assert g["conditional_entropy_nats"] == pytest.approx(g["mle_bigram_train_nats"], abs=1e-10)
    assert g["perturbed_min_excess"] > 0
    assert g["alpha_gap"] == pytest.approx(abs(g["alpha_chosen_val_nats"] - g["bigram_val_nats"]))
    assert g["alpha_gap"] < 1e-3, "smoothing barely matters for bigrams"
    assert g["alpha_side"] == ("the chosen one slightly worse" if g["alpha_chosen_val_nats"] > g["bigram_val_nats"]
                               else "the chosen one slightly better")
    assert g["bpe_unigram_bits_per_token"] > 1.2 * g["unigram_val_bits"], "much worse per token"
    assert g["bpe_unigram_bpc"] < g["unigram_val_bits"], "better per character"
    # the same 512-token tokenizer on the same validation text as §14.57 (cross-section oracle)
    assert g["bpe_chars_per_token"] == pytest.approx(glued("14_57_tokenization")["bpe_ratio_512"], rel=1e-12)


# ---- guards added for the claims check (issue 11 item 3) -------------------------------------

@pytest.mark.claim("baseline-gains")
def test_gains_are_differences_of_the_shown_cross_entropies(g):
    # "saves x bits per character over the uniform guess; knowing the previous character saves another y"
    assert g["unigram_gain_bits"] == pytest.approx(g["uniform_val_bits"] - g["unigram_val_bits"], rel=1e-9)
    assert g["unigram_gain_bits"] > 0 and g["bigram_gain_bits"] > 0, "each saves bits"
    assert g["bigram_gain_bits"] == pytest.approx(g["unigram_val_bits"] - g["bigram_val_bits"], rel=1e-9)
    assert g["bigram_k_effect"] == pytest.approx(abs(g["bigram_k001_val_nats"] - g["bigram_val_nats"]))
    # bpc = bits per token / characters per token
    assert g["bpe_unigram_bpc"] == pytest.approx(g["bpe_unigram_bits_per_token"] / g["bpe_chars_per_token"], rel=1e-9)


@pytest.fixture(scope="module")
def ngram_curves(codes):
    """The add-0.01 n-gram curves of orders 1..7 (training, contiguous validation, random blocks),
    recomputed here with the notebook's random-block draws (seed 1458, blocks of 256, 10 % validation, five draws
    per order in the notebook's order)."""
    import numpy as np

    x, n_train, V = codes["all"], codes["n_train"], codes["V"]
    k, rng, rows = 0.01, np.random.default_rng(1458), {}
    for n in range(1, 8):
        m = len(x) - n + 1
        ctx = np.zeros(m, dtype=np.int64)
        for j in range(n - 1):
            ctx = ctx * V + x[j:j + m]
        nxt = x[n - 1:]
        first = np.arange(m)
        last = first + n - 1
        in_train, in_val = last < n_train, first >= n_train

        def nats(fit, ev):
            joint = ctx[fit] * V + nxt[fit]
            uj, cj = np.unique(joint, return_counts=True)
            uc, cc = np.unique(ctx[fit], return_counts=True)
            q, qc = ctx[ev] * V + nxt[ev], ctx[ev]
            ij, ic = np.minimum(np.searchsorted(uj, q), len(uj) - 1), np.minimum(np.searchsorted(uc, qc), len(uc) - 1)
            num = np.where(uj[ij] == q, cj[ij], 0) + k
            den = np.where(uc[ic] == qc, cc[ic], 0) + k * V
            return float(-np.log(num / den).mean())

        draws = []
        for _ in range(5):
            r_val = (rng.random(last.max() // 256 + 1) < 0.1)[last // 256]
            draws.append(nats(~r_val, r_val))
        rows[n] = {"train": nats(in_train, in_train), "val": nats(in_train, in_val), "random": float(np.mean(draws)),
                   "draws": draws}
    return rows


@pytest.mark.claim("train-falls", "val-u-shape", "takeaway-orders")
def test_the_training_curve_falls_and_the_validation_curve_turns(g, ngram_curves):
    orders = sorted(ngram_curves)
    train = [ngram_curves[n]["train"] for n in orders]
    val = [ngram_curves[n]["val"] for n in orders]
    assert all(b < a for a, b in zip(train, train[1:])), "falls with every added character"
    best = orders[int(np.argmin(val))]
    assert best == g["best_order"] and g["best_order_val_nats"] == pytest.approx(min(val), rel=1e-9)
    i = orders.index(best)
    assert all(b < a for a, b in zip(val[: i + 1], val[1: i + 1])), "falls to the best order"
    assert all(b > a for a, b in zip(val[i:], val[i + 1:])), "then rises again: worse past it"


@pytest.mark.claim("random-split-optimistic")
def test_ngram_curve_recomputed(g, ngram_curves):
    top, best = g["max_order"], g["best_order"]
    assert top == max(ngram_curves)
    assert g["max_order_train_nats"] == pytest.approx(ngram_curves[top]["train"], rel=1e-9)
    assert g["max_order_val_nats"] == pytest.approx(ngram_curves[top]["val"], rel=1e-9)
    assert g["random_optimism_best"] == pytest.approx(ngram_curves[best]["val"] - ngram_curves[best]["random"], rel=1e-9)
    assert g["random_optimism_best_min"] == pytest.approx(ngram_curves[best]["val"] - max(ngram_curves[best]["draws"]), rel=1e-9)
    assert g["random_optimism_best_max"] == pytest.approx(ngram_curves[best]["val"] - min(ngram_curves[best]["draws"]), rel=1e-9)
    # "the randomly split curve lies below the contiguous one at every order, in every draw"
    every = all(max(c["draws"]) < c["val"] for c in ngram_curves.values())
    assert every and g["random_below_orders"] == "at every order, in every draw"
    assert 0 < g["random_optimism_best_min"] <= g["random_optimism_best"] <= g["random_optimism_best_max"]


@pytest.fixture(scope="module")
def leaky_bigram(codes):
    """Add-one bigram fitted on training + validation text, scored on validation."""
    import numpy as np

    x, V, va = codes["all"], codes["V"], codes["val"]
    counts = np.bincount(x[:-1] * V + x[1:], minlength=V * V).reshape(V, V).astype(float)
    P = (counts + 1) / (counts.sum(axis=1, keepdims=True) + V)
    return float(-np.log(P[va[:-1], va[1:]]).mean())


@pytest.mark.claim("leaky-looks-better")
def test_leaky_bigram_recomputed(g, leaky_bigram):
    assert g["leaky_bigram_val_nats"] == pytest.approx(leaky_bigram, rel=1e-9)
    assert leaky_bigram < g["bigram_val_nats"], "the leaky bigram looks better"


@pytest.mark.claim("bigram-leak-small", "capacity-memorises")
def test_a_bigram_memorises_little_and_higher_orders_more(g, leaky_bigram, ngram_curves):
    # the bigram's gain from seeing the validation text is smaller than what the random split hands
    # the best order in its least optimistic draw
    best = g["best_order"]
    least = ngram_curves[best]["val"] - max(ngram_curves[best]["draws"])
    assert 0 < g["bigram_val_nats"] - leaky_bigram < least


@pytest.fixture(scope="module")
def kneser_ney():
    """Kneser–Ney recomputed from the data: held-out losses (fit on the first 90 % of the training
    text, scored on the rest) for orders 5-9, and the chosen order's validation scores."""
    import numpy as np

    from helpers.data import load_tiny_shakespeare
    from helpers.ngram import KneserNey
    from helpers.tokenization import CharTokenizer, train_val_split

    train_text, val_text = train_val_split(load_tiny_shakespeare(), frac=0.9)
    tok = CharTokenizer.fit(train_text)
    train, val = np.array(tok.encode(train_text)), np.array(tok.encode(val_text))
    cut = int(0.9 * len(train))
    held_out = {n: KneserNey(train[:cut], tok.vocab_size, n).nll(train[cut:]).mean() for n in range(5, 10)}
    return held_out, lambda n, **kw: KneserNey(train, tok.vocab_size, n).nll(val, **kw).mean()


@pytest.mark.claim("kn-order-chosen", "kn-removes-overfitting", "kn-no-gain-past", "kn-beats-addk", "kn-window", "kn-overfits-less", "takeaway-orders")
def test_kneser_ney_baseline_as_stated(g, kneser_ney):
    held_out, val_nats = kneser_ney
    # the order is chosen on held-out training text: the minimum, with the loss rising past it to order 9
    assert g["kn_order"] == min(held_out, key=held_out.get) and g["kn_max_order"] == 9
    from helpers.ngram import KN_ORDER
    assert KN_ORDER == g["kn_order"], "§14.59 and §14.64 fit their baseline at the order chosen here"
    rising = [held_out[n] for n in range(g["kn_order"], 10)]
    assert all(b > a for a, b in zip(rising, rising[1:])), "gains nothing from longer contexts"
    assert g["kn_heldout_rise"] == pytest.approx(held_out[9] - held_out[g["kn_order"]], rel=1e-9)
    assert g["kn_context"] == g["kn_order"] - 1
    # validation scores, full context and restarted every window
    assert g["kn_val_nats"] == pytest.approx(val_nats(g["kn_order"]), rel=1e-9)
    assert g["kn_val_window_nats"] == pytest.approx(val_nats(g["kn_order"], window=g["kn_window"]), rel=1e-9)
    assert g["kn_window"] == 64, "§14.59's networks read 64-character windows"
    assert g["kn_val_window_nats"] > g["kn_val_nats"], "restarting the context costs"
    assert g["kn_val_bits"] == pytest.approx(g["kn_val_nats"] / math.log(2))
    # "backing off removes almost all of the overfitting": at add-k's highest order, KN is within a
    # tenth of add-k's rise of its own best
    assert g["kn_val_at_max_order"] == pytest.approx(val_nats(g["max_order"]), rel=1e-9)
    addk_rise = g["max_order_val_nats"] - g["best_order_val_nats"]
    assert g["kn_val_at_max_order"] - g["kn_val_nats"] < 0.1 * addk_rise
    # "... nats below the best add-k order", and far below the bigram
    assert g["kn_gain_over_addk"] == pytest.approx(g["best_order_val_nats"] - g["kn_val_nats"], rel=1e-9)
    assert g["kn_val_nats"] < g["best_order_val_nats"] < g["bigram_val_nats"]
    assert g["kn_val_window_nats"] < g["best_order_val_nats"]


def test_alpha_is_chosen_on_held_out_training_text(g, codes):
    import numpy as np

    tr, V = codes["train"], codes["V"]
    cut = int(0.9 * len(tr))
    fit, held = tr[:cut], tr[cut:]
    counts = np.bincount(fit[:-1] * V + fit[1:], minlength=V * V).reshape(V, V).astype(float)
    alphas = np.geomspace(1e-3, 10, 13)
    nats = [float(-np.log(((counts + a) / (counts.sum(axis=1, keepdims=True) + a * V))[held[:-1], held[1:]]).mean())
            for a in alphas]
    assert g["alpha_chosen"] == pytest.approx(alphas[int(np.argmin(nats))], rel=1e-9)


@pytest.mark.claim("kn-overfits-less")
def test_longer_contexts_help_the_networks(g, glued):
    # "§14.59's networks show that much longer contexts do help": its LSTM, reading 64-character windows,
    # is below Kneser-Ney (a context of kn_context characters) scored in the same windows, in every seed
    lstm = glued("14_59_character_language_model")
    assert g["kn_window"] == 64
    assert lstm["lstm_520s_hi"] < g["kn_val_window_nats"]


@pytest.mark.claim("vocab-covers-val")
def test_every_validation_character_occurs_in_training():
    from helpers.data import load_tiny_shakespeare
    from helpers.tokenization import train_val_split

    train_text, val_text = train_val_split(load_tiny_shakespeare())
    assert set(val_text) <= set(train_text)


@pytest.mark.claim("no-shift-copies")
def test_without_the_shift_the_training_loss_falls_towards_zero(codes):
    """The bigram logit table trained on unshifted targets (target = input) learns to copy its input."""
    import torch

    torch.manual_seed(0)
    V, x = codes["V"], torch.as_tensor(codes["train"][:20_000])
    W = torch.zeros(V, V, requires_grad=True)
    opt = torch.optim.Adam([W], lr=0.5)
    for _ in range(100):
        loss = torch.nn.functional.cross_entropy(W[x], x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.01 * math.log(V), "towards zero"
