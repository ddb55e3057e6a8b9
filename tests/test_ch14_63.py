"""§14.63: the claims its prose makes, asserted on the values its notebook glued, and the
cache's recorded test metrics."""

import pytest

from helpers import cache, m4benchmark

STEM = "14_63_neural_versus_classical_forecasting"


def test_cached_forecasts_are_what_the_shown_code_produces(g):
    assert g["demo_gap"] < 1e-5


def test_m4_anchor_reproduced_to_the_published_decimals(g):
    assert g["anchor_max_gap"] < 5e-4
    assert g["naive_mase"] == pytest.approx(11.608, abs=5e-4) and g["naive_smape"] == pytest.approx(43.003, abs=5e-4)
    assert g["snaive_mase"] == pytest.approx(1.193, abs=5e-4) and g["snaive_smape"] == pytest.approx(13.912, abs=5e-4)
    assert g["naive2_mase"] == pytest.approx(2.395, abs=5e-4) and g["naive2_smape"] == pytest.approx(18.383, abs=5e-4)


def test_ensemble_beats_every_classical_method_on_every_metric(g):
    assert g["nn_mase"] < g["min_classical_mase"]
    assert g["nn_owa"] < g["min_classical_owa"] == pytest.approx(g["best_classical_owa"])
    assert g["nn_smape"] < g["best_classical_smape"]
    assert 0 < g["owa_gain"] < 1


def test_issue_targets_met(g):
    assert g["nn_mase"] <= 0.80, "target: MASE <= 0.80 on the official test window"
    assert g["nn_owa"] <= 0.44, "target: OWA <= 0.44 (the ES-RNN hybrid's)"


def test_manifest_records_the_test_metrics_the_notebook_shows(g):
    metrics = cache.read_manifest(m4benchmark.CACHE_NAME)["metrics"]
    assert {"test_mase", "test_smape", "test_owa"} <= set(metrics)
    assert metrics["test_mase"] == pytest.approx(g["nn_mase"], rel=1e-6)
    assert metrics["test_smape"] == pytest.approx(g["nn_smape"], rel=1e-6)
    assert g["manifest_owa_gap"] < 1e-6


def test_member_settings_are_the_cached_config(g):
    common = m4benchmark.HEAVY_RUN["ensemble"]["common"]
    assert g["member_steps"] == f"{common['steps']:,}"


def test_seasonal_naive_beats_ets_and_theta(g):
    assert g["snaive_owa"] < g["ets_owa"] and g["snaive_owa"] < g["theta_owa"]


def test_inner_origins_agree_with_the_test(g):
    assert g["nn_best_at_all_origins"] is True
    assert g["nn_inner_owa_min"] <= g["nn_owa"] <= g["nn_inner_owa_max"], "the test is neither lucky nor unlucky"
    assert g["rank_corr"] > 0.7


def test_distribution_claims(g):
    assert g["nn_share_below_1"] > g["snaive_share_below_1"]
    assert 2 * g["top10_series_share"] < g["nn_top10_share"] < 0.5, "ten of 414 series carry a disproportionate share"


def test_win_rates(g):
    assert 0.5 < g["win_min"] < 0.9, "the ensemble wins on most series but not all"
    assert g["win_inner_min"] > 0.5


def test_median_of_members_beats_every_member_and_losses_win_their_metric(g):
    assert g["median_owa"] < g["best_member_owa"]
    assert g["smape_members_smape"] < g["mase_members_smape"]
    assert g["mase_members_mase"] < g["smape_members_mase"]


def test_rebuilt_models_reproduce_the_cached_forecasts(g):
    assert g["rebuilt_mase_gap"] < 0.01
    assert g["rebuilt_owa_gap"] < 1e-3


def test_exercise_solutions(g):
    assert g["combo_best"] == "median, all four"
    assert g["combo_mean_owa"] > g["median_owa"]
    assert min(g["combo_level_owa"], g["combo_seasonal_owa"]) > g["combo_mean_owa"]
    assert g["nn_owa"] < g["select_owa"] < g["best_classical_owa"], "selection helps, but not enough"
    assert g["select_most_common"] == g["best_classical"] and 0 < g["select_most_common_share"] < 1
