"""§14.57: the claims its prose makes, asserted on the values its notebook glued.

Each verdict sentence of the notebook is marked ``<!-- claim: id -->`` and asserted here by the tests that
carry its id, from the data the notebook glued (merge lists, the vocabulary-size table, the fallback
table, digests of decoded texts; lists glued as their repr) or from a tokenizer the tests train afresh,
never from a boolean the notebook decided. Timings are printed by the notebook and never tested.
"""

import ast
import hashlib
import unicodedata
from collections import Counter

import pytest

STEM = "14_57_tokenization"


def data(g, name):
    """A glued list or dict (written as its repr: glue takes scalars only)."""
    return ast.literal_eval(g[name])


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def table(g):
    """tradeoff_table as {vocabulary size: (characters per token, training tokens per entry)}."""
    return {v: (cpt, per) for v, cpt, per in data(g, "tradeoff_table")}


@pytest.mark.claim("word-hapax")
def test_words_have_a_large_vocabulary_and_unknown_words(g):
    assert g["n_char_vocab"] == 65
    assert 0 < g["word_hapax_share"] < 1 and g["word_oov_rate"] > 0, "... occur only once; ... of the validation words have no id"


@pytest.mark.claim("char-no-unknown")
def test_character_tokenizer_meets_no_unknown_symbol(g, corpus):
    from helpers.tokenization import CharTokenizer

    train, val = corpus["train_text"], corpus["val_text"]
    assert set(val) <= set(train), "every validation character was seen in training"
    chars = CharTokenizer.fit(train)
    assert chars.vocab_size == g["n_char_vocab"] == len(set(train))
    assert g["n_char_vocab"] * 100 < g["n_word_vocab"], "tiny next to the word vocabulary"
    assert len(chars.encode(val)) == len(val), "as long as the text"


@pytest.mark.claim("val-round-trip")
def test_bpe_round_trips_the_validation_text(g, corpus, bpe512):
    val = corpus["val_text"]
    assert g["val_decoded_sha256"] == sha256(val), "the notebook's decoded validation text is the text"
    ids = bpe512.encode(val)
    assert bpe512.decode(ids) == val and len(ids) == g["bpe_val_tokens"]
    assert g["n_val_chars"] == len(val)
    assert g["bpe_val_tokens"] * g["bpe_ratio_512"] == pytest.approx(g["n_val_chars"])
    assert g["first_merge"] == "' t'"


@pytest.mark.claim("toy-est-first", "toy-low-new")
def test_toy_corpus_merges(g):
    from helpers.tokenization import BPETokenizer, pretokenize

    merges = data(g, "toy_merges")
    # "es" and "st" each occur in six "newest" and three "widest"
    assert g["toy_tie_count"] == 6 + 3 and g["toy_n_tied"] == 2, "only es and st reach nine"
    toy = " ".join(["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3)
    pairs = Counter()
    for chunk in pretokenize(toy):
        pairs.update(zip(chunk, chunk[1:]))
    top = max(pairs.values())
    assert top == g["toy_tie_count"] and sorted(p for p, c in pairs.items() if c == top) == [("e", "s"), ("s", "t")]
    assert merges[:2] == [("e", "s", top), ("es", "t", top)], "est first, es chosen by the tie-break"
    new = [left + right for left, right, _ in merges]
    assert new[2:4] == ["lo", "low"], "then comes low"
    assert new.index(" low") > new.index("low") and " new" in new
    assert all(" " not in t[1:] for t in new), "the space joins the following word"
    counts = [c for _, _, c in merges]
    assert all(a >= b for a, b in zip(counts, counts[1:]))
    # the library's incremental trainer replays the table
    fast = BPETokenizer.train(toy, 256 + len(merges))
    assert [(fast.token_str(a), fast.token_str(b), c) for (a, b), c in zip(fast.merges, fast.merge_counts)] == merges


@pytest.mark.claim("incremental-same", "slice-identical", "takeaway-same-merges")
def test_incremental_trainer_learns_the_plain_trainers_merges(g, corpus):
    from helpers.tokenization import BPETokenizer

    naive = data(g, "naive_merges")
    assert len(naive) > 50
    fast = BPETokenizer.train(corpus["train_text"][: g["slice_chars"]], 256 + len(naive)).merges
    assert fast == naive


@pytest.mark.claim("tokens-not-morphemes", "king-two-spellings")
def test_tokens_are_frequent_byte_strings(corpus, bpe512):
    vocab = set(bpe512.token_bytes)
    assert b" the" in vocab and b"ing" in vocab, "a word and an ending"
    # many merged tokens are no word of the training text, with or without a leading space
    words = corpus["word_counts"]
    merged = [bpe512.token_bytes[i].decode("utf-8") for i in range(256, 512)]
    fragments = [t for t in merged if t.strip() not in words and " " + t.strip() not in words]
    assert len(fragments) > len(merged) / 4

    def pieces(s):
        return [bpe512.token_str(i) for i in bpe512.encode(s)]

    assert pieces(" king") == [" king"] and pieces("king") != ["king"], "cut differently without the space"
    assert len(pieces(" King")) > len(pieces(" king")), "cut differently with a capital"
    assert not set(bpe512.encode(" King")) & set(bpe512.encode("KING")), "no token in common"


@pytest.mark.claim("more-merges-shorter", "fewer-examples", "count-falls", "takeaway-doublings")
def test_vocabulary_size_trade_off_from_the_table(g, table, chars_per_token):
    sizes = sorted(table)
    cpt = [table[v][0] for v in sizes]
    per_entry = [table[v][1] for v in sizes]
    assert all(a < b for a, b in zip(cpt, cpt[1:])), "more merges, longer tokens, shorter sequences"
    assert all(a > b for a, b in zip(per_entry, per_entry[1:])), "more tokens, fewer training examples each"
    for v, recounted in chars_per_token.items():
        assert table[v][0] == pytest.approx(recounted, rel=1e-9), v
    assert per_entry[0] == g["per_entry_256"] and per_entry[-1] == g["per_entry_4096"]
    assert table[4096][0] == g["cpt_4096"] and table[512][0] == g["bpe_ratio_512"]
    assert g["per_entry_256"] > g["per_entry_4096"], "the average token's training count falls from ... to ..."


@pytest.mark.claim("unused-bytes")
def test_unused_bytes_deflate_the_average(g, corpus):
    used = set(corpus["train_text"].encode("utf-8"))
    assert g["n_bytes_used"] == len(used) == g["n_char_vocab"] == 65, "tiny Shakespeare is ASCII: one byte per character"
    assert g["n_bytes_unused"] == 256 - len(used)
    assert g["per_used_256"] == pytest.approx(g["per_entry_256"] * 256 / g["n_bytes_used"])
    assert g["per_used_256"] > 3 * g["per_entry_256"], "the unused bytes deflate the average"


@pytest.mark.claim("char-rows-trained")
def test_character_embedding_rows_are_trained_on_thousands_on_average(g, corpus):
    counts = Counter(corpus["train_text"])
    assert len(counts) == g["n_char_vocab"]
    assert 1_000 < len(corpus["train_text"]) / len(counts) < 100_000, "thousands on average"
    assert {c for c, n in counts.items() if n < 100} == {"$", "&", "3"}, "all but a few rare symbols: hundreds"


@pytest.mark.claim("hf-same-merges", "takeaway-same-merges")
def test_same_merges_as_hugging_face(g, bpe512):
    ours, hf = data(g, "our_merges_bytes"), data(g, "hf_merges_bytes")
    assert ours == [(bpe512.token_bytes[a], bpe512.token_bytes[b]) for a, b in bpe512.merges]
    assert len(ours) == len(hf) == g["n_merges"] == 256
    assert set(ours) == set(hf) and len(set(ours)) == g["merges_same_set"]
    assert sum(o == h for o, h in zip(ours, hf)) == g["merges_same_rank"]
    assert g["merges_same_rank"] < g["n_merges"], "the same ... of ... merges, ... of them at the same rank"


@pytest.mark.claim("swaps-ties", "takeaway-same-merges")
def test_the_swaps_are_ties(g):
    ours, hf = data(g, "our_merges_bytes"), data(g, "hf_merges_bytes")
    counts, ids = data(g, "merge_counts_512"), data(g, "merges_512")
    differ = [k for k, (o, h) in enumerate(zip(ours, hf)) if o != h]
    assert len(differ) == g["n_swaps"] == g["n_merges"] - g["merges_same_rank"] > 0
    rank = {m: k for k, m in enumerate(ours)}
    for k in differ:
        assert counts[rank[hf[k]]] == counts[k], f"rank {k + 1}: the library's merge has our count there"
    # the swaps are adjacent pairs of tied merges; ours puts the smaller ids first, the library the
    # pair without a leading space (its Ġ sorts after the letters)
    firsts = differ[::2]
    assert differ == [k + d for k in firsts for d in (0, 1)]
    for k in firsts:
        assert (ours[k], ours[k + 1]) == (hf[k + 1], hf[k]) and counts[k] == counts[k + 1]
        assert ids[k] < ids[k + 1]
        assert ours[k][0] == b" " and not hf[k][0].startswith(b" ")


@pytest.mark.claim("hf-same-length")
def test_hugging_face_cuts_the_validation_text_into_as_many_tokens(g, corpus):
    assert g["hf_val_tokens"] == g["bpe_val_tokens"]
    assert g["hf_val_decoded_sha256"] == sha256(corpus["val_text"]), "the library round-trips it too"


@pytest.mark.claim("falls-back", "unseen-as-bytes", "rose-cjk-cost")
def test_byte_fallback(g, corpus, bpe512):
    seen = set(corpus["train_text"])
    table = data(g, "fallback_table")
    assert [c for c, _, _ in table] == ["e", "é", "\u0301", "東", "🌹"]
    for c, n_bytes, n_tokens in table:
        assert n_bytes == len(c.encode("utf-8")) and n_tokens == len(bpe512.encode(c)), c
        if c not in seen:
            assert bpe512.encode(c) == list(c.encode("utf-8")), "its UTF-8 bytes, each a base token"
            assert 1 <= n_tokens == n_bytes <= 4
    assert sum(c not in seen for c, _, _ in table) == 4
    assert g["emoji_tokens"] == g["emoji_bytes"] == len(bpe512.encode("🌹")) == 4
    assert g["cjk_tokens"] == len(bpe512.encode("東")) == 3


@pytest.mark.claim("probe-round-trip")
def test_probe_round_trips_without_unknown_tokens(g, bpe512):
    probe, ids = g["probe"], data(g, "probe_ids")
    assert g["probe_decoded"] == probe
    assert bpe512.encode(probe) == ids and bpe512.decode(ids) == probe
    assert bpe512.vocab_size == 256 + len(bpe512.merges), "bytes and merges only: no <unk> entry"
    emoji = list("🌹".encode("utf-8"))
    assert any(ids[i:i + len(emoji)] == emoji for i in range(len(ids))), "the rose as its bytes"


@pytest.mark.claim("cafe-two-ways")
def test_cafe_spelled_two_ways(g, bpe512):
    composed, decomposed = " caf\u00e9", " cafe\u0301"
    assert composed != decomposed and unicodedata.normalize("NFC", decomposed) == composed
    assert g["cafe_composed_tokens"] == len(bpe512.encode(composed))
    assert g["cafe_decomposed_tokens"] == len(bpe512.encode(decomposed))
    assert g["cafe_decomposed_tokens"] > g["cafe_composed_tokens"]
    # the combining accent is two UTF-8 bytes where the precomposed letter's pair may have been merged
    assert g["cafe_decomposed_tokens"] - g["cafe_composed_tokens"] <= 2


@pytest.mark.claim("unseen-script-cost", "tokyo-bytes")
def test_an_unseen_script_costs_several_times_more_per_character(g, corpus, bpe512):
    tokyo = "東京タワー"
    assert not set(tokyo) & set(corpus["train_text"])
    assert bpe512.encode(tokyo) == list(tokyo.encode("utf-8")), "byte by byte: no merge covers them"
    assert g["tokyo_tokens"] == len(tokyo.encode("utf-8")) == 3 * len(tokyo), "three bytes per character"
    table = data(g, "fallback_table")
    assert all(2 <= n <= 4 for c, _, n in table if not c.isascii()), "two to four tokens per character"
    per_char_tokyo = g["tokyo_tokens"] / len(tokyo)
    per_char_english = 1 / g["bpe_ratio_512"]
    assert per_char_tokyo > 3 * per_char_english, "several times as many tokens per character"


@pytest.mark.claim("source-worse")
def test_source_code_compresses_far_worse(g, bpe512):
    import helpers.tokenization as tokenization_module

    source = open(tokenization_module.__file__, encoding="utf-8").read()
    ids = bpe512.encode(source)
    assert g["source_ratio"] == pytest.approx(len(source) / len(ids), rel=1e-12)
    # far worse: its gain over one character per token is less than half the validation text's
    assert g["source_ratio"] - 1 < (g["bpe_ratio_512"] - 1) / 2
    src, val = data(g, "source_token_lengths"), data(g, "val_token_lengths")
    assert sum(src.values()) == len(ids) and sum(val.values()) == g["bpe_val_tokens"]
    assert src == dict(Counter(len(bpe512.token_bytes[i]) for i in ids))

    def short(lengths):
        return (lengths.get(1, 0) + lengths.get(2, 0)) / sum(lengths.values())

    assert short(src) > 0.8 and short(src) > short(val), "much of it in one- and two-byte tokens"


@pytest.mark.claim("source-longest")
def test_source_codes_longest_tokens_are_shakespeares_words(g, corpus):
    longest = data(g, "source_longest")
    assert len(longest) == 8
    for token in longest:
        assert token[0] == " " and token[1:].isalpha() and token in corpus["word_counts"], token


@pytest.mark.claim("identity-exact", "counts-fall")
def test_length_identity_and_falling_counts(g, corpus, bpe512):
    counts, merges = data(g, "merge_counts_512"), data(g, "merges_512")
    assert counts == bpe512.merge_counts and merges == bpe512.merges
    assert g["n_train_bytes"] == len(corpus["train_text"].encode("utf-8"))
    assert g["n_train_tokens"] == g["n_train_bytes"] - sum(counts), "N minus the merged counts, exactly"
    assert all(a >= b for a, b in zip(counts, counts[1:])), "c_(k+1) <= c_k"
    assert g["n_self_pair_merges"] == sum(a == b for a, b in merges) >= 1
    assert (ord("l"), ord("l")) in merges, "such as ll"
    assert g["n_self_pair_merges"] >= 1, "the caveat about pairs (x, x) is not vacuous here"
    assert g["first_merge_count"] == counts[0]


@pytest.mark.claim("validation-convex")
def test_validation_length_loses_less_per_added_token(g, table):
    sizes = sorted(table)
    length = [g["n_val_chars"] / table[v][0] for v in sizes]
    assert all(a > b for a, b in zip(length, length[1:]))
    per_token = [(length[i] - length[i + 1]) / (sizes[i + 1] - sizes[i]) for i in range(len(sizes) - 1)]
    assert all(a > b > 0 for a, b in zip(per_token, per_token[1:]))


@pytest.mark.claim("source-worse")
def test_exercise_solutions(g):
    assert g["source_ratio"] < g["bpe_ratio_512"], "the source code compresses far worse than the validation text"


@pytest.fixture(scope="module")
def corpus():
    """The notebook's split of tiny Shakespeare and its word counts (no glued value)."""
    from helpers.data import load_tiny_shakespeare
    from helpers.tokenization import pretokenize, train_val_split

    train_text, val_text = train_val_split(load_tiny_shakespeare(), frac=0.9)
    word_counts = Counter(pretokenize(train_text))
    val_words = pretokenize(val_text)
    unknown = [w for w in val_words if w not in word_counts]
    return {"train_text": train_text, "val_text": val_text, "word_counts": word_counts,
            "n_word_vocab": len(word_counts),
            "word_hapax_share": sum(c == 1 for c in word_counts.values()) / len(word_counts),
            "word_oov_rate": len(unknown) / len(val_words), "word_oov_types": len(set(unknown))}


@pytest.fixture(scope="module")
def bpe4096(corpus):
    from helpers.tokenization import BPETokenizer

    return BPETokenizer.train(corpus["train_text"], 4096)


@pytest.fixture(scope="module")
def bpe512(bpe4096):
    return bpe4096.truncated(512)  # greedy merges: the 512 vocabulary is a prefix of the 4,096 one


@pytest.fixture(scope="module")
def chars_per_token(corpus, bpe4096):
    """Validation characters per token at each doubling of the vocabulary, recounted (no glued value)."""
    val = corpus["val_text"]
    return {v: len(val) / len(bpe4096.truncated(v).encode(val)) for v in (256, 512, 1024, 2048, 4096)}


@pytest.mark.claim("greedy-prefix")
def test_the_first_merges_of_a_large_vocabulary_are_the_small_ones(g, bpe4096):
    # the notebook trained 512 tokens; the test trains 4,096 afresh: its first 256 merges are those
    merges, counts = data(g, "merges_512"), data(g, "merge_counts_512")
    assert len(merges) == g["n_merges"] == 256
    assert bpe4096.merges[: len(merges)] == merges and bpe4096.merge_counts[: len(counts)] == counts


@pytest.mark.claim("returns-diminish", "doublings", "takeaway-doublings")
def test_vocabulary_doublings_recounted(g, chars_per_token, table):
    # "Doubling the vocabulary from 256 to 512 gains A characters per token; doubling it from
    # 2,048 to 4,096 only B, ending at C": recounted with a freshly trained tokenizer; "every
    # later doubling gains less than half as much (not steadily less ...)"
    cpt = chars_per_token
    assert g["cpt_256_512_gain"] == pytest.approx(cpt[512] - cpt[256], rel=1e-9)
    assert g["cpt_2048_4096_gain"] == pytest.approx(cpt[4096] - cpt[2048], rel=1e-9)
    assert g["cpt_4096"] == pytest.approx(cpt[4096], rel=1e-9)
    gains = [cpt[2 * v] - cpt[v] for v in (256, 512, 1024, 2048)]
    assert all(0 < later < gains[0] / 2 for later in gains[1:])
    assert not all(a > b for a, b in zip(gains, gains[1:])), "not steadily less"
    assert g["cpt_2048_4096_gain"] < g["cpt_256_512_gain"] / 2
    assert g["cpt_256_512_gain"] > 2 * g["cpt_2048_4096_gain"] > 0, "diminishing returns"
    # and the notebook's table shows the same doublings
    assert [table[2 * v][0] - table[v][0] for v in (256, 512, 1024, 2048)] == pytest.approx(gains, rel=1e-9)


@pytest.mark.claim("identity-exact")
def test_self_pair_merges_recounted(g, bpe512):
    assert g["n_self_pair_merges"] == sum(a == b for a, b in bpe512.merges)
    assert g["first_merge_count"] == bpe512.merge_counts[0]
    assert g["tokyo_tokens"] == 15


# ---- guards added for the claims check (issue 11 item 3) -------------------------------------

@pytest.mark.claim("word-hapax")
def test_word_vocabulary_and_unknown_words_recounted(g, corpus):
    assert g["word_hapax_share"] == pytest.approx(corpus["word_hapax_share"], rel=1e-12)
    for key in ("n_word_vocab", "word_oov_types"):
        assert g[key] == corpus[key], key
    assert g["word_oov_rate"] == pytest.approx(corpus["word_oov_rate"], rel=1e-12)


@pytest.mark.claim("count-falls")
def test_vocabulary_trade_off_endpoints(g, corpus):
    # at 256 entries every token is one byte and the text is ASCII: one character per token, so the
    # gain from 256 to 512 is the 512 vocabulary's ratio minus one
    assert g["cpt_256_512_gain"] == pytest.approx(g["bpe_ratio_512"] - 1, rel=1e-9)
    # the average training count at 4,096 entries is the training text's token count over 4,096;
    # cpt_4096 is measured on validation text; the training text the merges were fitted on compresses
    # at least as well, but not by a third more, so per_entry * cpt * 4096 / len(train) is in (0.75, 1]
    n_train = len(corpus["train_text"])
    assert 0.75 < g["per_entry_4096"] * g["cpt_4096"] * 4096 / n_train <= 1
    assert g["per_entry_256"] == pytest.approx(n_train / 256, rel=1e-9), "one token per byte"


def test_hugging_face_factor_is_the_ratio_of_the_two_times(g):
    # "took hf_seconds s against our bpe_seconds s, a factor of hf_speedup"
    assert g["hf_speedup"] == pytest.approx(g["bpe_seconds"] / g["hf_seconds"], rel=1e-9)


@pytest.mark.claim("subword-between")
def test_frequent_words_are_single_tokens_and_rare_ones_are_spelled_out(corpus, bpe512):
    words = [(w, n) for w, n in corpus["word_counts"].most_common() if w.strip().isalpha()]
    assert all(len(bpe512.encode(w)) == 1 for w, _ in words[:25]), "the most frequent words: one token each"
    once = [w for w, n in words if n == 1]
    lengths = [len(bpe512.encode(w)) for w in once]
    assert sum(lengths) / len(lengths) > 3, "words seen once: spelled out from several pieces"
    assert sum(n == 1 for n in lengths) < 0.01 * len(once)
