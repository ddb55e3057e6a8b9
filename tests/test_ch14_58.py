"""§14.58: the claims its prose makes, asserted on the values its notebook glued."""

import math

import pytest

STEM = "14_58_language_modelling_objective"


def test_split_and_vocabulary(g):
    assert g["V"] == 65
    assert g["n_train"] + g["n_val"] == 1_115_394
    assert g["n_train"] == int(0.9 * 1_115_394)
    assert g["val_chars_all_in_train"] is True
    assert g["block"] == 8


def test_teacher_forcing_loss_is_the_flattened_cross_entropy(g):
    assert g["teacher_forcing_gap"] < 1e-5
    assert g["untrained_loss"] > g["uniform_val_nats"], "random logits are worse than uniform ones"


def test_unit_conversions(g):
    assert abs(g["uniform_nats"] - math.log(65)) < 1e-12, "uniform cross-entropy is ln V exactly"
    assert g["ln_V"] == pytest.approx(math.log(65), abs=1e-15)
    assert g["uniform_bits"] == pytest.approx(math.log2(65), abs=1e-12)
    assert g["uniform_ppl"] == pytest.approx(65, abs=1e-9)
    assert g["ppl_routes_gap"] < 1e-9
    for key in ("unigram", "bigram"):
        assert g[f"{key}_val_bits"] == pytest.approx(g[f"{key}_val_nats"] / math.log(2), rel=1e-12)
        assert g[f"{key}_val_ppl"] == pytest.approx(math.exp(g[f"{key}_val_nats"]), rel=1e-12)


def test_baseline_ordering_on_validation(g):
    assert g["uniform_val_nats"] > g["unigram_val_nats"] > g["bigram_val_nats"]
    assert g["unigram_gain_bits"] > 0.5 and g["bigram_gain_bits"] > 0.5
    assert 8 < g["bigram_val_ppl"] < 16, "'about a dozen' continuations"
    # fitted on training text: validation is (slightly) worse than training
    assert g["unigram_val_nats"] > g["unigram_train_nats"]
    assert g["bigram_val_nats"] > g["bigram_train_nats"]


def test_uniform_closed_forms_and_unseen_bigrams_recounted(g):
    import numpy as np

    from helpers.data import load_tiny_shakespeare
    from helpers.tokenization import CharTokenizer, train_val_split

    assert g["uniform_val_bits"] == pytest.approx(math.log2(65)) and g["uniform_val_ppl"] == pytest.approx(65)
    train_text, val_text = train_val_split(load_tiny_shakespeare())
    tok = CharTokenizer.fit(train_text)
    tr, va = np.array(tok.encode(train_text)), np.array(tok.encode(val_text))
    seen = set(zip(tr[:-1].tolist(), tr[1:].tolist()))
    unseen = [p for p in zip(va[:-1].tolist(), va[1:].tolist()) if p not in seen]
    assert g["n_unseen_bigrams"] == len(unseen) and g["n_unseen_bigrams_distinct"] == len(set(unseen))


def test_unseen_bigrams_need_smoothing(g):
    assert g["n_unseen_bigrams"] > 0 and g["n_unseen_bigrams_distinct"] > 0
    assert g["raw_bigram_val_is_inf"] is True


def test_gradient_descent_recovers_the_counts(g):
    assert 0 <= g["neural_bigram_train_nats"] - g["mle_bigram_train_nats"] < 2e-3


def test_leakage(g):
    assert g["leaky_bigram_val_nats"] < g["bigram_val_nats"], "fitting on validation flatters the model"
    assert g["random_below_contiguous_from_3"] is True
    assert g["random_optimism_best"] > 0.1


def test_ngram_overfitting(g):
    assert g["train_curve_decreasing"] is True
    assert 3 <= g["best_order"] < g["max_order"], "validation has an interior minimum"
    assert g["max_order_val_nats"] > g["best_order_val_nats"] + 0.3, "and rises again"
    assert g["max_order_train_nats"] < g["best_order_val_nats"]
    assert g["best_order_val_nats"] < g["bigram_val_nats"]
    assert g["best_order_val_bits"] == pytest.approx(g["best_order_val_nats"] / math.log(2))
    assert g["bigram_k_effect"] < 0.02, "for bigrams the smoothing constant hardly matters"
    assert g["unigram_k_effect"] < 0.02, "nor for unigrams"
    assert g["unigram_k_effect"] == pytest.approx(abs(g["unigram_k001_val_nats"] - g["unigram_val_nats"]))


def test_exercise_solutions(g, glued):
    assert g["conditional_entropy_nats"] == pytest.approx(g["mle_bigram_train_nats"], abs=1e-10)
    assert g["perturbed_min_excess"] > 0
    assert abs(g["alpha_chosen_val_nats"] - g["bigram_val_nats"]) < 0.01, "'within a few thousandths'"
    assert g["bpe_unigram_bits_per_token"] > g["unigram_val_bits"], "worse per token"
    assert g["bpe_unigram_bpc"] < g["unigram_val_bits"], "better per character"
    # the same 512-token tokenizer on the same validation text as §14.57 (cross-section oracle)
    assert g["bpe_chars_per_token"] == pytest.approx(glued("14_57_tokenization")["bpe_ratio_512"], rel=1e-12)
