"""helpers.diagrams: every diagram renders, deterministically, says what it should, and checks its arguments."""

from __future__ import annotations

import inspect
import re
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from helpers import diagrams
from helpers.tokenization import BPETokenizer, pretokenize

PUBLIC = [f for name, f in inspect.getmembers(diagrams, inspect.isfunction)
          if not name.startswith("_") and f.__module__ == diagrams.__name__]
TOY = " ".join(["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3)


def test_there_are_at_least_sixteen_diagrams():
    assert len(PUBLIC) >= 16, [f.__name__ for f in PUBLIC]


def _toy_merges(n=8):
    bpe = BPETokenizer.train(TOY, 256 + n)
    return bpe, [(bpe.token_str(a), bpe.token_str(b), 0) for a, b in bpe.merges]


def _call(f):
    if f.__name__ == "bpe_merges":
        _, merges = _toy_merges()
        return f(Counter(pretokenize(TOY)).items(), merges)
    return f()


@pytest.mark.parametrize("f", PUBLIC, ids=lambda f: f.__name__)
def test_diagram_is_a_deterministic_svg(f):
    d = _call(f)
    assert isinstance(d, diagrams.Diagram)
    svg = d.svg()
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert float(root.get("width").removesuffix("pt")) > 100
    assert svg == _call(f).svg(), "two renders of the same diagram differ (ids or dates in the SVG)"
    assert d._repr_svg_() == svg
    assert "<dc:date>" not in svg
    assert len(d.labels) >= 3, "a diagram with almost no words"


def test_bpe_segmentation_matches_the_tokenizer():
    """The diagram's replay of the merges segments every chunk as BPETokenizer.encode does."""
    bpe, merges = _toy_merges()
    for chunk in set(pretokenize(TOY)):
        expected = [bpe.token_str(i) for i in bpe.encode(chunk)]
        assert diagrams._segment(chunk, [(a, b) for a, b, _ in merges]) == expected, chunk


def test_bpe_diagram_draws_each_merge_it_is_given():
    _, merges = _toy_merges()
    d = diagrams.bpe_merges(Counter(pretokenize(TOY)).items(), merges)
    for a, b, _ in merges:
        assert (a + b).replace(" ", "␣") in d.labels


def test_diagrams_draw_what_their_arguments_say():
    assert "$\\mathbf{h}_{T}$" in diagrams.rnn_unrolled(steps=3).labels
    assert [s for s in diagrams.kv_cache(step=5).labels if re.fullmatch(r"k\d+", s)] == ["k1", "k2", "k3", "k4", "k5"]
    assert "n-96" in diagrams.windows_and_origins(context=168, horizon=48, origins=3).labels
    assert "n-100" in diagrams.windows_and_origins(context=10, horizon=50, origins=2).labels
    assert sum(s.startswith("block ") for s in diagrams.nbeats_stack(blocks=3).labels) == 3
    assert sum(s.startswith("attention, head") for s in diagrams.multi_head_split(heads=3).labels) == 3
    shifted = diagrams.shifted_targets("abc").labels
    assert shifted[:2] == ["a", "b"]  # input "a" and, above it, its target "b"


@pytest.mark.parametrize("call, argument", [
    (lambda: diagrams.rnn_unrolled(steps=1), "steps"),
    (lambda: diagrams.encoder_decoder(n_in=True), "n_in"),
    (lambda: diagrams.attention_over_encoder(weights=(0.5, 0.6)), "weights"),
    (lambda: diagrams.qkv_lookup(weights=(1.0,)), "weights"),
    (lambda: diagrams.multi_head_split(heads=1), "heads"),
    (lambda: diagrams.positions_added(tokens=()), "tokens"),
    (lambda: diagrams.rope_rotation(theta=0), "theta"),
    (lambda: diagrams.kv_cache(step=1.5), "step"),
    (lambda: diagrams.bpe_merges([], [("a", "b", 1)]), "chunks"),
    (lambda: diagrams.shifted_targets("a"), "text"),
    (lambda: diagrams.windows_and_origins(horizon=0), "horizon"),
    (lambda: diagrams.nbeats_stack(layers=0), "layers"),
    (lambda: diagrams.Canvas(0, 3), "width"),
    (lambda: diagrams.Canvas(3, 3).box(1, 1, "x", tone="blue"), "tone"),
])
def test_bad_arguments_are_refused_by_name(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()
