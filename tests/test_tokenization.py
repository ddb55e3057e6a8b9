"""helpers.tokenization: round trips, merges against a brute-force trainer, argument checks.

The brute-force trainer is written here, independently of the module under test (it shares only
``pretokenize``, which test_agrees_with_hugging_face_tokenizers checks against the library's
pre-tokenizer); the Hugging Face trainer is the second, external oracle.
"""

import random
from collections import Counter

import pytest

from helpers.data import load_tiny_shakespeare
from helpers.tokenization import (
    N_BYTES,
    BPETokenizer,
    CharTokenizer,
    pretokenize,
    train_val_split,
)


def brute_force_merges(text, vocab_size):
    """BPE by definition: recount every adjacent pair of every chunk after every merge; merge the
    most frequent pair, ties to the smallest (left id, right id); new ids count up from 256."""
    words = [list(chunk.encode("utf-8")) for chunk in pretokenize(text)]
    merges = []
    while 256 + len(merges) < vocab_size:
        counts = Counter(pair for w in words for pair in zip(w, w[1:]))
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], pair))
        new_id = 256 + len(merges)
        merges.append(best)
        merged = []
        for w in words:
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged.append(out)
        words = merged
    return merges

SMALL = (
    "low lower lowest newer wider new newest low low lower wide widest\n"
    "First Citizen: Before we proceed any further, hear me speak.\n"
    "All: Speak, speak. aaaa aaa aa a abab ababab 1234 12 ___ x_y café naïve\n"
)


@pytest.fixture(scope="module")
def corpus():
    return load_tiny_shakespeare()


@pytest.fixture(scope="module")
def tok_small():
    return BPETokenizer.train(SMALL * 3, 320)


def random_unicode(rng, n):
    """A random string mixing ASCII, Latin-1, combining marks, CJK, emoji (astral) and controls."""
    pools = [
        (0x20, 0x7E), (0xA0, 0xFF), (0x300, 0x36F), (0x4E00, 0x9FFF),
        (0x1F300, 0x1FAFF), (0x0, 0x1F), (0x0600, 0x06FF), (0x10000, 0x10FFFF),
    ]
    out = []
    for _ in range(n):
        lo, hi = rng.choice(pools)
        c = rng.randint(lo, hi)
        if 0xD800 <= c <= 0xDFFF:  # lone surrogates are not encodable as UTF-8
            c = 0x41
        out.append(chr(c))
    return "".join(out)


# --- train_val_split -------------------------------------------------------------------------

def test_split_is_contiguous_and_complete(corpus):
    train, val = train_val_split(corpus)
    assert train + val == corpus
    assert len(train) == int(0.9 * len(corpus))
    assert train_val_split("abcdefghij", 0.5) == ("abcde", "fghij")


@pytest.mark.parametrize("frac", [0, 1, 1.5, -0.1, "0.9", True])
def test_split_rejects_bad_fraction(frac):
    with pytest.raises(ValueError, match="frac"):
        train_val_split("abc", frac)


def test_split_rejects_non_str():
    with pytest.raises(TypeError, match="text"):
        train_val_split(b"abc")


# --- pre-tokenisation ------------------------------------------------------------------------

def test_pretokenize_covers_every_character():
    rng = random.Random(0)
    for _ in range(200):
        s = random_unicode(rng, rng.randint(0, 40))
        assert "".join(pretokenize(s)) == s
    assert "".join(pretokenize(SMALL)) == SMALL


def test_pretokenize_matches_gpt2_on_ascii():
    assert pretokenize("Hello world, it's 2024!  ok\n\nYes") == [
        "Hello", " world", ",", " it", "'s", " 2024", "!", " ", " ok", "\n", "\n", "Yes"]  # as tokenizers.pre_tokenizers.ByteLevel


# --- CharTokenizer ---------------------------------------------------------------------------

def test_char_tokenizer_round_trip_and_unknown(corpus):
    tok = CharTokenizer.fit(corpus)
    assert tok.vocab_size == 65
    assert tok.decode(tok.encode(corpus[:5000])) == corpus[:5000]
    assert tok.encode("\n") == [0]  # sorted: newline first
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.encode("🌹")
    with pytest.raises(ValueError, match="ids"):
        tok.decode([65])
    with pytest.raises(TypeError, match="text"):
        CharTokenizer.fit(["a"])
    with pytest.raises(ValueError, match="empty"):
        CharTokenizer.fit("")


# --- BPETokenizer ----------------------------------------------------------------------------

def test_round_trip_on_random_unicode(tok_small):
    rng = random.Random(1)
    for _ in range(300):
        s = random_unicode(rng, rng.randint(0, 30))
        ids = tok_small.encode(s)
        assert all(0 <= i < tok_small.vocab_size for i in ids)
        assert tok_small.decode(ids) == s


@pytest.mark.parametrize("s", ["", "🌹", "東京タワー", "e\u0301 a\u0308\u0301", "👩‍👩‍👧", "\x00\n\t ", "ǅ ﬁ Ω ½"])
def test_round_trip_on_special_strings(tok_small, s):
    assert tok_small.decode(tok_small.encode(s)) == s


def test_unseen_characters_fall_back_to_their_utf8_bytes(tok_small):
    for ch in ["🌹", "東", "ß", "\u0301"]:
        assert tok_small.encode(ch) == list(ch.encode("utf-8"))
    assert tok_small.encode("") == []


def test_merges_agree_with_brute_force_reference():
    for text, v in [(SMALL, 300), (SMALL * 2 + "the then there these", 330), ("aaaaaaaaaa bbbb", 270)]:
        fast = BPETokenizer.train(text, v)
        assert fast.merges == brute_force_merges(text, v)


def test_merges_agree_with_reference_on_the_corpus(corpus):
    text = corpus[:6000]
    assert BPETokenizer.train(text, 340).merges == brute_force_merges(text, 340)


def test_tie_break_is_smallest_pair():
    # every pair occurs exactly once: the winner must be the smallest pair of byte ids
    tok = BPETokenizer.train("dcba", 257)
    assert tok.merges == [(ord("b"), ord("a"))]
    tok = BPETokenizer.train("zy xw", 257)
    assert tok.merges == [(ord(" "), ord("x"))]


def test_merge_counts_are_non_increasing_and_give_the_length(corpus):
    train = corpus[:50_000]
    tok = BPETokenizer.train(train, 400)
    c = tok.merge_counts
    assert len(c) == len(tok.merges) == 144
    assert all(a >= b for a, b in zip(c, c[1:]))
    # each merge shortens the training sequence by exactly its count
    assert len(tok.encode(train)) == len(train.encode("utf-8")) - sum(c)


def test_encoding_applies_merges_in_rank_order():
    tok = BPETokenizer.train(SMALL * 3, 320)
    # encoding with the first k merges = training to 256 + k tokens
    for k in (1, 5, 20, 64):
        assert tok.truncated(N_BYTES + k).merges == BPETokenizer.train(SMALL * 3, N_BYTES + k).merges
    # the merges re-applied greedily in order to the training chunks reproduce encode()
    for chunk in set(pretokenize(SMALL)):
        word = list(chunk.encode("utf-8"))
        for rank, pair in enumerate(tok.merges):
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                    out.append(N_BYTES + rank)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        assert tok.encode(chunk) == word


def test_vocab_size_bounds():
    tok = BPETokenizer.train(SMALL, 256)
    assert tok.vocab_size == 256 and tok.merges == []
    assert tok.encode("hi") == [104, 105]
    tok = BPETokenizer.train(SMALL, 300)
    assert tok.vocab_size == 300 and len(tok.merges) == 44
    # a tiny text runs out of pairs: vocab_size is an upper bound
    tok = BPETokenizer.train("ab ab", 1000)
    assert tok.merges == [(97, 98), (32, 256)] and tok.vocab_size == 258
    assert tok.encode("ab ab") == [256, 257]
    assert tok.decode([256, 257]) == "ab ab"


def test_decode_rejects_out_of_range_ids(tok_small):
    with pytest.raises(ValueError, match="ids"):
        tok_small.decode([tok_small.vocab_size])
    with pytest.raises(ValueError, match="ids"):
        tok_small.decode([-1])


@pytest.mark.parametrize("v", [0, 100, 255, -5])
def test_train_rejects_small_vocab(v):
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer.train("abc", v)


@pytest.mark.parametrize("v", [300.0, "512", None, True])
def test_train_rejects_non_int_vocab(v):
    with pytest.raises(TypeError, match="vocab_size"):
        BPETokenizer.train("abc", v)


@pytest.mark.parametrize("bad", [b"abc", None, ["a", "b"], 3])
def test_train_and_encode_reject_non_str_text(bad, tok_small):
    with pytest.raises(TypeError, match="text"):
        BPETokenizer.train(bad, 300)
    with pytest.raises(TypeError, match="text"):
        tok_small.encode(bad)


def test_invalid_merges_are_rejected():
    with pytest.raises(ValueError, match="merges"):
        BPETokenizer([(0, 300)])
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer([(97, 98)]).truncated(258)


def test_full_corpus_training_round_trips_and_compresses(corpus):
    train, val = train_val_split(corpus)
    tok = BPETokenizer.train(train, 512)  # seconds, thanks to incremental pair counts (not asserted)
    ids = tok.encode(val)
    assert tok.decode(ids) == val
    assert len(val) / len(ids) > 1.7


def test_agrees_with_hugging_face_tokenizers(corpus):
    """Oracle: the Rust BPE trainer with the GPT-2 byte-level pre-tokenizer (pinned in
    requirements.txt: a missing package is an error, not a skip)."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, trainers

    text, probe = corpus[:200_000], corpus[200_000:230_000]
    ours = BPETokenizer.train(text, 400)
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.train_from_iterator([text], trainers.BpeTrainer(
        vocab_size=400, min_frequency=0, special_tokens=[], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    # same chunks as the library's pre-tokenizer (which shows a space as 'Ġ' and a newline as 'Ċ')
    chunks = [w for w, _ in hf.pre_tokenizer.pre_tokenize_str(probe)]
    assert [c.replace("Ġ", " ").replace("Ċ", "\n") for c in chunks] == pretokenize(probe)
    # same set of learned tokens (the order may differ only between pairs with equal counts);
    # the corpus is ASCII, so the library's printable stand-ins for bytes are just 'Ġ' and 'Ċ'
    vocab = hf.get_vocab()
    hf_tokens = {t.replace("Ġ", " ").replace("Ċ", "\n") for t in sorted(vocab, key=vocab.get)[N_BYTES:]}
    our_tokens = {ours.token_str(i) for i in range(N_BYTES, ours.vocab_size)}
    assert len(our_tokens) == 144
    assert hf_tokens == our_tokens
    assert len(hf.encode(probe).ids) == len(ours.encode(probe))
    assert hf.decode(hf.encode(probe).ids) == ours.decode(ours.encode(probe)) == probe


@pytest.mark.parametrize("i", [-1, 999, 1.0, True])
def test_token_str_refuses_an_id_outside_the_vocabulary(i):
    """Before: -1 silently gave the last token's text, 999 an IndexError, 1.0 a TypeError."""
    bpe = BPETokenizer.train("hello hello world", 260)
    with pytest.raises(ValueError, match=rf"i must be a token id, an integer in \[0, {bpe.vocab_size}\), got {i!r}"):
        bpe.token_str(i)


def test_token_str_reads_the_first_and_last_ids():
    bpe = BPETokenizer.train("hello hello world", 260)
    assert bpe.token_str(0) == "\x00" and bpe.token_str(bpe.vocab_size - 1) == bpe.token_bytes[-1].decode()
