"""The Part's conceptual diagrams, drawn from text with matplotlib patches.

Each public function returns a :class:`Diagram`; a notebook shows it by making it the last
expression of a cell tagged ``remove-input`` (Jupyter, Colab and the built site all show its SVG).
A diagram is code in this file, so changing one is a reviewable diff, and it is rendered every
time the notebook runs: there is no separate image file that could drift from its source.

The figures use the book's palette (:data:`helpers.plotting.PALETTE`) on a white card, with
the type of the plots; the site keeps that card light in dark mode (``_assets/book.css``).

Conventions: boxes are *states* (blue), *operations* (orange), *weights* (green), *attention*
(purple) or *inputs/outputs* (grey); arrows show data flow, dashed red arrows gradients.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, field

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

from .plotting import GREY, PALETTE

#: What each kind of box means, and its colour.
TONES = {"state": PALETTE[0], "op": PALETTE[1], "weight": PALETTE[2], "attn": PALETTE[3],
         "gate": PALETTE[4], "io": GREY, "grad": "#C0392B"}
INK = "#1A1A1A"
FONT = 10.5


def _tint(colour: str, amount: float = 0.18) -> tuple[float, float, float]:
    r, g, b = matplotlib.colors.to_rgb(colour)
    return (1 - amount + amount * r, 1 - amount + amount * g, 1 - amount + amount * b)


@dataclass
class Diagram:
    """A finished diagram: ``svg()`` gives its deterministic SVG text, ``labels`` what it says.

    Displaying it (``_repr_svg_``) is how a notebook shows it.
    """

    figure: Figure
    labels: list[str] = field(default_factory=list)

    def svg(self) -> str:
        buffer = io.StringIO()
        with matplotlib.rc_context({"svg.hashsalt": "book", "svg.fonttype": "path"}):
            self.figure.savefig(buffer, format="svg", metadata={"Date": None}, facecolor="white")
        return buffer.getvalue()

    def _repr_svg_(self) -> str:
        return self.svg()


class Canvas:
    """A blank drawing area ``width`` x ``height`` units (one unit = half an inch on the page)."""

    def __init__(self, width: float, height: float):
        if not (width > 0 and height > 0):
            raise ValueError(f"width and height must be positive, got {width} and {height}")
        self.figure = Figure(figsize=(width / 2, height / 2))
        self.ax = self.figure.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, width)
        self.ax.set_ylim(0, height)
        self.ax.set_aspect("equal")
        self.ax.axis("off")
        self.labels: list[str] = []

    def _tone(self, tone: str) -> str:
        if tone.startswith("#"):
            return tone
        if tone not in TONES:
            raise ValueError(f"tone must be one of {sorted(TONES)}, got {tone!r}")
        return TONES[tone]

    def text(self, x, y, s, size=FONT, colour=INK, **kw):
        """Write ``s`` centred at (x, y)."""
        self.labels.append(s)
        kw.setdefault("ha", "center")
        kw.setdefault("va", "center")
        self.ax.text(x, y, s, fontsize=size, color=colour, **kw)

    def box(self, x, y, s, w=1.6, h=0.8, tone="state", size=FONT, round_=0.15, fill=True):
        """A rounded box centred at (x, y) with label ``s``; returns its (x, y, w, h)."""
        colour = self._tone(tone)
        self.ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=f"round,pad=0,rounding_size={round_}",
                                         facecolor=_tint(colour) if fill else "white", edgecolor=colour, lw=1.4))
        if s:
            self.text(x, y, s, size=size)
        return (x, y, w, h)

    def circle(self, x, y, s, r=0.32, tone="op", size=FONT + 1):
        """A small operator node (``+``, ``×``) centred at (x, y)."""
        colour = self._tone(tone)
        self.ax.add_patch(Circle((x, y), r, facecolor=_tint(colour), edgecolor=colour, lw=1.4))
        self.text(x, y, s, size=size)
        return (x, y, 2 * r, 2 * r)

    def cells(self, x, y, values, w=0.45, h=0.45, tone="state", alphas=None, size=FONT - 1.5):
        """A row of small squares starting at (x, y) (lower left), one per value (labels may be '')."""
        colour = self._tone(tone)
        for i, v in enumerate(values):
            a = 0.18 if alphas is None else alphas[i]
            self.ax.add_patch(Rectangle((x + i * w, y), w, h, facecolor=_tint(colour, a), edgecolor=colour, lw=1.0))
            if v != "":
                self.text(x + i * w + w / 2, y + h / 2, str(v), size=size)

    def arrow(self, start, end, tone="io", style="-|>", lw=1.3, dashed=False, bend=0.0, label=None,
              label_offset=(0, 0.25), size=FONT - 1.5, shrink=0.0):
        """An arrow from ``start`` to ``end`` (points), optionally bent and labelled at its middle."""
        colour = INK if tone == "io" else self._tone(tone)
        self.ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=11, lw=lw, color=colour,
                                          linestyle=(0, (4, 2.5)) if dashed else "-",
                                          connectionstyle=f"arc3,rad={bend}", shrinkA=shrink, shrinkB=shrink))
        if label:
            mx, my = (start[0] + end[0]) / 2 + label_offset[0], (start[1] + end[1]) / 2 + label_offset[1]
            self.text(mx, my, label, size=size, colour=colour if tone != "io" else INK)

    def line(self, xs, ys, tone="io", lw=1.3, dashed=False, alpha=1.0):
        colour = INK if tone == "io" else self._tone(tone)
        self.ax.plot(xs, ys, color=colour, lw=lw, alpha=alpha, linestyle=(0, (4, 2.5)) if dashed else "-")

    def done(self) -> Diagram:
        return Diagram(self.figure, self.labels)


def _edge(b, side):
    """The midpoint of side 'l', 'r', 't' or 'b' of a box (x, y, w, h)."""
    x, y, w, h = b
    return {"l": (x - w / 2, y), "r": (x + w / 2, y), "t": (x, y + h / 2), "b": (x, y - h / 2)}[side]


def _positive_int(name, value, at_least=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < at_least:
        raise ValueError(f"{name} must be an integer >= {at_least}, got {value!r}")


# §14.46 -------------------------------------------------------------------------------------------

def rnn_unrolled(steps: int = 4) -> Diagram:
    """§14.46: the recurrence unrolled, one set of weights, and the gradient path from the loss back.

    ``steps`` cells are drawn, h_1 ... h_{steps-1}, then an ellipsis, then h_T with its loss L_T.
    """
    _positive_int("steps", steps, 2)
    xs = [1.3 + 3.0 * t for t in range(1, steps)]
    x_gap, x_T = xs[-1] + 2.0, xs[-1] + 4.0
    width = max(x_T + 3.1, 16.5)  # wide enough for the gradient's caption
    c = Canvas(width, 7.9)
    h0 = c.box(1.3, 4.2, r"$\mathbf{h}_0=\mathbf{0}$", w=1.9, tone="state", fill=False)
    cells = [h0]
    for t, x in enumerate(xs + [x_T], start=1):
        tt = "T" if t == steps else str(t)
        if t == steps:  # the steps left out
            gap = c.box(x_gap, 4.2, r"$\cdots$", w=0.9, tone="state", fill=False)
            c.arrow(_edge(cells[-1], "r"), _edge(gap, "l"), tone="weight")
            cells.append(gap)
        h = c.box(x, 4.2, rf"$\mathbf{{h}}_{{{tt}}}$", w=1.3)
        xt = c.box(x, 1.5, rf"$\mathbf{{x}}_{{{tt}}}$", w=1.1, h=0.7, tone="io")
        yt = c.box(x, 6.6, rf"$\hat{{\mathbf{{y}}}}_{{{tt}}}$", w=1.1, h=0.7, tone="io")
        c.arrow(_edge(xt, "t"), _edge(h, "b"), label=r"$W_{xh}$", label_offset=(0.45, 0), tone="weight")
        c.arrow(_edge(h, "t"), _edge(yt, "b"), label=r"$W_{hy}$", label_offset=(0.45, 0), tone="weight")
        labelled = t < steps  # the arrow into h_T comes from the ellipsis, too short for a label
        c.arrow(_edge(cells[-1], "r"), _edge(h, "l"), label=r"$W_{hh}$" if labelled else None,
                label_offset=(0, 0.3), tone="weight")
        cells.append(h)
    loss = c.box(x_T + 1.95, 6.6, r"$\mathcal{L}_T$", w=1.0, h=0.7, tone="grad", fill=False)
    c.arrow(_edge(yt, "r"), _edge(loss, "l"))
    # the gradient, dashed: from the loss into h_T, then back along the chain, one Jacobian per step
    c.arrow(_edge(loss, "b"), _edge(cells[-1], "r"), tone="grad", dashed=True, bend=-0.3)
    for later, earlier in zip(cells[:1:-1], cells[-2:0:-1]):
        start = (later[0] - min(0.35, later[2] / 2 - 0.1), later[1] - later[3] / 2)   # on the bottom edges
        end = (earlier[0] + min(0.35, earlier[2] / 2 - 0.1), earlier[1] - earlier[3] / 2)
        c.arrow(start, end, tone="grad", dashed=True, bend=-0.45)
    c.text(width / 2, 0.4, r"gradient (dashed): $\partial \mathbf{h}_t / \partial \mathbf{h}_{t-1} = "
           r"\mathrm{diag}(1-\mathbf{h}_t^2)\,W_{hh}$  at every step: the gradient is their product",
           colour=TONES["grad"], size=FONT - 1)
    c.text(width / 2, 7.5, "the same $W_{xh}$, $W_{hh}$, $W_{hy}$ at every step", size=FONT - 0.5)
    return c.done()


# §14.47 -------------------------------------------------------------------------------------------

def lstm_cell() -> Diagram:
    """§14.47: the LSTM cell; the cell state's path is a multiply by f_t and an add, nothing else."""
    c = Canvas(15, 8.4)
    # the cell path along the top
    c.text(0.7, 6.6, r"$\mathbf{c}_{t-1}$")
    fx = c.circle(4.5, 6.6, r"$\times$")
    plus = c.circle(8.5, 6.6, "+")
    c.text(14.3, 6.6, r"$\mathbf{c}_t$")
    c.arrow((1.2, 6.6), _edge(fx, "l"), tone="state", lw=2.6)
    c.arrow(_edge(fx, "r"), _edge(plus, "l"), tone="state", lw=2.6)
    c.arrow(_edge(plus, "r"), (13.8, 6.6), tone="state", lw=2.6)
    c.text(6.5, 7.6, "cell path: one multiply and one add per step", colour=TONES["state"], size=FONT - 1)
    # gates from [h_{t-1}, x_t]
    c.text(0.7, 1.2, r"$\mathbf{h}_{t-1}$")
    c.text(3.0, 0.35, r"$\mathbf{x}_t$")
    c.text(1.9, 1.75, r"$[\mathbf{h}_{t-1},\mathbf{x}_t]$", size=FONT - 2)
    c.line([1.3, 11.3], [1.2, 1.2])  # ends at the last gate it feeds
    c.line([3.0, 3.0], [0.6, 1.2])
    gates = [(4.5, r"$\mathbf{f}_t=\sigma$", "gate"), (6.8, r"$\mathbf{i}_t=\sigma$", "gate"),
             (9.0, r"$\mathbf{g}_t=\tanh$", "op"), (11.3, r"$\mathbf{o}_t=\sigma$", "gate")]
    boxes = {}
    for x, s, tone in gates:
        boxes[s] = c.box(x, 2.9, s, w=1.8, h=0.8, tone=tone, size=FONT - 1)
        c.arrow((x, 1.2), _edge(boxes[s], "b"))
    f, i, g, o = boxes.values()
    c.arrow(_edge(f, "t"), _edge(fx, "b"))
    ix = c.circle(7.9, 4.7, r"$\times$")
    c.arrow(_edge(i, "t"), (7.7, 4.45))
    c.arrow(_edge(g, "t"), (8.1, 4.45))
    c.arrow(_edge(ix, "t"), (8.45, 6.28))
    tanh = c.box(11.3, 5.35, "tanh", w=1.1, h=0.6, tone="op", size=FONT - 1)
    c.arrow((11.3, 6.6), _edge(tanh, "t"), tone="state")
    ox = c.circle(12.6, 4.3, r"$\times$")
    c.arrow(_edge(tanh, "b"), (12.4, 4.5))
    c.arrow(_edge(o, "t"), (12.35, 4.1))
    c.arrow(_edge(ox, "r"), (14.0, 4.3))
    c.text(14.45, 4.3, r"$\mathbf{h}_t$")
    c.text(6.5, 5.6, r"$\mathbf{c}_t=\mathbf{f}_t\odot\mathbf{c}_{t-1}+\mathbf{i}_t\odot\mathbf{g}_t$", size=FONT - 0.5)
    return c.done()


def gru_cell() -> Diagram:
    """§14.47.1: the GRU in torch's convention, h_t = (1 - z_t) * n_t + z_t * h_{t-1}."""
    c = Canvas(15, 8.8)
    c.text(0.7, 6.4, r"$\mathbf{h}_{t-1}$")
    zx = c.circle(4.5, 6.4, r"$\times$")
    plus = c.circle(10.0, 6.4, "+")
    c.text(14.3, 6.4, r"$\mathbf{h}_t$")
    c.arrow((1.3, 6.4), _edge(zx, "l"), tone="state", lw=2.6)
    c.arrow(_edge(zx, "r"), _edge(plus, "l"), tone="state", lw=2.6)
    c.arrow(_edge(plus, "r"), (13.8, 6.4), tone="state", lw=2.6)
    c.text(7.2, 7.35, r"additive path: $\mathbf{z}_t\odot\mathbf{h}_{t-1}$, no weight matrix and no squashing",
           colour=TONES["state"], size=FONT - 1)
    c.text(7.2, 8.3, r"$\mathbf{h}_t=(\mathbf{1}-\mathbf{z}_t)\odot\mathbf{n}_t+\mathbf{z}_t\odot\mathbf{h}_{t-1}$",
           size=FONT - 0.5)
    c.text(2.6, 0.35, r"$\mathbf{x}_t$")
    c.line([1.9, 12.8], [1.0, 1.0])
    c.line([2.6, 2.6], [0.6, 1.0])
    c.line([1.9, 1.9], [1.0, 6.4], alpha=0.6)
    c.text(0.9, 1.0, r"$[\mathbf{h}_{t-1},\mathbf{x}_t]$", size=FONT - 2)
    z = c.box(4.5, 2.7, r"$\mathbf{z}_t=\sigma$", w=1.8, tone="gate", size=FONT - 1)
    n = c.box(10.0, 2.7, r"$\mathbf{n}_t=\tanh$", w=2.0, tone="op", size=FONT - 1)
    r = c.box(12.8, 2.7, r"$\mathbf{r}_t=\sigma$", w=1.8, tone="gate", size=FONT - 1)
    for b in (z, n, r):
        c.arrow((b[0], 1.0), _edge(b, "b"))
    c.arrow(_edge(z, "t"), _edge(zx, "b"))
    c.arrow(_edge(r, "t"), (11.0, 3.05), bend=0.5, label=r"$\mathbf{r}_t\odot(W_{hn}\mathbf{h}_{t-1}+\mathbf{b}_{hn})$",
            label_offset=(1.1, 0.75), size=FONT - 2.5)
    one_minus = c.box(7.2, 4.4, r"$1-\mathbf{z}_t$", w=1.5, h=0.6, tone="gate", size=FONT - 1.5)
    c.arrow((5.1, 3.1), _edge(one_minus, "l"), bend=-0.2)
    nx = c.circle(10.0, 4.4, r"$\times$")
    c.arrow(_edge(one_minus, "r"), _edge(nx, "l"))
    c.arrow(_edge(n, "t"), _edge(nx, "b"))
    c.arrow(_edge(nx, "t"), _edge(plus, "b"))
    return c.done()


# §14.48 / §14.49 ----------------------------------------------------------------------------------

def _enc_dec_frame(c, n_in, n_out, x0, y_enc, y_dec):
    """Encoder states h_1 .. h_T (with an ellipsis before h_T) and decoder steps s_1 .. s_{n_out} (and an ellipsis)."""
    enc = []
    for j in range(n_in):
        last = j == n_in - 1
        x = x0 + 1.9 * j + (1.0 if last and n_in > 2 else 0.0)  # room for the ellipsis before h_T
        jj = "T" if last else str(j + 1)
        h = c.box(x, y_enc, rf"$\mathbf{{h}}_{{{jj}}}$", w=1.2)
        xin = c.box(x, y_enc - 1.7, rf"$x_{{{jj}}}$", w=1.0, h=0.6, tone="io")
        c.arrow(_edge(xin, "t"), _edge(h, "b"))
        if enc and last and n_in > 2:
            mid = (_edge(enc[-1], "r")[0] + _edge(h, "l")[0]) / 2
            c.arrow(_edge(enc[-1], "r"), (mid - 0.45, y_enc))
            c.text(mid, y_enc, r"$\cdots$")
            c.arrow((mid + 0.45, y_enc), _edge(h, "l"))
            c.text(mid, y_enc - 1.7, r"$\cdots$")
        elif enc:
            c.arrow(_edge(enc[-1], "r"), _edge(h, "l"))
        enc.append(h)
    dec, heads = [], []
    xd0 = enc[-1][0] + 3.5
    for t in range(n_out):
        x = xd0 + 2.6 * t
        s = c.box(x, y_dec, rf"$\mathbf{{s}}_{{{t + 1}}}$", w=1.2)
        prev_tok = "BOS" if t == 0 else rf"$y_{{{t}}}$"
        yin = c.box(x, y_dec - 1.7, prev_tok, w=1.0, h=0.6, tone="io", size=FONT - 1.5)
        c.arrow(_edge(yin, "t"), _edge(s, "b"))
        if dec:
            c.arrow(_edge(dec[-1], "r"), _edge(s, "l"))
        head = c.box(x, y_dec + 2.0, "head", w=1.2, h=0.6, tone="weight", size=FONT - 1.5)
        c.arrow(_edge(s, "t"), _edge(head, "b"))
        out = c.box(x, y_dec + 3.3, rf"$\hat y_{{{t + 1}}}$", w=1.0, h=0.6, tone="io")
        c.arrow(_edge(head, "t"), _edge(out, "b"))
        dec.append(s)
        heads.append(head)
    c.arrow(_edge(dec[-1], "r"), (_edge(dec[-1], "r")[0] + 0.6, y_dec))
    c.text(_edge(dec[-1], "r")[0] + 1.0, y_dec, r"$\cdots$")
    return enc, dec, heads


def encoder_decoder(n_in: int = 4, n_out: int = 3) -> Diagram:
    """§14.48: the book's ``Seq2Seq`` without attention: the head reads [s_t; c] with c = h_T at every step."""
    _positive_int("n_in", n_in, 2)
    _positive_int("n_out", n_out, 2)
    c = Canvas(1.9 * n_in + 2.6 * n_out + 5.4, 9.0)
    enc, dec, heads = _enc_dec_frame(c, n_in, n_out, 1.2, 2.6, 2.6)
    c.arrow(_edge(enc[-1], "r"), _edge(dec[0], "l"), tone="state", lw=2.2, label="initial state",
            label_offset=(0, -0.35))
    ctx = c.box(enc[-1][0], 6.6, r"$\mathbf{c}=\mathbf{h}_T$", w=1.8, tone="state")
    c.arrow(_edge(enc[-1], "t"), _edge(ctx, "b"), tone="state", lw=2.2)
    # c runs along a line above the outputs and drops into each head from its left
    y_bus, drop = ctx[1] + 0.3, [head[0] - 0.95 for head in heads]
    c.line([_edge(ctx, "r")[0], drop[-1]], [y_bus, y_bus], tone="state")
    for x, head in zip(drop, heads):
        c.line([x, x], [y_bus, head[1]], tone="state")
        c.arrow((x, head[1]), _edge(head, "l"), tone="state")
    c.text(enc[-1][0], 7.6, r"one fixed vector, read at every step: head$([\mathbf{s}_t;\ \mathbf{c}])$", size=FONT - 1)
    c.text((enc[0][0] + enc[-1][0]) / 2, 0.25, "encoder GRU", colour=TONES["state"], size=FONT - 1)
    c.text((dec[0][0] + dec[-1][0]) / 2, 0.25, "decoder GRU (teacher forcing)", colour=TONES["state"], size=FONT - 1)
    return c.done()


def attention_over_encoder(weights=(0.1, 0.15, 0.6, 0.15)) -> Diagram:
    """§14.49: at decoder step t the query s_t is scored against every encoder state; c_t is their weighted average."""
    if len(weights) < 2 or any(w < 0 for w in weights) or not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
        raise ValueError(f"weights must be >= 2 non-negative numbers summing to 1, got {weights!r}")
    n = len(weights)
    c = Canvas(1.9 * n + 10.0, 10.0)
    y_h, y_bus = 3.4, 2.1
    enc = []
    for j in range(n):
        last = j == n - 1
        x = 1.2 + 1.9 * j + (1.0 if last and n > 2 else 0.0)  # room for the ellipsis before h_T
        jj = "T" if last else str(j + 1)
        enc.append(c.box(x, y_h, rf"$\mathbf{{h}}_{{{jj}}}$", w=1.2))
        if j and last and n > 2:
            mid = (_edge(enc[-2], "r")[0] + _edge(enc[-1], "l")[0]) / 2
            c.arrow(_edge(enc[-2], "r"), (mid - 0.45, y_h))
            c.text(mid, y_h, r"$\cdots$")
            c.arrow((mid + 0.45, y_h), _edge(enc[-1], "l"))
        elif j:
            c.arrow(_edge(enc[-2], "r"), _edge(enc[-1], "l"))
    ctx = c.box((enc[0][0] + enc[-1][0]) / 2 + 0.9, 7.6, r"$\mathbf{c}_t=\sum_j \alpha_{tj}\,\mathbf{h}_j$", w=3.0,
                tone="attn")
    for j, (b, w) in enumerate(zip(enc, weights)):
        c.arrow(_edge(b, "t"), (ctx[0] + (b[0] - ctx[0]) * 0.3, ctx[1] - 0.4), tone="attn", lw=0.6 + 6 * w)
        jj = "T" if j == n - 1 else str(j + 1)
        c.text(b[0] - 0.45, b[1] + 1.1, rf"$\alpha_{{t{jj}}}$={w:.2f}", size=FONT - 2.5)
    xs = enc[-1][0] + 3.4
    s = c.box(xs, y_h, r"$\mathbf{s}_t$", w=1.2)
    # the query meets every key: a dashed line from s_t under the row, with a branch up into each h_j
    c.line([_edge(s, "b")[0], _edge(s, "b")[0], enc[0][0]], [_edge(s, "b")[1], y_bus, y_bus], tone="attn", dashed=True)
    for b in enc:
        c.arrow((b[0], y_bus), _edge(b, "b"), tone="attn", dashed=True)
    c.text((enc[0][0] + xs) / 2, y_bus - 0.5,
           r"scores $e_{tj}=a(\mathbf{s}_t,\mathbf{h}_j)$ with every key, softmax $\to\alpha_{tj}$", size=FONT - 2,
           colour=TONES["attn"])
    c.text((enc[0][0] + enc[-1][0]) / 2, 0.55, "encoder states (keys and values)", colour=TONES["state"], size=FONT - 1)
    c.text(xs, 0.55, "decoder state (query)", colour=TONES["state"], size=FONT - 1)
    head = c.box(xs + 2.3, 7.6, r"head$([\mathbf{s}_t;\mathbf{c}_t])$", w=2.6, tone="weight", size=FONT - 1)
    c.arrow(_edge(ctx, "r"), _edge(head, "l"), tone="attn")
    c.arrow(_edge(s, "t"), (xs + 1.6, 7.2))
    out = c.box(xs + 2.3, 9.2, r"$\hat y_t$", w=1.0, h=0.6, tone="io")
    c.arrow(_edge(head, "t"), _edge(out, "b"))
    return c.done()


# §14.50 / §14.51 ----------------------------------------------------------------------------------

def qkv_lookup(weights=(0.05, 0.7, 0.2, 0.05)) -> Diagram:
    """§14.50: attention as a soft dictionary look-up: match the query with every key, average the values."""
    if len(weights) < 2 or not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
        raise ValueError(f"weights must be >= 2 numbers summing to 1, got {weights!r}")
    n = len(weights)
    c = Canvas(16, 2.0 + 1.3 * n)
    top = 1.2 + 1.3 * (n - 1)
    q = c.box(1.3, top / 2 + 0.6, r"query $\mathbf{q}$", w=2.0, tone="attn")
    for j, w in enumerate(weights):
        y = top - 1.3 * j + 0.6
        k = c.box(4.9, y, rf"$\mathbf{{k}}_{j + 1}$", w=1.1, h=0.7, tone="state")
        c.arrow(_edge(q, "r"), _edge(k, "l"), tone="attn", lw=0.8)
        c.text(7.2, y, rf"$\mathbf{{q}}\cdot\mathbf{{k}}_{j + 1}/\sqrt{{d_k}}$", size=FONT - 1.5)
        c.arrow((8.6, y), (9.2, y))
        c.ax.add_patch(Rectangle((9.3, y - 0.25), 2.0 * w, 0.5, facecolor=_tint(TONES["attn"], 0.7),
                                 edgecolor=TONES["attn"]))
        c.text(9.3 + 2.0 * w + 0.45, y, f"{w:.2f}", size=FONT - 2)
        v = c.box(12.6, y, rf"$\mathbf{{v}}_{j + 1}$", w=1.1, h=0.7, tone="weight")
        c.arrow(_edge(v, "r"), (14.4, top / 2 + 0.6), lw=0.5 + 5 * w, tone="attn")
    c.text(10.1, top + 1.35, "softmax weights", size=FONT - 1.5)
    c.text(7.2, top + 1.35, "match with each key", size=FONT - 1.5)
    c.box(15.0, top / 2 + 0.6, r"$\sum_j w_j\mathbf{v}_j$", w=1.7, tone="attn", size=FONT - 1)
    return c.done()


def multi_head_split(heads: int = 4) -> Diagram:
    """§14.51: project once, split d_model into h heads of width d_k = d_model/h, attend per head, concatenate, W_O.

    Each projection's output (Q, K, V) is one (T, d_model) matrix cut into ``heads`` slices along its feature axis
    (d_model, drawn vertically; the T positions run into the page, every slice keeps all of them); head i
    (one colour) takes slice i of *each* of Q, K and V (the row framed in its colour), and its output
    is slice i of the concatenation that W_O mixes.
    """
    _positive_int("heads", heads, 2)
    c = Canvas(15.2, 11.0)
    colours = [PALETTE[i % len(PALETTE)] for i in range(heads)]
    top, bottom = 7.2, 2.0                                    # the centres of the first and last slices
    rows = [top - i * (top - bottom) / (heads - 1) for i in range(heads)]
    cell_h = min(0.8, 0.6 * (top - bottom) / (heads - 1))
    mid = (top + bottom) / 2
    col_x, col_w = (3.4, 4.8, 6.2), 0.9                       # the columns Q, K, V
    col_top, col_bottom = top + cell_h / 2 + 0.35, bottom - cell_h / 2 - 0.35
    x = c.box(col_x[1], 10.3, r"$X$  $(T, d_{\mathrm{model}})$", w=2.0, h=0.7, tone="io", size=FONT - 1)
    for cx, name, proj in zip(col_x, "QKV", (r"$W_Q$", r"$W_K$", r"$W_V$")):
        w = c.box(cx, 9.0, proj, w=1.1, h=0.7, tone="weight", size=FONT - 1)
        c.arrow(_edge(x, "b"), _edge(w, "t"))
        # the whole projected matrix (T, d): one column; its h slices are drawn inside it
        c.ax.add_patch(Rectangle((cx - col_w / 2, col_bottom), col_w, col_top - col_bottom, facecolor="#F4F4F4",
                                 edgecolor=GREY, lw=0.8, zorder=1))
        c.arrow(_edge(w, "b"), (cx, col_top), label=rf"${name}$", label_offset=(0.3, 0), size=FONT - 1)
    c.text(col_x[1], col_bottom - 0.3, rf"split the features into $h$={heads} heads of width $d_k = d_{{\mathrm{{model}}}}/h$",
           size=FONT - 1.5)  # under Q, K, V
    # the columns' vertical axis is the feature axis, not the positions: say so beside Q
    c.ax.annotate("", xy=(col_x[0] - col_w / 2 - 0.45, col_bottom), xytext=(col_x[0] - col_w / 2 - 0.45, col_top),
                  arrowprops=dict(arrowstyle="<->", color=GREY, lw=0.9))
    c.text(col_x[0] - col_w / 2 - 0.85, (col_top + col_bottom) / 2, r"features ($d_{\mathrm{model}}$); all $T$ positions in each slice",
           size=FONT - 2.5, rotation=90)
    frame_l, frame_r = col_x[0] - col_w / 2 - 0.2, col_x[-1] + col_w / 2 + 0.2
    cat_x, cat_w = 11.4, 0.7
    c.ax.add_patch(Rectangle((cat_x - cat_w / 2, col_bottom), cat_w, col_top - col_bottom, facecolor="#F4F4F4",
                             edgecolor=GREY, lw=0.8, zorder=1))
    for i, (y, colour) in enumerate(zip(rows, colours)):
        # head i's inputs: slice i of Q, of K and of V, framed together in its colour
        c.ax.add_patch(FancyBboxPatch((frame_l, y - cell_h / 2 - 0.12), frame_r - frame_l, cell_h + 0.24,
                                      boxstyle="round,pad=0,rounding_size=0.12", facecolor="none", edgecolor=colour,
                                      lw=1.3, zorder=2))
        for cx, name in zip(col_x, "QKV"):
            c.ax.add_patch(Rectangle((cx - col_w / 2 + 0.08, y - cell_h / 2), col_w - 0.16, cell_h,
                                     facecolor=_tint(colour, 0.35), edgecolor=colour, zorder=3))
            if heads <= 6:
                c.text(cx, y, rf"${name}_{i + 1}$", size=FONT - 2.5, zorder=4)
        head = c.box(9.0, y, f"attention, head {i + 1}", w=2.7, h=min(0.7, cell_h + 0.1), tone=colour, size=FONT - 2)
        c.arrow((frame_r, y), _edge(head, "l"), tone=colour, lw=1.1)
        c.ax.add_patch(Rectangle((cat_x - cat_w / 2 + 0.08, y - cell_h / 2), cat_w - 0.16, cell_h,
                                 facecolor=_tint(colour, 0.35), edgecolor=colour, zorder=3))
        c.arrow(_edge(head, "r"), (cat_x - cat_w / 2 + 0.08, y), tone=colour, lw=1.1)
    c.text(cat_x, col_bottom - 0.3, "concat", size=FONT - 1.5)
    wo = c.box(13.3, mid, r"$W_O$", w=1.2, tone="weight")
    c.arrow((cat_x + cat_w / 2, mid), _edge(wo, "l"))
    c.arrow(_edge(wo, "r"), (15.0, mid))
    c.text(14.4, mid - 0.6, r"$(T, d_{\mathrm{model}})$", size=FONT - 1.5)
    return c.done()


# §14.52 / §14.53 ----------------------------------------------------------------------------------

def positions_added(tokens=("send", "the", "report")) -> Diagram:
    """§14.52: the input of the first layer is token embedding + positional encoding, position by position."""
    if not tokens:
        raise ValueError("tokens must be a non-empty sequence of strings")
    import numpy as np

    n, d = len(tokens), 8
    c = Canvas(4.2 * n + 4.0, 9.2)
    rng = np.random.default_rng(0)
    for p, tok in enumerate(tokens):
        x0 = 3.6 + 4.2 * p
        c.text(x0 + 1.0, 0.6, f"“{tok}”  at position {p}", size=FONT - 1)
        emb = rng.uniform(0.15, 0.7, d)
        pe = [0.5 + 0.4 * (math.sin(p * 10000 ** (-2 * (i // 2) / d)) if i % 2 == 0 else
                           math.cos(p * 10000 ** (-2 * (i // 2) / d))) for i in range(d)]
        c.cells(x0 - 0.8, 1.5, [""] * d, tone="state", alphas=list(emb))
        c.text(x0 + 1.0, 2.65, "+", size=FONT + 3)
        c.cells(x0 - 0.8, 3.2, [""] * d, tone="gate", alphas=pe)
        c.arrow((x0 + 1.0, 3.85), (x0 + 1.0, 4.85))
        c.cells(x0 - 0.8, 5.0, [""] * d, tone="attn", alphas=[min(0.95, (a + b) / 1.4) for a, b in zip(emb, pe)])
        c.arrow((x0 + 1.0, 5.6), (x0 + 1.0, 6.7))
    for y, s in ((1.72, "token\nembedding"), (3.42, "positional\nencoding"), (5.22, "sum: the\nlayer's input")):
        c.text(1.2, y, s, size=FONT - 2.5)
    c.box(2.1 * n + 2.8, 7.5, "self-attention (sees positions only through the sums)", w=4.2 * n - 0.4, h=0.9,
          tone="attn", size=FONT - 1)
    return c.done()


def _times(k: int) -> str:
    return "" if k == 1 else str(k)


def rope_rotation(m: int = 3, n: int = 1, theta: float = 0.35) -> Diagram:
    """§14.53: RoPE turns q by mθ and k by nθ; their dot product sees only the angle (m - n)θ."""
    _positive_int("m", m, 0)
    _positive_int("n", n, 0)
    if not theta > 0:
        raise ValueError(f"theta must be positive, got {theta}")
    c = Canvas(16, 8.0)
    for cx, shift, title in ((3.9, 0, f"positions m={m}, n={n}"), (11.9, 2, f"both shifted by 2: m={m + 2}, n={n + 2}")):
        cy, r = 3.8, 2.9
        c.line([cx - r - 0.3, cx + r + 0.3], [cy, cy], lw=0.6, alpha=0.5)
        c.line([cx, cx], [cy - r - 0.3, cy + r + 0.3], lw=0.6, alpha=0.5)
        t = [i / 100 * 2 * math.pi for i in range(101)]
        c.line([cx + r * math.cos(a) for a in t], [cy + r * math.sin(a) for a in t], lw=0.6, alpha=0.35)
        q0, k0 = 0.25, -0.2  # the angles of q and k before rotation
        aq, ak = q0 + (m + shift) * theta, k0 + (n + shift) * theta
        c.arrow((cx, cy), (cx + r * math.cos(aq), cy + r * math.sin(aq)), tone="attn", lw=2)
        c.arrow((cx, cy), (cx + r * 0.8 * math.cos(ak), cy + r * 0.8 * math.sin(ak)), tone="state", lw=2)
        c.text(cx + (r + 0.55) * math.cos(aq), cy + (r + 0.4) * math.sin(aq), rf"$R({_times(m + shift)}\theta)\mathbf{{q}}$",
               colour=TONES["attn"], size=FONT - 1)
        c.text(cx + (r * 0.8 + 0.6) * math.cos(ak), cy + (r * 0.8 + 0.4) * math.sin(ak),
               rf"$R({_times(n + shift)}\theta)\mathbf{{k}}$", colour=TONES["state"], size=FONT - 1)
        arc = [ak + (aq - ak) * i / 30 for i in range(31)]
        c.line([cx + 1.1 * math.cos(a) for a in arc], [cy + 1.1 * math.sin(a) for a in arc], tone="op", lw=1.8)
        c.text(cx + 1.75 * math.cos((aq + ak) / 2), cy + 1.75 * math.sin((aq + ak) / 2), r"$(m-n)\theta+\varphi$",
               colour=TONES["op"], size=FONT - 2)
        c.text(cx, 7.5, title, size=FONT - 1)
    c.text(8.0, 0.35, r"the angle between them, and so $\tilde{\mathbf{q}}_m\cdot\tilde{\mathbf{k}}_n$, is the same in both",
           size=FONT - 1)
    return c.done()


# §14.54 / §14.55 / §14.56 -------------------------------------------------------------------------

def block_pre_post_norm() -> Diagram:
    """§14.54: the residual stream through one block, post-norm (left) and pre-norm (right).

    A dashed outline marks one block (repeated L times); the pre-norm stack's final LayerNorm sits above it.
    """
    c = Canvas(16, 12.0)
    for x0, pre in ((3.8, False), (11.8, True)):
        c.text(x0, 11.4, "pre-norm (GPT-2, most LLMs)" if pre else "post-norm (original)", size=FONT)
        c.arrow((x0, 0.6), (x0, 10.6), tone="state", lw=3.0)
        c.text(x0, 0.25, r"$x$ (the residual stream)", size=FONT - 1.5)
        top = 9.35 if pre else 10.0  # the block's outline ends above its last add (and, in post-norm, LayerNorm)
        c.ax.add_patch(FancyBboxPatch((x0 - 1.45, 1.05), 5.4, top - 1.05, boxstyle="round,pad=0,rounding_size=0.25",
                                      fill=False, edgecolor=GREY, lw=1.2, linestyle=(0, (4, 2.5))))
        c.text(x0 - 0.8, 1.45, r"$\times L$", size=FONT - 1, colour=GREY)
        for y_in, name in ((1.6, "multi-head\nattention"), (5.8, "feed-forward\n(FFN)")):
            plus = c.circle(x0, y_in + 3.0, "+")
            sub_x = x0 + 2.5
            if pre:
                ln = c.box(sub_x, y_in + 0.6, "LayerNorm", w=2.2, h=0.6, tone="gate", size=FONT - 2)
                c.line([x0, sub_x], [y_in, y_in])
                c.arrow((sub_x, y_in), _edge(ln, "b"))
                f = c.box(sub_x, y_in + 1.8, name, w=2.4, h=1.0, tone="attn" if "att" in name else "op", size=FONT - 2)
                c.arrow(_edge(ln, "t"), _edge(f, "b"))
            else:
                c.line([x0, sub_x], [y_in, y_in])
                f = c.box(sub_x, y_in + 1.4, name, w=2.4, h=1.0, tone="attn" if "att" in name else "op", size=FONT - 2)
                c.arrow((sub_x, y_in), _edge(f, "b"))
            c.arrow(_edge(f, "t"), _edge(plus, "r"), bend=0.3)
            if not pre:
                c.box(x0, y_in + 3.75, "LayerNorm", w=2.0, h=0.55, tone="gate", size=FONT - 2)
        if pre:
            c.box(x0, 10.05, "the stack's final LayerNorm", w=4.2, h=0.6, tone="gate", size=FONT - 2)
    return c.done()


def sequential_depth(steps: int = 6) -> Diagram:
    """§14.55: a GRU needs T dependent steps; one causal attention layer connects every allowed pair at once."""
    _positive_int("steps", steps, 2)
    c = Canvas(2.0 * steps + 4.0, 8.6)
    for i in range(steps):
        x = 2.8 + 2.0 * i
        h = c.box(x, 6.2, rf"$\mathbf{{h}}_{{{i + 1}}}$", w=1.0, h=0.7)
        c.arrow((x, 5.0), _edge(h, "b"))
        if i:
            c.arrow((x - 1.5, 6.2), _edge(h, "l"), tone="op", lw=1.8)
        c.text(x, 7.2, f"step {i + 1}", size=FONT - 2.5, colour=TONES["op"])
    c.text(1.0, 6.2, "GRU", size=FONT, ha="center")
    c.text(c.ax.get_xlim()[1] / 2 + 0.5, 8.1, f"{steps} steps, one after another: depth $O(T)$", size=FONT - 1)
    for i in range(steps):
        x = 2.8 + 2.0 * i
        c.box(x, 3.4, rf"$\mathbf{{y}}_{{{i + 1}}}$", w=1.0, h=0.7, tone="attn")
        for j in range(i + 1):  # causal: position i reads positions 1..i
            c.line([2.8 + 2.0 * j, x], [1.35, 3.05], tone="attn", lw=0.6, alpha=0.6)
        c.box(x, 1.0, rf"$\mathbf{{x}}_{{{i + 1}}}$", w=1.0, h=0.7, tone="io")
    c.text(1.0, 2.3, "causal\nattention", size=FONT, ha="center")
    c.text(c.ax.get_xlim()[1] / 2 + 0.5, 4.5, "every allowed pair in one parallel step: depth $O(1)$", size=FONT - 1)
    return c.done()


def kv_cache(step: int = 4) -> Diagram:
    """§14.56: generating token t with a KV cache: only the new token is projected; its k, v are appended."""
    _positive_int("step", step, 2)
    c = Canvas(2.0 + 1.2 * step + 8.0, 8.0)
    x0 = 2.4
    c.text(1.0, 5.8, "cache\n$K$", size=FONT - 1)
    c.text(1.0, 4.4, "cache\n$V$", size=FONT - 1)
    for j in range(step):
        new = j == step - 1
        tone = "op" if new else "state"
        c.cells(x0 + 1.2 * j, 5.5, [f"k{j + 1}"], w=1.0, h=0.6, tone=tone, alphas=[0.45 if new else 0.18])
        c.cells(x0 + 1.2 * j, 4.1, [f"v{j + 1}"], w=1.0, h=0.6, tone=tone, alphas=[0.45 if new else 0.18])
        tok = c.box(x0 + 1.2 * j + 0.5, 1.0, f"token {j + 1}", w=1.05, h=0.6, tone="op" if new else "io", size=FONT - 3)
    xn = x0 + 1.2 * (step - 1) + 0.5
    proj = c.box(xn, 2.55, r"$W_Q, W_K, W_V$", w=1.9, h=0.7, tone="weight", size=FONT - 2)
    c.arrow((xn, 1.3), _edge(proj, "b"))
    c.arrow((xn - 0.2, 2.9), (xn - 0.2, 4.1), tone="op")
    c.arrow((xn + 0.2, 2.9), (xn + 0.2, 5.5), tone="op", bend=0.0)
    q = c.box(xn + 3.2, 2.55, rf"$\mathbf{{q}}_{step}$", w=1.0, h=0.7, tone="attn")
    c.arrow(_edge(proj, "r"), _edge(q, "l"), tone="attn")
    att = c.box(xn + 3.2, 5.1, "attend to all\ncached k, v", w=2.2, h=1.0, tone="attn", size=FONT - 2)
    c.arrow(_edge(q, "t"), _edge(att, "b"), tone="attn")
    c.arrow((x0 + 1.2 * step - 0.1, 5.1), _edge(att, "l"), tone="attn")
    out = c.box(xn + 3.2, 7.0, f"token {step + 1}", w=1.4, h=0.6, tone="io", size=FONT - 2)
    c.arrow(_edge(att, "t"), _edge(out, "b"))
    c.text(x0 + 0.6 * (step - 1) + 0.5, 6.7, f"kept from steps 1..{step - 1}; step {step} appends one column",
           size=FONT - 2)
    c.text(x0 + 0.6 * (step - 1) + 0.5, 0.2, f"only token {step} passes through the layer at step {step}",
           size=FONT - 2, colour=TONES["op"])
    return c.done()


# §14.57 / §14.58 ----------------------------------------------------------------------------------

def _segment(chunk: str, merges) -> list[str]:
    pieces = list(chunk)
    for left, right in merges:
        out, i = [], 0
        while i < len(pieces):
            if i + 1 < len(pieces) and pieces[i] == left and pieces[i + 1] == right:
                out.append(left + right)
                i += 2
            else:
                out.append(pieces[i])
                i += 1
        pieces = out
    return pieces


def bpe_merges(chunks, merges) -> Diagram:
    """§14.57: each chunk of the corpus re-segmented after every merge.

    ``chunks``: (chunk, count) pairs; ``merges``: (left, right, count) in training order.
    """
    chunks, merges = list(chunks), list(merges)
    if not chunks or not merges:
        raise ValueError("chunks and merges must both be non-empty")
    rows = len(merges) + 1
    col_w = 3.6
    c = Canvas(4.8 + col_w * len(chunks), 1.2 + 0.75 * (rows + 1))
    top = 0.75 * (rows + 1) + 0.4
    for j, (chunk, count) in enumerate(chunks):
        c.text(5.0 + col_w * j + col_w / 2 - 0.2, top, f"{chunk.replace(' ', '␣')!r} ×{count}".replace("'", "“", 1)
               .replace("'", "”", 1), size=FONT - 1.5)
    for r in range(rows):
        y = top - 0.75 * (r + 1)
        if r == 0:
            c.text(0.25, y, "bytes", size=FONT - 2, ha="left")
        else:
            left, right, count = merges[r - 1]
            c.text(0.25, y, f"{r}. {left.replace(' ', '␣')}+{right.replace(' ', '␣')} ({count})", size=FONT - 2.5, ha="left")
        done = [(a, b) for a, b, _ in merges[:r]]
        new = merges[r - 1][0] + merges[r - 1][1] if r else None
        for j, (chunk, _) in enumerate(chunks):
            x = 5.0 + col_w * j
            for piece in _segment(chunk, done):
                w = 0.14 + 0.27 * len(piece)
                c.box(x + w / 2, y, piece.replace(" ", "␣"), w=w, h=0.55, tone="op" if piece == new else "state",
                      size=FONT - 3, round_=0.08)
                x += w + 0.06
    return c.done()


def shifted_targets(text: str = "To be, or") -> Diagram:
    """§14.58: the targets are the inputs shifted left by one; every position predicts from the true prefix."""
    if len(text) < 2:
        raise ValueError(f"text must have at least 2 characters, got {text!r}")
    inputs, targets = text[:-1], text[1:]
    n = len(inputs)
    c = Canvas(1.3 * n + 4.0, 7.6)
    for i in range(n):
        x = 3.2 + 1.3 * i
        xi = c.box(x, 1.1, repr(inputs[i])[1:-1].replace(" ", "␣"), w=0.9, h=0.7, tone="io")
        m = c.box(x, 3.6, "", w=1.0, h=1.0, tone="state")
        ti = c.box(x, 6.1, repr(targets[i])[1:-1].replace(" ", "␣"), w=0.9, h=0.7, tone="op")
        c.arrow(_edge(xi, "t"), _edge(m, "b"))
        c.arrow(_edge(m, "t"), _edge(ti, "b"), label=r"$p_\theta$", label_offset=(0.35, 0), size=FONT - 3)
        if i:
            c.arrow((x - 0.8, 3.6), (x - 0.5, 3.6), tone="state")
        if i < n - 1:
            c.arrow((x + 0.35, 5.72), (x + 1.3 - 0.35, 1.48), tone="op", dashed=True, lw=0.7)
    c.text(1.2, 1.1, "input\n$x_{1..T}$", size=FONT - 1.5)
    c.text(1.2, 3.6, "causal\nmodel", size=FONT - 1.5)
    c.text(1.2, 6.1, "target\n$x_{2..T+1}$", size=FONT - 1.5)
    c.text(3.2 + 0.65 * (n - 1), 7.25, "teacher forcing: the next input is the true character (dashed), never the "
           "model's guess", size=FONT - 2)
    return c.done()


# §14.61 -------------------------------------------------------------------------------------------

def three_families(n: int = 4) -> Diagram:
    """§14.61: who sees whom in encoder-only, decoder-only and encoder–decoder models."""
    _positive_int("n", n, 2)
    w = 1.2
    c = Canvas(3 * (w * n + 1.6) + w * n + 1.0, 7.6)

    def column(x0, labels_in, labels_out, causal, tones, y_in=1.0, y_out=5.0):
        xs = [x0 + w * i for i in range(len(labels_in))]
        for i, x in enumerate(xs):
            c.box(x, y_in, labels_in[i], w=1.0, h=0.6, tone="io", size=FONT - 2.5)
            c.box(x, y_out, labels_out[i], w=1.0, h=0.6, tone=tones[i], size=FONT - 2.5, fill=tones[i] != "io")
            for j, xj in enumerate(xs):
                if not causal or j <= i:
                    c.line([xj, x], [y_in + 0.3, y_out - 0.3], tone="attn", lw=0.6, alpha=0.6)
        return xs

    # encoder-only: every output reads every input; only the output at the masked position carries a loss
    enc_in = ["a", "[M]"] + [chr(ord("c") + i) for i in range(n - 2)]
    column(1.2, enc_in, [chr(ord("a") + i) for i in range(n)], False, ["io", "op"] + ["io"] * (n - 2))
    c.text(1.2 + w, 5.65, "loss", size=FONT - 3.5, colour=TONES["op"])
    c.text(1.2 + w * (n - 1) / 2, 6.4, "encoder-only: all see all;\npredict the masked token", size=FONT - 2)
    x0 = 1.2 + w * n + 1.6
    toks = [chr(ord("a") + i) for i in range(n)]
    column(x0, toks, [chr(ord("b") + i) for i in range(n)], True, ["op"] * n)
    c.text(x0 + w * (n - 1) / 2, 6.4, "decoder-only: causal;\npredict every next token", size=FONT - 2)
    x1 = x0 + w * n + 1.6
    src = [chr(ord("p") + i) for i in range(n)]
    enc_x = [x1 + w * i for i in range(n)]
    for i, x in enumerate(enc_x):
        c.box(x, 1.0, src[i], w=1.0, h=0.6, tone="io", size=FONT - 2.5)
        c.box(x, 3.0, f"h{i + 1}", w=1.0, h=0.6, tone="state", size=FONT - 2.5)  # the encoder's outputs
        for xj in enc_x:
            c.line([xj, x], [1.3, 2.7], tone="attn", lw=0.6, alpha=0.6)
    x2 = x1 + w * n + 0.4
    dec_x = [x2 + w * i for i in range(n)]
    for i, x in enumerate(dec_x):
        c.box(x, 1.0, "BOS" if i == 0 else f"y{i}", w=1.0, h=0.6, tone="io", size=FONT - 2.5)
        c.box(x, 5.0, f"y{i + 1}", w=1.0, h=0.6, tone="op", size=FONT - 2.5)
        for j, xj in enumerate(dec_x):
            if j <= i:
                c.line([xj, x], [1.3, 4.7], tone="attn", lw=0.6, alpha=0.6)
        for xe in enc_x:
            c.line([xe, x], [3.3, 4.7], tone="attn", lw=0.7, alpha=0.7, dashed=True)
    c.text((x1 + dec_x[-1]) / 2, 6.4, "encoder–decoder: bidirectional encoder, causal decoder\n"
           "plus cross-attention to every encoder output", size=FONT - 2)
    # the legend: what the two line styles stand for
    c.line([1.2, 2.0], [0.3, 0.3], tone="attn", lw=1.4)
    c.text(2.2, 0.3, "self-attention (within one sequence)", size=FONT - 3, ha="left")
    c.line([8.2, 9.0], [0.3, 0.3], tone="attn", lw=1.4, dashed=True)
    c.text(9.2, 0.3, f"cross-attention (decoder position → encoder outputs h1…h{n})", size=FONT - 3, ha="left")
    return c.done()


# §14.62 / §14.63 ----------------------------------------------------------------------------------

def windows_and_origins(context: int = 168, horizon: int = 48, origins: int = 3) -> Diagram:
    """§14.62: (context, horizon) windows cut from a series, and rolling origins n - k*H, then the test."""
    _positive_int("context", context)
    _positive_int("horizon", horizon)
    _positive_int("origins", origins)
    c = Canvas(17, 8.2)
    left, right = 1.2, 16.4
    n_plot = context + (origins + 3) * horizon
    sx = (right - left) / n_plot

    def seg(y, a, b, tone, label):
        c.ax.add_patch(Rectangle((left + a * sx, y - 0.25), (b - a) * sx, 0.5, facecolor=_tint(TONES[tone], 0.4),
                                 edgecolor=TONES[tone], lw=1.0))
        if label:
            c.text(left + (a + b) / 2 * sx, y, label, size=FONT - 3)

    c.text(8.8, 7.7, f"windows: a context of C={context} values, then the horizon of H={horizon}", size=FONT - 1)
    for k, a in enumerate((0, 20, 40)):
        y = 6.8 - 0.7 * k
        seg(y, a, a + context, "state", "context C" if k == 0 else "")
        seg(y, a + context, a + context + horizon, "op", "horizon H" if k == 0 else "")
    c.text(left + (40 + context + horizon) * sx + 0.3, 6.8 - 1.4, "… slid one step at a time", size=FONT - 2.5,
           ha="left")
    c.text(8.8, 3.8, f"rolling origins: train on the past, score the next H; {origins} inside the training data, "
           "then the test", size=FONT - 1)
    n = context + origins * horizon + horizon * 1
    for k in range(origins + 1):
        y = 2.9 - 0.75 * k
        origin = n - (origins - k) * horizon
        seg(y, 0, origin, "state", "history up to the origin" if k == 0 else "")
        seg(y, origin, origin + horizon, "grad" if k == origins else "op", "test" if k == origins else "")
        name = "n" if k == origins else f"n-{(origins - k) * horizon}"
        c.text(left + origin * sx, y + 0.45, name, size=FONT - 3)
    return c.done()


def nbeats_stack(blocks: int = 4, layers: int = 4) -> Diagram:
    """§14.63: the book's generic N-BEATS: each block subtracts its backcast and adds a partial forecast."""
    _positive_int("blocks", blocks)
    _positive_int("layers", layers)
    c = Canvas(17, 2.4 + 2.2 * blocks)
    top = 1.2 + 2.2 * blocks
    c.text(1.4, top + 0.55, "input window\n(L values)", size=FONT - 2)
    xs, xf = 1.4, 14.4
    c.text(xf, top + 0.55, "forecast\n(H values)", size=FONT - 2)
    for b in range(blocks):
        y = top - 1.0 - 2.2 * b
        c.box(7.0, y, "", w=7.0, h=1.5, tone="weight", fill=False)
        for i in range(layers):
            c.box(4.2 + 1.05 * i, y, "FC\nReLU", w=0.9, h=1.1, tone="weight", size=FONT - 3.5)
        fore = c.box(9.4, y + 0.35, "forecast", w=1.7, h=0.5, tone="op", size=FONT - 3)
        back = c.box(9.4, y - 0.35, "backcast", w=1.7, h=0.5, tone="state", size=FONT - 3)
        c.text(7.0, y + 0.95, f"block {b + 1}", size=FONT - 2.5)
        c.line([xs, xs], [y + (0.95 if b == 0 else 1.1), y])
        c.arrow((xs, y), (3.5, y))
        minus = c.circle(xs, y - 1.1, "$-$", r=0.34)
        c.line([9.4, 9.4], [y - 0.6, y - 1.1], tone="state")
        c.arrow((9.4, y - 1.1), _edge(minus, "r"), tone="state")
        c.arrow((xs, y), _edge(minus, "t"))
        plus = c.circle(xf, y + 0.35, "+", r=0.28)
        c.arrow(_edge(fore, "r"), _edge(plus, "l"), tone="op")
        if b:
            c.arrow((xf, y + 2.2 + 0.35 - 0.28), _edge(plus, "t"), tone="op")
    c.arrow((xf, top - 1.0 - 2.2 * (blocks - 1) + 0.35 - 0.28), (xf, 0.4), tone="op")
    c.arrow((xs, top - 1.0 - 2.2 * (blocks - 1) - 1.38), (xs, 0.4))
    c.text(xs + 0.5, 0.4, "residual: what no block explained", size=FONT - 3, ha="left")
    c.text(xf - 0.25, 0.4, "sum of partial forecasts", size=FONT - 3, ha="right")
    return c.done()
