"""Tokenisers for the language-modelling sections: characters and byte-level BPE.

- :func:`train_val_split`: the corpus split every language-modelling section uses (first 90 %
  train, last 10 % validation, as nanoGPT does) -- contiguous, so no text is in both parts.
- :class:`CharTokenizer`: one token per character, vocabulary fitted on a text.
- :class:`BPETokenizer`: byte-level byte-pair encoding (Sennrich et al., 2016) trained from
  scratch. 256 byte tokens first, then one new token per merge, the most frequent adjacent pair
  first. Any Unicode string round-trips through ``encode``/``decode``, because every string is
  a sequence of UTF-8 bytes and every byte is a token.

Pre-tokenisation. As in GPT-2, text is first cut into chunks (a word with its leading space, a
run of digits, a run of punctuation, a run of white space) by :data:`SPLIT_PATTERN`, and merges
never cross a chunk boundary. Training therefore works on a table of distinct chunks and their
frequencies, and encoding caches each distinct chunk.

Tie-break. When several pairs share the highest count, the pair ``(a, b)`` of token ids that is
smallest in lexicographic order wins (smallest ``a``, then smallest ``b``). The rule makes
training deterministic; :func:`reference_bpe_merges` (brute force) applies the same rule.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

#: GPT-2's pre-tokenisation pattern, written for Python's ``re`` (which lacks ``\p{L}``):
#: contractions, an optional space + letters, an optional space + digits, an optional space +
#: other non-space characters (punctuation, symbols, combining marks, underscore), then white
#: space. The alternatives cover every character, so the chunks always concatenate to the text.
SPLIT_PATTERN = re.compile(
    r"'s|'t|'re|'ve|'m|'ll|'d"
    r"| ?[^\W\d_]+"
    r"| ?\d+"
    r"| ?(?:[^\s\w]|_)+"
    r"|\s+(?!\S)"
    r"|\s+"
)

#: Number of byte tokens every byte-level vocabulary starts with.
N_BYTES = 256


def train_val_split(text: str, frac: float = 0.9) -> tuple[str, str]:
    """Split ``text`` into its first ``frac`` (training) and the rest (validation).

    The split is contiguous, not shuffled: neighbouring characters are strongly dependent, so a
    random split would put near-copies of validation text into the training set.
    Returns ``(train, val)`` with ``train + val == text``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0.0 < frac < 1.0:
        raise ValueError(f"frac must be a number strictly between 0 and 1, got {frac!r}")
    n = int(frac * len(text))
    return text[:n], text[n:]


def pretokenize(text: str) -> list[str]:
    """Cut ``text`` into GPT-2-style chunks with :data:`SPLIT_PATTERN`; ``"".join`` restores it."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return SPLIT_PATTERN.findall(text)


class CharTokenizer:
    """One token per character; ids are the positions of the characters in sorted order.

    Fit it on the *training* text only (``CharTokenizer.fit(train)``); encoding a character the
    training text never contained raises ``ValueError`` -- a character model has no fallback.
    """

    def __init__(self, chars: Sequence[str]):
        chars = list(chars)
        if not chars or any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise ValueError("chars must be a non-empty sequence of single characters")
        if len(set(chars)) != len(chars):
            raise ValueError("chars must not contain duplicates")
        self.chars = chars
        self.stoi = {c: i for i, c in enumerate(chars)}

    @classmethod
    def fit(cls, text: str) -> "CharTokenizer":
        """The tokenizer whose vocabulary is the sorted set of characters of ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if not text:
            raise ValueError("text must not be empty")
        return cls(sorted(set(text)))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """Ids of the characters of ``text`` -> list of length ``len(text)``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        try:
            return [self.stoi[c] for c in text]
        except KeyError as err:
            raise ValueError(f"text contains {err.args[0]!r}, which is not in the vocabulary") from None

    def decode(self, ids: Sequence[int]) -> str:
        """The string whose characters have the given ids."""
        out = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.chars):
                raise ValueError(f"ids must be integers in [0, {len(self.chars)}), got {i!r}")
            out.append(self.chars[i])
        return "".join(out)


def _check_train_args(text, vocab_size) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < N_BYTES:
        raise ValueError(f"vocab_size must be at least {N_BYTES} (the byte tokens), got {vocab_size}")


def _merge_word(word: tuple[int, ...], pair: tuple[int, int], new_id: int) -> tuple[int, ...]:
    """Replace every non-overlapping occurrence of ``pair`` in ``word``, left to right."""
    out, i, n = [], 0, len(word)
    a, b = pair
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def _pairs(word: tuple[int, ...]) -> Counter:
    return Counter(zip(word, word[1:]))


class BPETokenizer:
    """Byte-level byte-pair encoding.

    Token ids ``0..255`` are the bytes; id ``256 + k`` is the token made by merge ``k``.
    Construct one with :meth:`train`, or from a list of merges (e.g. the first ``k`` merges of
    a larger tokenizer, which is exactly what training to ``256 + k`` tokens would give).
    """

    def __init__(self, merges: Sequence[tuple[int, int]] = ()):
        merges = [tuple(m) for m in merges]
        for k, m in enumerate(merges):
            if len(m) != 2 or not all(isinstance(t, int) and 0 <= t < N_BYTES + k for t in m):
                raise ValueError(f"merges[{k}] = {m!r} must be a pair of ids below {N_BYTES + k}")
        self.merges: list[tuple[int, int]] = merges
        self.ranks = {m: k for k, m in enumerate(merges)}
        self.token_bytes: list[bytes] = [bytes([b]) for b in range(N_BYTES)]
        for a, b in merges:
            self.token_bytes.append(self.token_bytes[a] + self.token_bytes[b])
        self._cache: dict[str, tuple[int, ...]] = {}
        #: count of each merged pair at the moment it was merged (filled by :meth:`train` only)
        self.merge_counts: list[int] = []

    @property
    def vocab_size(self) -> int:
        """Number of tokens: 256 bytes plus one per merge."""
        return N_BYTES + len(self.merges)

    def truncated(self, vocab_size: int) -> "BPETokenizer":
        """The tokenizer with only the first ``vocab_size - 256`` merges."""
        _check_train_args("", vocab_size)
        if vocab_size > self.vocab_size:
            raise ValueError(f"vocab_size must be at most {self.vocab_size}, got {vocab_size}")
        k = vocab_size - N_BYTES
        tokenizer = BPETokenizer(self.merges[:k])
        tokenizer.merge_counts = self.merge_counts[:k]
        return tokenizer

    @classmethod
    def train(cls, text: str, vocab_size: int) -> "BPETokenizer":
        """Learn ``vocab_size - 256`` merges from ``text``.

        Each step merges the most frequent adjacent pair of tokens inside the chunks of
        :func:`pretokenize` (ties: lexicographically smallest pair of ids). Pair counts are
        updated incrementally: a merge revisits only the distinct chunks that contain the
        merged pair, found through an index pair -> chunks, and a heap with lazy deletion finds
        the next best pair. Training stops early if no pair occurs any more (every chunk is
        a single token), so ``vocab_size`` is an upper bound.
        """
        _check_train_args(text, vocab_size)
        chunk_counts = Counter(pretokenize(text))
        words: list[tuple[int, ...]] = [tuple(c.encode("utf-8")) for c in chunk_counts]
        freqs: list[int] = list(chunk_counts.values())

        counts: dict[tuple[int, int], int] = defaultdict(int)
        where: dict[tuple[int, int], set[int]] = defaultdict(set)  # pair -> ids of chunks holding it
        for w, (word, f) in enumerate(zip(words, freqs)):
            for pair, c in _pairs(word).items():
                counts[pair] += c * f
                where[pair].add(w)
        heap = [(-c, pair) for pair, c in counts.items()]
        heapq.heapify(heap)

        merges: list[tuple[int, int]] = []
        merge_counts: list[int] = []
        while len(merges) < vocab_size - N_BYTES and heap:
            neg, pair = heapq.heappop(heap)
            if counts.get(pair, 0) != -neg or neg == 0:
                continue  # stale heap entry: the count changed after it was pushed
            new_id = N_BYTES + len(merges)
            merges.append(pair)
            merge_counts.append(-neg)
            changed: set[tuple[int, int]] = set()
            for w in list(where[pair]):
                old, f = words[w], freqs[w]
                new = _merge_word(old, pair, new_id)
                for p, c in _pairs(old).items():
                    counts[p] -= c * f
                    changed.add(p)
                    where[p].discard(w)
                for p, c in _pairs(new).items():
                    counts[p] += c * f
                    changed.add(p)
                    where[p].add(w)
                words[w] = new
            for p in changed:
                if counts[p] > 0:
                    heapq.heappush(heap, (-counts[p], p))
                else:
                    counts.pop(p, None)
                    where.pop(p, None)
        tokenizer = cls(merges)
        tokenizer.merge_counts = merge_counts
        return tokenizer

    def _encode_chunk(self, chunk: str) -> tuple[int, ...]:
        cached = self._cache.get(chunk)
        if cached is not None:
            return cached
        word = list(chunk.encode("utf-8"))
        while len(word) > 1:
            # the applicable merge learned earliest goes first, as in training
            best = min(zip(word, word[1:]), key=lambda p: self.ranks.get(p, float("inf")))
            rank = self.ranks.get(best)
            if rank is None:
                break
            word = list(_merge_word(tuple(word), best, N_BYTES + rank))
        result = tuple(word)
        self._cache[chunk] = result
        return result

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (any Unicode string) -> list of ints in ``[0, vocab_size)``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids: list[int] = []
        for chunk in pretokenize(text):
            ids.extend(self._encode_chunk(chunk))
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        """The text of the token ids ``ids``; inverse of :meth:`encode`.

        Bytes that do not form valid UTF-8 (possible only for id sequences ``encode`` never
        produces) become U+FFFD rather than raising.
        """
        n = self.vocab_size
        parts = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
                raise ValueError(f"ids must be integers in [0, {n}), got {i!r}")
            parts.append(self.token_bytes[i])
        return b"".join(parts).decode("utf-8", errors="replace")

    def token_str(self, i: int) -> str:
        """Readable form of token ``i`` (its bytes decoded, undecodable bytes escaped)."""
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.vocab_size:
            raise ValueError(f"i must be a token id, an integer in [0, {self.vocab_size}), got {i!r}")
        return self.token_bytes[i].decode("utf-8", errors="backslashreplace")

    def __repr__(self) -> str:
        return f"BPETokenizer(vocab_size={self.vocab_size})"


def reference_bpe_merges(text: str, vocab_size: int) -> list[tuple[int, int]]:
    """Brute-force BPE trainer: recount every pair in every chunk occurrence after every merge.

    Slow (use only on small texts); it exists as the oracle that :meth:`BPETokenizer.train`
    must agree with, merge for merge, including the tie-break rule.
    """
    _check_train_args(text, vocab_size)
    words = [list(c.encode("utf-8")) for c in pretokenize(text)]
    merges: list[tuple[int, int]] = []
    while len(merges) < vocab_size - N_BYTES:
        counts: Counter = Counter()
        for word in words:
            counts.update(zip(word, word[1:]))
        if not counts:
            break
        top = max(counts.values())
        pair = min(p for p, c in counts.items() if c == top)
        new_id = N_BYTES + len(merges)
        merges.append(pair)
        words = [list(_merge_word(tuple(w), pair, new_id)) for w in words]
    return merges
