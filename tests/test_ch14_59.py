"""§14.59: the claims its prose makes, asserted on the values its notebook glued, and the cache's target."""

import math

import pytest

from helpers import cache, charlm

STEM = "14_59_character_language_model"


def test_corpus_split_is_nanogpts(g):
    assert g["vocab_size"] == 65
    assert g["n_train"] + g["n_val"] == 1_115_394 and g["n_train"] == int(0.9 * 1_115_394)
    assert abs(g["uniform_val"] - math.log(65)) < 1e-12


def test_models_are_of_similar_size(g):
    assert 0.75 < g["param_ratio"] < 1.25


def test_transformer_result_as_stated(g):
    assert g["gpt_seconds"] <= 525, "trained within the 520 s budget"
    assert 4 < g["gpt_ppl"] < 5, "perplexity below five: fewer than five equally likely characters"
    assert g["gpt_ppl"] == pytest.approx(math.exp(g["gpt_val"]))
    assert g["gpt_bpc"] == pytest.approx(g["gpt_val"] / math.log(2))
    assert g["gap_to_bigram"] == pytest.approx(g["bigram_val"] - g["gpt_val"])
    assert g["gap_to_bigram"] > 0.5


def test_cached_figures_are_the_manifests(g):
    manifest = cache.verify_cache(charlm.CACHE_NAME, code=[charlm], config=charlm.cache_config())
    m = manifest["metrics"]
    assert g["gpt_val"] == m["gpt_val_loss"] and g["lstm_val"] == m["lstm_val_loss"]
    assert g["gpt_seconds"] == m["gpt_train_seconds"] and g["lstm_seconds"] == m["lstm_train_seconds"]
    assert g["retrain_minutes"] == pytest.approx(manifest["wall_time_s"] / 60)
    results = cache.load_cache(charlm.CACHE_NAME, code=[charlm], config=charlm.cache_config()).results
    chars = {k: results[k]["steps"] * g["chars_per_step"] / 1e6 for k in ("gpt", "lstm")}
    assert g["gpt_chars_M"] == pytest.approx(chars["gpt"]) and g["lstm_chars_M"] == pytest.approx(chars["lstm"])
    assert g["gpt_tps"] == pytest.approx(results["gpt"]["tokens_per_s"])
    assert g["lstm_tps"] == pytest.approx(results["lstm"]["tokens_per_s"])
    assert g["eval_interval_s"] == pytest.approx(520 / 8, rel=0.02), "eight evaluations over the budget"
    assert g["first_sample_s"] == pytest.approx(g["eval_interval_s"], rel=0.02)


def test_lstm_wins_at_equal_time_and_per_character_seen(g):
    assert abs(g["gpt_seconds"] - g["lstm_seconds"]) < 10, "equal training time"
    assert g["lstm_val"] < g["gpt_val"] < g["bigram_val"]
    assert g["tps_ratio"] == pytest.approx(g["lstm_tps"] / g["gpt_tps"]) and g["tps_ratio"] > 1.2
    # "at each of the Transformer's evaluations within the LSTM's range of steps, the LSTM is lower"
    assert g["n_matched"] >= 5 and g["lstm_lower_at_matched"] == g["n_matched"]
    assert g["lstm_at_gpt_chars"] < g["gpt_val"], "ahead after the same number of characters"
    assert g["lstm_val"] < g["lstm_at_gpt_chars"], "and the LSTM kept improving on the rest of its characters"
    assert 1.2 < g["lstm_chars_M"] / g["gpt_chars_M"] < 2.5


def test_published_anchor_is_quoted_not_measured(g):
    # nanoGPT's README: baby GPT, best validation loss 1.4697 (one A100); the text says "within ... nats"
    assert g["lstm_minus_baby"] == pytest.approx(g["lstm_val"] - 1.4697)
    assert 0 < g["lstm_minus_baby"] < 0.02
    assert g["mean_context"] == (g["context"] + 1) / 2


def test_fused_attention_matches_the_from_scratch_one(g):
    assert g["sdpa_max_diff"] < 1e-5, "the two agree to float precision"


def test_solution_3_multiply_adds(g):
    # each weight of a matmul is one multiply-add per character (embedding look-ups are free, attention's
    # T-long products are extra), so both counts sit near the parameter counts: "about 0.8 M and 0.7 M"
    assert 0.9 * g["gpt_params"] < g["gpt_macs_per_char"] < 1.1 * g["gpt_params"]
    assert 0.9 * g["lstm_params"] < g["lstm_macs_per_char"] < g["lstm_params"]


def test_training_text_scores_better_than_validation_text(g):
    assert g["gpt_train_slice"] < g["gpt_val"] - 0.15, "a clear gap between seen and unseen text"
    assert abs(g["gpt_generalisation_gap"] - (g["gpt_val"] - g["gpt_train_slice"])) < 1e-3


def test_cache_reproduces_and_random_batches_are_noisy(g):
    assert g["reeval_diff"] < 1e-6, "the cached weights give the cached loss"
    # "differences of a few hundredths can be noise": sd and range of the 20-batch estimates
    assert 0.01 < g["estimate_sd"] < 0.03 and 2 * g["estimate_sd"] < g["estimate_range"] < 6 * g["estimate_sd"]


def test_samples_learn_words(g):
    assert g["known_first"] > 0.5 and g["lstm_known_first"] > 0.5, "most words are real at the first evaluation"
    assert g["known_last"] > g["known_first"] + 0.05


def test_shorter_context_costs_loss(g):
    assert g["short_context_loss"] > g["gpt_val"] + 0.05


def test_cache_manifest_records_time_and_hardware():
    manifest = cache.verify_cache(charlm.CACHE_NAME, code=[charlm], config=charlm.cache_config())
    assert manifest["metrics"]["gpt_train_seconds"] >= 500
    assert manifest["hardware"]["cpu_count"] >= 1
    assert manifest["wall_time_s"] > manifest["metrics"]["gpt_train_seconds"] + manifest["metrics"]["lstm_train_seconds"]


def test_sample_figures_recomputed_from_the_cache(g):
    cached = cache.load_cache(charlm.CACHE_NAME, code=[charlm], config=charlm.cache_config())
    train, _, tok = charlm.load_corpus()
    words = set(tok.decode(train.tolist()).split())

    def share(text):
        w = text.split()
        return sum(x in words for x in w) / max(1, len(w))

    samples = {k: cached.results[k]["samples"] for k in ("gpt", "lstm")}
    assert g["known_first"] == pytest.approx(share(samples["gpt"][0]["text"]))
    assert g["known_last"] == pytest.approx(share(samples["gpt"][-1]["text"]))
    assert g["lstm_known_first"] == pytest.approx(share(samples["lstm"][0]["text"]))


@pytest.fixture(scope="module")
def random_batch_estimates():
    """The notebook's repeated random-batch estimates of the validation loss, drawn again from the cached
    Transformer with the executed notebook's SEED and settings (no glued value is read)."""
    import numpy as np
    import torch

    from conftest import executed_parameters, glued_values, load_executed

    settings = glued_values(load_executed(STEM))  # two settings, never perturbed
    n_batches, n_repeats = settings["n_est_batches"], settings["n_est_repeats"]
    cached = cache.load_cache(charlm.CACHE_NAME, code=[charlm], config=charlm.cache_config())
    gpt, _, _ = charlm.models_from_tensors(cached.tensors, cached.results["vocab"])
    _, val, _ = charlm.load_corpus()
    generator = torch.Generator().manual_seed(executed_parameters(STEM)["SEED"])
    estimates = []
    with torch.no_grad():
        for _ in range(n_repeats):
            loss = 0.0
            for _ in range(n_batches):
                x, y = charlm.random_batch(val, 12, gpt.context, generator)
                loss += float(torch.nn.functional.cross_entropy(gpt(x).flatten(0, 1), y.flatten())) / n_batches
            estimates.append(loss)
    return {"estimate_sd": float(np.std(estimates)), "estimate_range": float(np.ptp(estimates))}


def test_random_batch_noise_drawn_again(g, random_batch_estimates):
    # the same draws from the same generator: the spread the text shows, to float rounding
    for key, value in random_batch_estimates.items():
        assert g[key] == pytest.approx(value, rel=1e-4), key


def test_train_curves_lag_and_start_above_validation():
    # "so they lag behind and start above the validation curves": the first point of each model
    cached = cache.load_cache(charlm.CACHE_NAME, code=[charlm], config=charlm.cache_config())
    for kind in ("gpt", "lstm"):
        first = cached.results[kind]["curve"][0]
        assert first["train_loss"] > first["val_loss"], kind
