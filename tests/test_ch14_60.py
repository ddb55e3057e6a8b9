"""§14.60: the claims its prose makes, asserted on the values its notebook glued."""


STEM = "14_60_autoregressive_sampling"


def test_cached_sampler_and_definitions_agree_with_the_reference(g):
    assert g["cache_error"] < 1e-4, "KV-cached forward pass = the model's own forward pass"
    assert g["definition_error"] < 1e-9, "rules from their definitions = helpers.sampling.filter_logits"
    assert 0 < g["keep"] < g["context"] == 64


def test_how_each_rule_reshapes_the_word_start_distribution(g):
    assert g["example_p_top_cold"] > g["example_p_top"] > g["example_p_top_hot"], "T<1 sharpens, T>1 flattens"
    assert 0 < g["example_mass_top5"] < 1
    assert g["example_kept_top_p"] > 5, "the nucleus at a word start holds more than top-5"
    assert g["example_entropy"] > 1.0


def test_nucleus_size_follows_the_models_confidence(g):
    assert g["nucleus_start_example"] >= 3 * g["nucleus_mid_example"]
    assert g["nucleus_start_median"] >= 3 * g["nucleus_mid_median"], "more kept at word starts than inside words"
    assert 0.1 < g["nucleus_single_share"] < 0.9
    assert g["nucleus_max"] >= 15
    assert g["k5_too_many_share"] > 0.2 and g["k5_too_few_share"] > 0.2, "a fixed k is wrong both ways"
    assert g["outside5_start_median"] > 0.2, "at a word start, top-5 discards real probability"


def test_greedy_decoding_loops(g):
    assert g["greedy_repeated_min"] > 0.2 and g["greedy_repeated_median"] > 0.3
    assert g["repeated_T10"] < 0.02 and g["repeated_T05"] < 0.02, "sampled text does not repeat itself"
    # "none of the sampled settings repeats a 10-gram in its median continuation": every one of them
    assert g["n_sampled_settings"] == 7, "five temperatures, top-k and the nucleus"
    assert g["max_repeated_sampled"] == 0
    for key in ("T05", "T10", "T15", "topk5", "topp09"):
        assert g[f"repeated_{key}"] == 0
    assert g["n_looping"] == g["n_prompts"], "every greedy continuation ends in an exact cycle"
    assert 1 <= g["n_cycles"] <= 2 and g["n_main_cycle"] >= 0.75 * g["n_prompts"], "mostly one attractor"
    assert 20 <= g["cycle_period"] and g["onset_max"] + 2 * g["cycle_period"] <= g["long_chars"]


def test_diversity_likelihood_tradeoff(g):
    assert g["distinct_monotone"] is True, "distinct-5 rises with temperature"
    assert g["loglik_monotone"] is True, "model log-likelihood falls with temperature"
    assert g["distinct_greedy"] < 0.5 < g["distinct_T15"]
    assert g["loglik_greedy"] > g["real_loglik"] + 0.5, "greedy text is far more probable than real text"
    assert g["known_T05"] > g["known_T15"] + 0.1
    # real text lies between the T = 1 and T = 1.25 samples; T = 1 samples score minus the model's entropy
    assert g["loglik_T10"] > g["real_loglik"] > g["loglik_T125"]
    assert g["sample_entropy_gap"] < 0.05
    assert g["mean_entropy_real"] < g["val_loss_T1"] - 0.1, "overconfident: entropy below loss"
    # truncation at T = 1: more likely and less diverse than plain sampling, close to the temperature curve
    assert g["loglik_topp09"] > g["loglik_T10"] and g["distinct_topp09"] < g["distinct_T10"]
    assert g["loglik_topk5"] > g["loglik_T10"] and g["distinct_topk5"] < g["distinct_T10"]
    assert abs(g["above_sweep_topp09"]) < 0.1 and abs(g["above_sweep_topk5"]) < 0.1


def test_temperature_does_not_improve_the_model(g):
    assert 1.0 < g["best_T"] <= 1.3, "best slightly above 1: the model is a little overconfident"
    assert 0 < g["best_T_gain"] < 0.03, "but the gain over T = 1 is small"
    assert g["val_loss_T05"] > g["val_loss_T1"] + 0.3, "cooling to T = 0.5 costs a lot"
    assert g["val_loss_T15"] > g["val_loss_T1"] - g["best_T_gain"]
    assert 0 < g["excluded_p09"] < g["excluded_p05"], "a smaller nucleus excludes the real character more often"
    assert 0 < g["excluded_k5"] < 0.25


def test_seeded_sampling_is_reproducible(g):
    assert g["same_seed_identical"] is True
    assert g["other_seed_agreement"] < 0.6
    assert g["global_unchanged"] is False and g["dedicated_unchanged"] is True
    assert g["repro_chars"] > 0


def test_exercise_solutions(g):
    assert g["entropy_derivative_error"] < 1e-5
    assert g["beam_logp"] > g["greedy_short_logp"], "beam search finds a more probable continuation"
    assert g["beam_logp"] - g["greedy_short_logp"] > 3, "by a clear margin over 30 characters"
    assert g["loglik_minp"] > g["loglik_T10"]
