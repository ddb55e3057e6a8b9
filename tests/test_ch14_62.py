"""§14.62: the claims its prose makes, asserted on the values its notebook glued."""


STEM = "14_62_forecasting_as_sequence_modelling"


def test_window_count_formula(g):
    assert g["n_windows_h1"] == g["n_windows_formula"] == g["n_h1"] - 168 - 48 + 1


def test_per_window_scaling_brings_series_to_one_scale(g):
    assert g["level_ratio"] > 100, "series levels differ by orders of magnitude"
    assert g["scaled_abs_p99"] < 5, "after scaling, values are of order one"


def test_rolling_origins_are_m4s(g):
    assert g["origins_back"] == "n-144, n-96, n-48"


def test_recursive_compounds_errors_direct_does_not_as_much(g):
    assert g["mase_global_recursive"] > g["mase_global_direct"]
    assert g["growth_global_recursive"] > g["growth_global_direct"] > 1


def test_local_linear_models_win_and_only_they_beat_seasonal_naive(g):
    snaive = g["mase_seasonal_naive"]
    assert g["mase_local_direct"] < snaive
    assert g["mase_local_direct"] < g["mase_global_direct"] and g["mase_local_direct"] < g["mase_global_recursive"]
    assert g["mase_global_direct"] > snaive and g["mase_global_recursive"] > snaive


def test_percentage_errors_fail_where_mase_does_not(g):
    assert g["mape_small_share"] > 0.5, "one near-zero actual dominates MAPE"
    assert g["smape_under"] > g["smape_over"], "sMAPE penalises under-forecasts more"
    assert g["mase_scale_diff"] < 1e-12, "MASE is scale-free"


def test_exercise_solutions(g):
    assert g["mase_mean_scaled"] > g["mase_global_direct"], "mean scaling is worse than standardising"
    assert g["leaked_hours"] > 0.5 * 48, "a random split leaks most test hours"
