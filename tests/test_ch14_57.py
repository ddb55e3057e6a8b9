"""§14.57: the claims its prose makes, asserted on the values its notebook glued."""

import pytest

STEM = "14_57_tokenization"


def test_words_have_a_large_vocabulary_and_unknown_words(g):
    assert g["n_char_vocab"] == 65
    assert g["n_word_vocab"] > 100 * g["n_char_vocab"]
    assert 0.3 < g["word_hapax_share"] < 0.7, "a large share of word types occur once"
    assert 0.01 < g["word_oov_rate"] < 0.2 and g["word_oov_types"] > 100


def test_bpe_from_scratch_matches_and_round_trips(g):
    assert g["naive_equals_fast"] is True
    assert g["round_trip_val"] is True
    assert g["bpe_val_tokens"] * g["bpe_ratio_512"] == pytest.approx(g["n_val_chars"])
    assert 1.7 < g["bpe_ratio_512"] < 2.2
    assert g["first_merge"] == "' t'" and g["first_merge_count"] > 10_000


def test_toy_corpus_tie(g):
    # "es" and "st" each occur in six "newest" and three "widest"
    assert g["toy_tie_count"] == 6 + 3 and g["toy_n_tied"] == 2, "only es and st reach nine"


def test_vocabulary_size_trade_off(g):
    assert g["cpt_monotone"] is True, "more merges, fewer tokens"
    assert g["per_entry_monotone"] is True, "more tokens, fewer training examples each"
    assert g["cpt_256_512_gain"] > 2 * g["cpt_2048_4096_gain"] > 0, "diminishing returns"
    assert g["per_entry_256"] > 30 * g["per_entry_4096"]
    assert 2.5 < g["cpt_4096"] < 3.5
    assert g["n_bytes_used"] == g["n_char_vocab"] == 65, "tiny Shakespeare is ASCII: one byte per character"
    assert g["n_bytes_unused"] == 256 - g["n_bytes_used"]
    assert g["per_used_256"] == pytest.approx(g["per_entry_256"] * 256 / g["n_bytes_used"])
    assert g["per_used_256"] > 3 * g["per_entry_256"], "the unused bytes deflate the average"


def test_same_merges_as_hugging_face_up_to_ties(g):
    assert g["merges_same_set"] == g["n_merges"] == 256
    assert g["merges_same_rank"] >= 0.95 * g["n_merges"]
    assert g["merges_same_rank"] < g["n_merges"], "the prose explains a few tie swaps"
    assert g["n_swaps"] == g["n_merges"] - g["merges_same_rank"]
    assert g["swaps_are_ties"] is True, "every swapped pair of merges has equal counts"
    assert g["hf_val_tokens"] == g["bpe_val_tokens"]
    assert g["hf_round_trip"] is True


def test_byte_fallback(g):
    assert g["round_trip_probe"] is True
    assert g["emoji_tokens"] == g["emoji_bytes"] == 4
    assert g["cjk_tokens"] == 3
    assert g["cafe_decomposed_tokens"] > g["cafe_composed_tokens"]


def test_exercise_solutions(g):
    assert g["source_ratio"] < g["bpe_ratio_512"] - 0.2, "source code compresses worse than Shakespeare"
    assert g["length_identity_holds"] is True
    assert g["n_self_pair_merges"] >= 1, "the caveat about pairs (x, x) is not vacuous here"


def test_self_pair_merges_recounted(g):
    from helpers.data import load_tiny_shakespeare
    from helpers.tokenization import BPETokenizer, train_val_split

    train_text, _ = train_val_split(load_tiny_shakespeare())
    bpe = BPETokenizer.train(train_text, 512)
    assert g["n_self_pair_merges"] == sum(a == b for a, b in bpe.merges)
    assert g["first_merge_count"] == bpe.merge_counts[0]
    assert g["merge_counts_non_increasing"] is True
    assert g["tokyo_tokens"] == 15
