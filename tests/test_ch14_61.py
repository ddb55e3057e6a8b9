"""§14.61: the claims its prose makes, asserted on the values its notebook glued.

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the tests that
carry its id, from the glued values and the data glued beside them (``param_shapes``: every parameter
tensor of the three models; ``s2s_by_length``: the encoder–decoder's greedy results per word length;
``cross_source``, ``cross_argmax``, ``cross_expected``: the cross-attention figure's source tokens, each
output step's most-attended source position and the position it copies; ``seeds_data``: Solution 1's
CLM-vs-MLM sampling comparison, one row per seed and model), never from a boolean the notebook decided.
"""

import ast
import math

import pytest

STEM = "14_61_transformer_families"


def data(g, name):
    """A glued list or dict (written as its repr: glue takes scalars only)."""
    return ast.literal_eval(g[name])


def share(g, name):
    value = g[name]
    assert 0 <= value <= 1, f"{name} is a share"
    return value


# ------------------------------------------------------------------------------ masks and wiring

@pytest.mark.claim("mask-counts")
def test_the_masks_open_the_pairs_the_prose_counts(g):
    T, S, T_dec = g["T_ex"], g["S_ex"], g["T_dec_ex"]
    assert g["visible_encoder"] == T * T, "every pair open"
    assert g["visible_causal"] == T * (T + 1) // 2, "the diagonal and everything below it"
    assert g["visible_cross"] == T_dec * S and T_dec != S, "cross-attention is rectangular"
    assert g["visible_enc_self"] == S * S, "the encoder-decoder's own encoder: every pair open"


@pytest.mark.claim("prefix-count")
def test_the_prefix_lm_opens_the_prefix_block_and_the_causal_pairs_after_it(g):
    T, P = g["T_ex"], g["P_prefix"]
    assert 0 < P < T
    assert g["visible_prefix"] == P * P + sum(i + 1 for i in range(P, T)), "P x P block, then row i sees i + 1 keys"
    assert g["visible_causal"] < g["visible_prefix"] < g["visible_encoder"]


@pytest.mark.claim("same-parameters")
def test_encoder_only_and_decoder_only_have_the_same_tensors(g):
    shapes = data(g, "param_shapes")
    assert shapes["mlm"] == shapes["clm"], "the same names and shapes, in the same order"


@pytest.mark.claim("s2s-params")
def test_the_encoder_decoder_has_two_stacks_and_a_cross_attention_sublayer(g):
    shapes = data(g, "param_shapes")

    def size(params):
        return sum(math.prod(shape) for _, shape in params)

    assert g["s2s_param_ratio"] == pytest.approx(size(shapes["s2s"]) / size(shapes["clm"]), rel=1e-12)
    names = [name for name, _ in shapes["s2s"]]
    assert {name.split(".")[0] for name in names} == {"encoder", "decoder"}, "two stacks"
    assert any(".cross_attn." in n for n in names) and not any(".cross_attn." in n for n, _ in shapes["clm"])
    cross = [(n, s) for n, s in shapes["s2s"] if ".cross_attn." in n or ".ln_cross." in n]
    assert size(cross) > 0
    # two stacks give about twice the decoder-only count; the cross-attention sublayer adds to it
    assert 2 < g["s2s_param_ratio"] < 2 + 2 * size(cross) / size(shapes["clm"])


@pytest.mark.claim("dependence-is-mask")
def test_measured_dependence_reproduces_the_self_attention_masks(g):
    assert g["mlm_influence_share"] == 1.0, "encoder-only: every output depends on every input"
    assert g["clm_past_influence_share"] == 1.0
    assert g["clm_future_influence_share"] == 0.0


@pytest.mark.claim("s2s-dependence")
def test_measured_dependence_of_the_encoder_decoder(g):
    assert g["cross_influence_share"] == 1.0, "every output on every source token"
    assert g["dec_future_influence_share"] == 0.0, "none on its own future inputs"


# ------------------------------------------------------------------------------ training and floors

@pytest.mark.claim("clm-not-zero")
def test_the_clm_training_loss_stays_at_its_floor_not_zero(g):
    assert g["clm_loss_floor"] > 0
    assert g["clm_final_loss_train"] > 0.9 * g["clm_loss_floor"], "the CLM's curve does not go to zero"


@pytest.mark.claim("unpredictable-above-rate")
def test_the_forced_position_raises_the_unpredictable_share(g):
    p, T = g["mask_rate"], g["T_pal"]
    independent = (T - 1) / T * p  # the separator is hidden as often as a letter but never unpredictable
    expected = (T - 1) * ((T - 2) * p**2 + 2 * p) / (T * (1 + (T - 1) * p))
    assert g["share_independent"] == pytest.approx(independent, rel=1e-12)
    assert g["share_expected"] == pytest.approx(expected, rel=1e-12)
    assert g["share_expected"] > g["share_independent"], "the forced position raises the share"
    assert 1.25 < g["share_expected"] / g["share_independent"] < 4 / 3, "by almost a third"
    assert g["mlm_unpredictable_share"] > g["share_independent"], "... and so does the simulation"


@pytest.mark.claim("s2s-floor-zero")
def test_the_encoder_decoder_falls_far_below_the_other_floors(g):
    # its floor is zero: the source determines every target; its training loss ends orders of magnitude below the others'
    tail = data(g, "s2s_tail_losses")
    assert g["s2s_final_loss_train"] == pytest.approx(sum(tail) / len(tail), rel=1e-9), "the mean of the last steps"
    assert 0 < g["s2s_final_loss_train"] < 0.01
    assert g["s2s_final_loss_train"] < 0.05 * min(g["mlm_loss_floor"], g["clm_loss_floor"])


@pytest.mark.claim("share-draws")
def test_draws_of_the_masks_average_the_derived_share(g):
    draws = data(g, "share_draws")
    assert len(draws) == g["n_mask_draws"]
    mean = sum(draws) / len(draws)
    sd = math.sqrt(sum((d - mean) ** 2 for d in draws) / (len(draws) - 1))
    assert g["share_draws_mean"] == pytest.approx(mean, rel=1e-9) and g["share_draws_sd"] == pytest.approx(sd, rel=1e-9)
    # "as derived": the mean of the draws within three standard errors of the derived share
    assert abs(mean - g["share_expected"]) < 3 * sd / math.sqrt(len(draws))


@pytest.mark.claim("clm-near-floor")
def test_the_clm_reaches_its_derived_floor(g):
    n_letters, T = 8, g["T_pal"]
    n_random_targets = (T - 1) // 2 - 1  # first-half letters x_1 .. x_5 (x_0 is never a target)
    assert g["clm_loss_floor"] == pytest.approx(n_random_targets * math.log(n_letters) / (T - 1))
    assert g["clm_gap"] == pytest.approx(g["clm_heldout_loss"] / g["clm_loss_floor"] - 1, rel=1e-9)
    assert 0 <= g["clm_gap"] < 0.02, "nearly everything: within a few per cent, not below it"


@pytest.mark.claim("near-floors")
def test_the_mlm_is_close_to_its_floor_with_something_left(g):
    assert g["mlm_gap_heldout"] == pytest.approx(g["mlm_heldout_loss"] / g["mlm_loss_floor_heldout"] - 1, rel=1e-9)
    assert g["mlm_gap_derived"] == pytest.approx(g["mlm_heldout_loss"] / g["mlm_loss_floor"] - 1, rel=1e-9)
    # close (within a fifth of either floor) but clearly above both: something still to learn
    assert 0.03 < g["mlm_gap_heldout"] < g["mlm_gap_derived"] < 0.2
    assert g["mlm_gap_heldout"] > 2 * g["clm_gap"], "further from its floor than the CLM"
    # the caption: the MLM's per-batch losses scatter around its floor (an expectation over masks)
    mlm_tail = data(g, "mlm_tail_losses")
    assert min(mlm_tail) < g["mlm_loss_floor"]


@pytest.mark.claim("thinner-supervision", "hidden-rate")
def test_the_mlm_gets_a_few_targets_where_the_clm_gets_one_per_position(g):
    T, p = g["T_pal"], g["mask_rate"]
    assert g["clm_targets_per_seq"] == T - 1
    expected = 1 + (T - 1) * p  # one position always hidden, each other one with probability p
    assert abs(g["mlm_targets_per_seq"] - expected) < 0.1 * expected
    assert g["mlm_targets_per_seq"] < g["clm_targets_per_seq"], "thinner supervision: ... against the CLM's ..."
    assert g["mlm_hidden_share"] == pytest.approx(expected / T, rel=1e-12), "the exact expectation"
    assert g["mlm_hidden_share_measured"] == pytest.approx(g["mlm_targets_per_seq"] / T, rel=1e-12)
    assert abs(g["mlm_hidden_share_measured"] - g["mlm_hidden_share"]) < 0.1 * g["mlm_hidden_share"]
    assert g["mlm_hidden_share"] > 1.3 * p, "the forced position: well above the drawn rate"


# ------------------------------------------------------------------------------ filling gaps

@pytest.mark.claim("first-half-fill", "takeaway-gap-one-pass")
def test_in_one_pass_only_the_bidirectional_model_fills_the_first_half(g):
    assert g["chance"] == 1 / 8
    assert share(g, "mlm_first_half_acc") > 0.95
    assert abs(g["clm_first_half_acc"] - g["chance"]) < 0.2 * g["chance"], "the CLM's next-token read-out at chance"


@pytest.mark.claim("clm-scored", "cost-not-capability", "takeaway-gap")
def test_scoring_every_candidate_with_the_clm_fills_the_first_half(g):
    assert g["n_candidates"] == 8, "one forward pass per letter"
    assert share(g, "clm_scored_first_half_acc") > 0.95 and share(g, "clm_scored_min") > 0.9, "at every first-half position"
    assert g["clm_scored_first_half_acc"] > 5 * g["clm_first_half_acc"], "far above the one-pass read-out"


@pytest.mark.claim("second-half-both")
def test_both_models_fill_the_second_half(g):
    assert share(g, "mlm_second_half_acc") > 0.95 and share(g, "clm_second_half_acc") > 0.95


# ------------------------------------------------------------------------------ generating

@pytest.mark.claim("entropy-uniform", "entropy-close", "pred-entropy")
def test_generated_first_halves_are_near_uniform_and_mirror_halves_certain(g):
    assert math.log2(8) - 0.1 < g["gen_entropy_bits"] <= math.log2(8), "close to the 3 bits of the uniform"
    assert g["nucleus_mirror_half"] < 1.05, "certain where the data are determined"
    # the model's own next-token entropy: about 3 bits (uniform over 8) in the first half, near 0 in the mirror half
    assert abs(g["pred_entropy_first_half"] - math.log2(8)) < 0.1, "uncertain where the data are random"
    assert g["pred_entropy_mirror_half"] < 0.1 * g["pred_entropy_first_half"], "certain where they are determined"
    by_step = data(g, "pred_entropy_by_step")  # column t predicts x_{t+1}
    half = (g["T_pal"] - 1) // 2
    assert g["pred_entropy_first_half"] == pytest.approx(sum(by_step[: half - 1]) / (half - 1), rel=1e-5)
    assert g["pred_entropy_mirror_half"] == pytest.approx(sum(by_step[half:]) / half, rel=1e-5)


@pytest.mark.claim("tail-mistakes")
def test_a_few_samples_at_temperature_one_are_invalid(g):
    invalid = 1 - share(g, "gen_valid_share")
    assert 0 < invalid < 0.15, "some, not many: a little probability left on wrong letters"
    parts = [g["clm_fail_first_half"], g["clm_fail_separator"], g["clm_fail_mirror"]]
    assert sum(parts) == g["clm_invalid_n"] == round(g["n_fresh"] * invalid), "every invalid sample counted once"
    assert g["clm_fail_mirror"] > g["clm_invalid_n"] / 2, "mostly at wrong letters in the mirror half"
    assert g["nucleus_mirror_half"] > 1, "in the mirror half the top letter sometimes holds under top_p"


@pytest.mark.claim("nucleus-keeps", "nucleus-sizes")
def test_the_nucleus_keeps_the_first_half_and_cuts_the_mirror_half(g):
    # at most (8 - mean) of the first-half steps keep fewer than eight letters
    assert 8 - 0.1 < g["nucleus_first_half"] <= 8, "almost always all eight"
    assert 1 <= g["nucleus_mirror_half"] < 1.05, "the mirror half: (almost always) one letter"


@pytest.mark.claim("top-p-valid")
def test_top_p_removes_the_mistakes_and_keeps_the_randomness(g):
    assert share(g, "gen_valid_share_top_p") > g["gen_valid_share"]
    assert g["gen_valid_share_top_p"] > 0.99
    assert math.log2(8) - 0.1 < g["gen_entropy_bits_top_p"] <= math.log2(8)


@pytest.mark.claim("takeaway-sampling")
def test_the_clm_generates_mostly_valid_palindromes_with_random_halves(g):
    assert share(g, "gen_valid_share") < 1
    assert g["gen_distinct"] > 0.95 * g["gen_n"] and g["gen_distinct"] <= g["gen_n"]
    assert g["gen_entropy_bits"] > math.log2(8) - 0.1


@pytest.fixture
def seeds(g):
    """Solution 1's comparison: {(seed, model): row}, rows as glued (valid shares, first-half counts, failures)."""
    rows = data(g, "seeds_data")
    assert len({r["seed"] for r in rows}) == g["n_seeds"] and len(rows) == 2 * g["n_seeds"]
    return {(r["seed"], r["model"]): r for r in rows}


def seed_list(seeds):
    return sorted({seed for seed, _ in seeds})


@pytest.mark.claim("seeds-gap")
def test_the_clm_is_ahead_of_the_mlm_in_every_seed_by_a_small_margin(g, seeds):
    n = g["n_fresh"]
    gaps = [100 * (seeds[s, "CLM"]["valid"] - seeds[s, "MLM"]["valid"]) for s in seed_list(seeds)]
    assert g["seeds_gap_min"] == pytest.approx(min(gaps)) and g["seeds_gap_max"] == pytest.approx(max(gaps))
    assert min(gaps) > 0, "the CLM writes more valid palindromes in every seed"
    p_c = sum(seeds[s, "CLM"]["valid"] for s in seed_list(seeds)) / g["n_seeds"]
    p_m = sum(seeds[s, "MLM"]["valid"] for s in seed_list(seeds)) / g["n_seeds"]
    se = 100 * math.sqrt(p_c * (1 - p_c) / n + p_m * (1 - p_m) / n)
    assert g["seeds_gap_se"] == pytest.approx(se)
    assert min(gaps) > se, "consistent: every gap beyond one standard error of the sampling noise"
    assert max(gaps) < 5, "small: a few percentage points"


@pytest.mark.claim("seeds-top-p")
def test_with_top_p_both_models_are_always_valid(g, seeds):
    values = [r["valid_top_p"] for r in seeds.values()]
    assert g["seeds_top_p_min"] == min(values) == 1.0, "both models, every seed"


@pytest.mark.claim("seeds-fail-mirror")
def test_most_failures_of_both_models_start_at_a_mirror_letter(g, seeds):
    shares = []
    for r in seeds.values():
        assert sum(r["fails"]) == round(g["n_fresh"] * (1 - r["valid"])), "every invalid sample counted once"
        shares.append(r["fails"][2] / sum(r["fails"]))
    assert g["seeds_fail_mirror_min"] == pytest.approx(min(shares))
    assert min(shares) > 0.5, "most of each model's failures, in every seed"


@pytest.mark.claim("mlm-first-half-counts")
def test_the_mlm_first_half_letters_against_the_uniform_count(g, seeds):
    counts = seeds[seed_list(seeds)[0], "MLM"]["counts"]  # the section's own seed (the others follow it)
    assert len(counts) == 8
    assert g["mlm_count_most"] == max(counts) and g["mlm_count_least"] == min(counts)
    assert g["mlm_count_expected"] == pytest.approx(sum(counts) / 8)


@pytest.mark.claim("seeds-chi2", "clm-chi2", "first-half-separates")
def test_the_mlm_first_half_is_further_from_uniform_than_the_clm_in_every_seed(g, seeds):
    from scipy.stats import chi2

    for r in seeds.values():
        e = sum(r["counts"]) / len(r["counts"])
        assert r["chi2"] == pytest.approx(sum((c - e) ** 2 / e for c in r["counts"]))
    mlm = [seeds[s, "MLM"]["chi2"] for s in seed_list(seeds)]
    clm = [seeds[s, "CLM"]["chi2"] for s in seed_list(seeds)]
    assert g["mlm_chi2_min"] == pytest.approx(min(mlm)) and g["mlm_chi2_max"] == pytest.approx(max(mlm))
    assert g["clm_chi2_min"] == pytest.approx(min(clm)) and g["clm_chi2_max"] == pytest.approx(max(clm))
    assert g["chi2_crit"] == pytest.approx(chi2.ppf(1 - g["chi2_alpha"], df=7))
    assert min(mlm) > max(clm), "every MLM value above every CLM value"
    assert min(mlm) > g["chi2_crit"], "the MLM's letters uneven in every seed"
    above = sum(c > g["chi2_crit"] for c in clm)
    assert g["clm_chi2_above"] == above, "this many CLM values above the threshold too"
    assert 0 < above < g["n_seeds"]


@pytest.mark.claim("seeds-entropy", "takeaway-sampling")
def test_both_models_first_halves_are_within_a_fraction_of_a_bit_of_uniform(g, seeds):
    def bits(counts):
        n = sum(counts)
        return -sum(c / n * math.log2(c / n) for c in counts if c)

    assert g["uniform_bits"] == math.log2(8)
    by_model = {m: [bits(seeds[s, m]["counts"]) for s in seed_list(seeds)] for m in ("CLM", "MLM")}
    glued = data(g, "seeds_entropy")
    for m in ("CLM", "MLM"):
        assert glued[m] == pytest.approx(by_model[m], rel=1e-9)
    assert g["clm_entropy_min"] == pytest.approx(min(by_model["CLM"])) and g["clm_entropy_max"] == pytest.approx(max(by_model["CLM"]))
    assert g["mlm_entropy_min"] == pytest.approx(min(by_model["MLM"])) and g["mlm_entropy_max"] == pytest.approx(max(by_model["MLM"]))
    # small imbalances: every seed within a fraction of a bit of the uniform 3 bits, the CLM closer than the MLM
    assert g["uniform_bits"] - 0.05 < g["clm_entropy_min"] <= g["clm_entropy_max"] <= g["uniform_bits"]
    assert g["uniform_bits"] - 0.25 < g["mlm_entropy_min"] <= g["mlm_entropy_max"] < g["clm_entropy_min"]


# ------------------------------------------------------------------------------ sequence to sequence

@pytest.mark.claim("s2s-exact", "takeaway-s2s")
def test_the_encoder_decoder_maps_every_length_exactly(g):
    rows = data(g, "s2s_by_length")
    assert [n for n, *_ in rows] == [3, 4, 5, 6]
    words = sum(count for _, count, _, _ in rows)
    assert words == g["n_fresh"]
    assert g["s2s_exact"] == pytest.approx(sum(count * exact for _, count, exact, _ in rows) / words)
    assert g["s2s_exact_min_by_length"] == min(exact for _, _, exact, _ in rows)
    assert all(exact == 1.0 for _, _, exact, _ in rows) and g["s2s_exact"] == 1.0, "every word, every length"
    assert g["s2s_eos_at_end"] == 1.0, "<eos> itself written at step 2n + 1, not only the letters before it"


@pytest.mark.claim("length-ratio", "takeaway-s2s")
def test_the_output_length_follows_the_input_length(g):
    rows = {n: length for n, _, _, length in data(g, "s2s_by_length")}
    for n, length in rows.items():
        assert length == pytest.approx(2 * n + 1, abs=0.05), "w|w^R: 2n + 1 letters before <eos>"


@pytest.mark.claim("cross-v")
def test_cross_attention_traces_the_v_and_ends_on_eos(g):
    source, argmax, expected = data(g, "cross_source"), data(g, "cross_argmax"), data(g, "cross_expected")
    n = source.index("<eos>")
    assert len(argmax) == len(expected) == 2 * n + 2
    forward, backward = range(n), range(n + 1, 2 * n + 1)
    assert [expected[t] for t in forward] == list(range(n)) and [expected[t] for t in backward] == list(range(n))[::-1]
    # down the diagonal while copying forwards, then back up it while copying in reverse
    assert all(argmax[t] == expected[t] for t in forward)
    assert sum(argmax[t] == expected[t] for t in backward) > len(backward) / 2
    assert source[argmax[-1]] == "<eos>", "the last step looks at the source's <eos>"
    hits = [a == e for a, e in zip(argmax, expected) if e is not None]
    assert g["cross_alignment_steps"] == len(hits) == g["cross_letter_steps"] + 1, "the letters and the closing <eos>"
    assert g["cross_alignment_share"] == pytest.approx(sum(hits) / len(hits))
    assert g["cross_alignment_hits"] == sum(hits) < len(hits), "most steps, not all"


@pytest.mark.claim("cross-misses")
def test_the_missed_steps_look_at_the_source_eos(g):
    source, argmax, expected = data(g, "cross_source"), data(g, "cross_argmax"), data(g, "cross_expected")
    misses = [a for a, e in zip(argmax, expected) if e is not None and a != e]
    assert misses and all(source[a] == "<eos>" for a in misses)


@pytest.mark.claim("cross-many")
def test_the_averaged_map_and_each_head_find_the_copied_position(g):
    assert 0.5 < share(g, "cross_alignment_share_many") < 1, "most copy steps, not all, by position"
    words = data(g, "cross_many_words")
    assert g["cross_alignment_words"] == len(words) and all(len(w) == g["n_half"] for w in words)
    by_head = data(g, "cross_pos_by_head")  # the same position metric, one head at a time
    assert len(by_head) == 2, "one head and the other"
    assert g["cross_head_best_pos"] == max(by_head) and g["cross_head_worst_pos"] == min(by_head)
    assert all(0 <= v <= 1 for v in by_head)


@pytest.mark.claim("cross-heads")
def test_some_head_finds_every_copied_position_the_average_misses(g):
    by_head = data(g, "cross_pos_by_head")
    some = share(g, "cross_some_head_pos_share")
    assert some >= max(by_head), "some head: at least the better head's hits"
    assert some > 0.99, "some head finds the copied position at (nearly) every step"
    assert g["cross_alignment_share_many"] < some - 0.1, "the head-averaged map misses steps a head gets right"


@pytest.mark.claim("clm-prompted")
def test_the_decoder_only_model_does_the_mapping_from_a_prompt(g):
    assert share(g, "clm_completion_exact") > 0.95


@pytest.mark.claim("dec-s2s-size")
def test_the_decoder_only_seq2seq_model_has_as_many_blocks_and_about_the_same_size(g):
    shapes = data(g, "param_shapes")
    s2s_blocks = {tuple(name.split(".")[:3]) for name, _ in shapes["s2s"] if ".blocks." in name}
    assert g["n_layers_dec"] == len(s2s_blocks), "one block in the encoder, one in the decoder"
    assert g["s2s_params"] == sum(math.prod(shape) for _, shape in shapes["s2s"])
    assert g["dec_s2s_param_ratio"] == pytest.approx(g["dec_s2s_params"] / g["s2s_params"], rel=1e-12)
    assert 0.75 < g["dec_s2s_param_ratio"] < 1.25, "roughly matched"


@pytest.mark.claim("dec-s2s-exact", "dec-s2s-one-short", "design-choice", "takeaway-dec-s2s")
def test_a_decoder_only_model_learns_the_variable_length_task_with_one_seed_short(g):
    rows = data(g, "seq2seq_rows")  # (seed, encoder-decoder exact share, decoder-only exact share)
    assert len(rows) == g["n_seeds_s2s"] == 2 and rows[0][1] == g["s2s_exact"], "seed 0: the encoder-decoder above"
    dec = [r[2] for r in rows]
    assert g["dec_s2s_exact"] == dec[0] and g["dec_s2s_exact_min"] == min(dec) and g["dec_s2s_exact_max"] == max(dec)
    assert g["s2s_exact_seeds_min"] == min(r[1] for r in rows) == 1.0, "the encoder-decoder: every word, both seeds"
    assert share(g, "dec_s2s_exact") > 0.95, "it learns the task, stopping included (section's seed)"
    assert abs(rows[0][2] - rows[0][1]) < 0.01, "the section's seed: level with the encoder-decoder"
    assert g["dec_s2s_exact_min"] == dec[1] and dec[1] < rows[1][1] - 0.05, "the other seed: short of it"
    assert share(g, "dec_s2s_exact_min") > 0.5, "it still learns most of it"


@pytest.mark.claim("dec-s2s-targets", "takeaway-dec-s2s")
def test_the_decoder_only_model_gets_about_half_the_targets(g):
    mean_n = (g["n_min"] + g["n_max"]) / 2  # word lengths uniform from n_min to n_max
    assert abs(g["dec_s2s_targets_per_seq"] - (mean_n + 1)) < 0.1 * (mean_n + 1), "n + 1: w^R and <eos>"
    assert abs(g["s2s_targets_per_seq"] - (2 * mean_n + 2)) < 0.1 * (2 * mean_n + 2), "2n + 2: w | w^R <eos>"
    assert 1.8 < g["s2s_targets_per_seq"] / g["dec_s2s_targets_per_seq"] < 2.2, "about twice as many"


# ------------------------------------------------------------------------------ exercise solutions

@pytest.mark.claim("deep-causal")
def test_a_three_layer_causal_stack_stays_causal(g):
    assert g["deep_future_influence_share"] == 0.0 and g["deep_past_influence_share"] == 1.0


@pytest.mark.claim("pairs-check", "prefix-pairs")
def test_pair_counts_of_the_two_sequence_to_sequence_designs(g):
    S, T = g["S_ex"], g["T_dec_ex"]
    assert g["pairs_s2s_formula"] == g["pairs_s2s_masks"] == S**2 + T * (T + 1) // 2 + T * S
    assert g["pairs_dec_formula"] == g["pairs_dec_mask"] == (S + T) * (S + T + 1) // 2
    assert g["pairs_s2s_formula"] - g["pairs_dec_formula"] == S * (S - 1) // 2
    assert g["pairs_prefix_mask"] == g["pairs_s2s_formula"], "a prefix LM uses exactly the encoder-decoder's pairs"


@pytest.mark.claim("seeds-gap-budget")
def test_the_validity_comparison_is_at_equal_steps_not_equal_targets(g):
    assert g["clm_targets_per_seq"] == g["T_pal"] - 1, "a target at every position after the first"
    assert g["mlm_targets_per_seq"] < g["clm_targets_per_seq"] / 3, "the MLM: a fraction of the CLM's targets"


@pytest.mark.claim("uniform-chi2")
def test_masking_at_every_rate_removes_the_first_half_skew(g, seeds):
    rows = data(g, "uniform_data")
    assert len(rows) == g["n_seeds_uniform"] == 2
    for r in rows:
        e = sum(r["counts"]) / len(r["counts"])
        assert r["chi2"] == pytest.approx(sum((c - e) ** 2 / e for c in r["counts"]))
    uni = [r["chi2"] for r in rows]
    same = [seeds[r["seed"], "MLM"]["chi2"] for r in rows]  # the section's MLM, the same seeds
    clm = [seeds[s, "CLM"]["chi2"] for s in seed_list(seeds)]
    assert g["uniform_chi2_min"] == pytest.approx(min(uni)) and g["uniform_chi2_max"] == pytest.approx(max(uni))
    assert g["mlm_chi2_same_min"] == pytest.approx(min(same)) and g["mlm_chi2_same_max"] == pytest.approx(max(same))
    assert max(uni) < min(same) / 2, "far below the section's MLM with the same seeds"
    assert min(clm) <= min(uni) and max(uni) <= max(clm), "within the CLM's range"


@pytest.mark.claim("uniform-valid")
def test_masking_at_every_rate_lowers_the_valid_share_after_the_same_steps(g, seeds):
    rows = data(g, "uniform_data")
    valid = [r["valid"] for r in rows]
    same = [seeds[r["seed"], "MLM"]["valid"] for r in rows]
    assert g["uniform_valid_min"] == pytest.approx(min(valid)) and g["uniform_valid_max"] == pytest.approx(max(valid))
    assert g["mlm_valid_same_min"] == pytest.approx(min(same)) and g["mlm_valid_same_max"] == pytest.approx(max(same))
    assert max(valid) < min(same), "below the section's MLM in every seed"
    targets = sum(r["targets"] for r in rows) / len(rows)
    assert g["uniform_targets_per_seq"] == pytest.approx(targets)
    assert targets > g["mlm_targets_per_seq"], "although it got more targets per sequence"
