"""Give every figure of the book a number, a caption and alt text, and add the diagram cells.

    python tools/figures.py            # apply to chapters/*.ipynb (idempotent)
    python tools/figures.py --check    # exit 1 if a notebook lacks what this file asks for

The captions and alt texts live in the notebooks' cell metadata (myst-nb's
``mystnb.figure`` and ``mystnb.image``), where the build reads them; this file is how they
were put there, and it can put them back after a merge that lost them. It edits notebooks
only through nbformat, touches only the cells it names, and never changes a code cell's
source. See CONTRIBUTING.md, "Figures".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"

# ---------------------------------------------------------------------------------------------
# Diagrams: (section, new cell id, insert after cell id (or "before:<id>"), code, name, caption, alt,
#            [(markdown cell id, old text, new text)] -- the prose that refers to the figure)
# ---------------------------------------------------------------------------------------------
DIAGRAMS = [
    ("14_46", "diagram-rnn", "cell-006", "from helpers.diagrams import rnn_unrolled\n\nrnn_unrolled(steps=4)",
     "fig-rnn-unrolled",
     "The recurrence unrolled in time. One set of weights $W_{xh}$, $W_{hh}$, $W_{hy}$ serves every step; "
     "the gradient of a late loss reaches an early state only along the dashed path, one Jacobian per step.",
     "Diagram: a row of hidden states h0 (zero), h1, h2, h3, hT linked left to right by arrows labelled W_hh; "
     "each state receives an input x_t from below through W_xh and emits an output y_t above through W_hy. "
     "Dashed red arrows run back from each state to the previous one: the gradient is a product of one "
     "Jacobian diag(1 - h_t^2) W_hh per step, which is why it can vanish or explode.",
     [("cell-004", "The state is a running summary of everything read so far;",
       "The state is a running summary of everything read so far ({numref}`fig-rnn-unrolled` draws the loop unrolled);"),
      ("cell-015", "ordinary backpropagation through the unrolled loop —",
       "ordinary backpropagation through the unrolled loop, the dashed path of {numref}`fig-rnn-unrolled` —")]),
    ("14_47", "diagram-lstm", "cell-006", "from helpers.diagrams import lstm_cell\n\nlstm_cell()", "fig-lstm-cell",
     "The LSTM cell. Three sigmoid gates and a tanh candidate are computed from $[\\mathbf h_{t-1}, \\mathbf x_t]$; "
     "the cell state runs along the top through one multiplication by $\\mathbf f_t$ and one addition.",
     "Diagram of an LSTM cell: the cell state c_{t-1} flows along a thick top line through a multiply node "
     "(the forget gate f_t) and an add node (where i_t times g_t is written) to c_t. Below, four boxes f, i, g "
     "and o are fed from h_{t-1} and x_t. c_t also passes through tanh and is multiplied by the output gate o_t "
     "to give h_t. The point: the cell path has no matrix multiply, only a gate and an addition.",
     [("cell-004", "decide what happens to the cell:",
       "decide what happens to the cell ({numref}`fig-lstm-cell`):")]),
    ("14_47", "diagram-gru", "cell-025", "from helpers.diagrams import gru_cell\n\ngru_cell()", "fig-gru-cell",
     "The GRU in torch's convention. The update gate $\\mathbf z_t$ keeps a share of $\\mathbf h_{t-1}$ unchanged "
     "and fills the rest with the candidate $\\mathbf n_t$; the reset gate acts inside the candidate.",
     "Diagram of a GRU cell: h_{t-1} flows along a thick top line through a multiply node (the update gate z_t) "
     "and an add node to h_t. From the input line h_{t-1}, x_t three boxes are computed: z_t, the candidate "
     "n_t = tanh and the reset gate r_t, which multiplies W_hn h_{t-1} + b_hn inside the candidate. The "
     "candidate is scaled by 1 - z_t and added to the kept share, h_t = (1 - z_t) n_t + z_t h_{t-1}.",
     [("cell-024", "no separate cell state.", "no separate cell state ({numref}`fig-gru-cell`).")]),
    ("14_48", "diagram-encdec", "cell-006", "from helpers.diagrams import encoder_decoder\n\nencoder_decoder(n_in=4, n_out=3)",
     "fig-encoder-decoder",
     "The encoder–decoder as `Seq2Seq` builds it: the encoder's last state $\\mathbf c = \\mathbf h_T$ starts "
     "the decoder and is read again by the output layer at every step, next to $\\mathbf s_t$.",
     "Diagram: an encoder GRU reads x1 to xT into states h1 to hT; the last state is the fixed context c. It "
     "initialises the decoder GRU, which reads BOS, y1, y2 (teacher forcing) into states s1 to s3, and arrows "
     "from c reach the output head at every decoder step, which reads [s_t; c] and predicts y_t. All the decoder "
     "knows of the source passes through the one vector c.",
     [("cell-004", "passes through $\\mathbf c$, a vector of",
       "passes through $\\mathbf c$ ({numref}`fig-encoder-decoder`), a vector of")]),
    ("14_49", "diagram-attention", "cell-005",
     "from helpers.diagrams import attention_over_encoder\n\nattention_over_encoder(weights=(0.1, 0.15, 0.6, 0.15))",
     "fig-attention-over-encoder",
     "Attention at decoder step $t$: the decoder state $\\mathbf s_t$ scores every encoder state, the softmax "
     "turns the scores into weights $\\alpha_{tj}$ (illustrative values), and the context $\\mathbf c_t$ is their "
     "weighted average, read by the output layer beside $\\mathbf s_t$.",
     "Diagram: four encoder states h1 to hT in a row, each sending an arrow to a context box c_t whose thickness "
     "is its attention weight (0.10, 0.15, 0.60, 0.15 in this example). A dashed arrow from the decoder state "
     "s_t stands for the scores and the softmax. The context and s_t go into the output head, which predicts "
     "y_t. Each output step gets its own context instead of one fixed vector.",
     [("cell-004", "At output step $t$, with decoder state $\\mathbf s_t$:",
       "At output step $t$, with decoder state $\\mathbf s_t$ ({numref}`fig-attention-over-encoder`):")]),
    ("14_50", "diagram-qkv", "cell-007", "from helpers.diagrams import qkv_lookup\n\nqkv_lookup(weights=(0.05, 0.7, 0.2, 0.05))",
     "fig-qkv-lookup",
     "Attention as a soft dictionary look-up: the query is compared with every key, the softmax turns the "
     "scaled scores into weights (illustrative values), and the answer is the weighted sum of all the values.",
     "Diagram: a query q on the left is matched against four keys k1 to k4 by scaled dot products; bars show "
     "the softmax weights 0.05, 0.70, 0.20 and 0.05; the values v1 to v4 flow into the output sum with arrow "
     "widths proportional to their weights. Unlike a dictionary, every value contributes, the best match most.",
     [("cell-006", "and the answer is the weighted average of *all* the values:",
       "and the answer is the weighted average of *all* the values ({numref}`fig-qkv-lookup`):")]),
    ("14_51", "diagram-multihead", "cell-005", "from helpers.diagrams import multi_head_split\n\nmulti_head_split(heads=4)",
     "fig-multi-head",
     "Multi-head attention: one projection each for Q, K and V, split into $h$ slices of width "
     "$d_{\\text{model}}/h$; each head attends with its own slice, and the heads' outputs are concatenated and "
     "mixed by $W_O$.",
     "Diagram: the input X of shape (T, d) goes through W_Q, W_K and W_V; each result is drawn as a bar split "
     "into four coloured slices, one per head. Four attention boxes, one per head colour, feed a concatenated "
     "bar of four slices, which W_O maps back to shape (T, d). The split costs no extra parameters: the heads "
     "share the same matrices, cut into columns.",
     [("cell-004", "computes every head's queries at once;",
       "computes every head's queries at once ({numref}`fig-multi-head`);")]),
    ("14_52", "diagram-positions", "cell-033",
     "from helpers.diagrams import positions_added\n\npositions_added(tokens=(\"send\", \"the\", \"report\"))",
     "fig-positions-added",
     "Positions are added, not appended: the first layer's input at each position is the token's embedding "
     "plus the positional encoding of its position, one vector of the same width.",
     "Diagram: for three tokens, send, the and report at positions 0, 1 and 2, a row of blue cells (the token "
     "embedding) plus a row of yellow cells (the positional encoding of that position) gives a row of purple "
     "cells (their sum), and the sums go into self-attention. Attention sees positions only through these sums.",
     [("cell-031", "add every position's code to every token,",
       "add every position's code to every token ({numref}`fig-positions-added`),")]),
    ("14_53", "diagram-rope", "cell-011", "from helpers.diagrams import rope_rotation\n\nrope_rotation(m=3, n=1, theta=0.35)",
     "fig-rope-rotation",
     "RoPE in one pair of features: the query is turned by $m\\theta$ and the key by $n\\theta$. Shifting both "
     "positions by the same amount turns both vectors but leaves the angle between them, and so the score, "
     "unchanged.",
     "Diagram with two unit circles. Left: a query vector rotated by 3 theta and a key vector rotated by theta, "
     "with the angle between them marked. Right: the same vectors for positions shifted by two, rotated by "
     "5 theta and 3 theta; both arrows have moved, but the marked angle between them is the same, so the dot "
     "product depends only on the offset m - n.",
     [("cell-009", "and the key likewise,", "and the key likewise ({numref}`fig-rope-rotation`),")]),
    ("14_54", "diagram-block", "before:cell-004", "from helpers.diagrams import block_pre_post_norm\n\nblock_pre_post_norm()",
     "fig-block-pre-post-norm",
     "One Transformer block on the residual stream. Post-norm (left) puts a LayerNorm on the stream after each "
     "addition; pre-norm (right) normalises only what each sublayer reads, so the stream itself is a plain sum.",
     "Diagram of two columns, each a thick vertical arrow for the residual stream x. In each, a branch leaves the "
     "stream, passes through multi-head attention and returns to an add node, then a second branch does the "
     "same through the feed-forward network. Left, post-norm: a LayerNorm box sits on the stream after each add "
     "node. Right, pre-norm: the LayerNorm sits on each branch before its sublayer and the stream is only ever "
     "added to, with the stack's final LayerNorm at the top.",
     [("cell-004", "The rest of the section takes the pieces one at a time.",
       "{numref}`fig-block-pre-post-norm`, just above, draws both. The rest of the section takes the pieces one at a time.")]),
    ("14_55", "diagram-depth", "cell-020", "from helpers.diagrams import sequential_depth\n\nsequential_depth(steps=6)",
     "fig-sequential-depth",
     "Sequential depth. The GRU's steps form a chain, each waiting for the previous state: $T$ steps in "
     "sequence. Causal attention connects every allowed pair of positions in one parallel step.",
     "Diagram in two rows. Top: six GRU states h1 to h6 joined by orange arrows, labelled step 1 to step 6, "
     "so the work runs one step after another, depth O(T). Bottom: six inputs x1 to x6 and six outputs y1 to "
     "y6 of causal attention, with a thin line from every input to every output at or after its position, all "
     "computed at once, depth O(1).",
     [("cell-021", "is $O(1)$ for attention and $O(T)$ for recurrence.",
       "is $O(1)$ for attention and $O(T)$ for recurrence ({numref}`fig-sequential-depth`).")]),
    ("14_56", "diagram-kvcache", "cell-013b", "from helpers.diagrams import kv_cache\n\nkv_cache(step=4)", "fig-kv-cache",
     "One generation step with a KV cache. Only the newest token is projected; its key and value are appended "
     "to the cache, and its query attends to every cached key and value.",
     "Diagram: two rows of cells, cache K with k1 to k4 and cache V with v1 to v4; k1 to k3 and v1 to v3 are "
     "blue (kept from earlier steps) and k4, v4 orange (added now). Of the tokens 1 to 4 at the bottom only "
     "token 4 goes through W_Q, W_K, W_V; its k and v are appended to the cache, and its query q4 attends to "
     "all cached keys and values to produce token 5.",
     [("cell-013b", "attends from it to the cached keys.",
       "attends from it to the cached keys ({numref}`fig-kv-cache`).")]),
    ("14_57", "diagram-bpe", "cell-010",
     "from helpers.diagrams import bpe_merges\n\n"
     "bpe_merges(Counter(pretokenize(toy)).items(), [(r[\"left\"], r[\"right\"], r[\"count\"]) for r in rows])",
     "fig-bpe-merges",
     "The merges of the table above, replayed on each chunk of the toy corpus (its count after ×; ␣ is the "
     "space). Each row applies one more merge; the token it creates is orange.",
     "Diagram: a grid with one column per chunk of the toy corpus (low, ␣low, ␣lower, ␣newest, ␣widest, with "
     "their counts) and one row per merge, starting from single bytes. In each row the chunks are shown as "
     "boxes of their current tokens, and the token made by that row's merge is orange: the shared ending est "
     "forms first, then low, then word starts with their leading space.",
     [("cell-011", "The ending `est`, shared by",
       "{numref}`fig-bpe-merges` replays the merges chunk by chunk. The ending `est`, shared by")]),
    ("14_58", "diagram-shifted", "cell-011", "from helpers.diagrams import shifted_targets\n\nshifted_targets(\"To be, or\")",
     "fig-shifted-targets",
     "Shifted targets and teacher forcing. The target at each position is the next character of the input; "
     "the dashed arrows show that the next input is the true character, not the model's guess.",
     "Diagram: the characters T, o, space, b, e, comma, space, o in an input row, a causal model box above each "
     "with arrows from left to right between them, and a target row on top holding the same text shifted one "
     "place left (o, space, b, e, comma, space, o, r). Dashed arrows from each target down to the next input "
     "show teacher forcing: all positions are trained at once from the true prefix.",
     [("cell-010", "never the model's own earlier guesses.",
       "never the model's own earlier guesses ({numref}`fig-shifted-targets`).")]),
    ("14_61", "diagram-families", "before:cell-004", "from helpers.diagrams import three_families\n\nthree_families(n=4)",
     "fig-three-families",
     "Who sees whom in the three families. Encoder-only: every position sees every position, and the model "
     "fills a masked token. Decoder-only: each position sees itself and the past, and predicts the next token. "
     "Encoder–decoder: a bidirectional encoder, and a causal decoder that also cross-attends to every encoder "
     "position.",
     "Diagram of three panels of tokens joined by lines that stand for attention. Left, encoder-only: inputs a, "
     "[M], c, d, with lines from all four to the predicted b at the masked position. Middle, decoder-only: "
     "inputs a to d, each output b to e connected only to inputs at or before its position. Right, "
     "encoder–decoder: source p, q, r, s fully connected into encoder states; the decoder reads BOS, y1, y2, y3 "
     "causally and every output y1 to y4 also has lines to every encoder state.",
     [("cell-004", "A mask is a boolean matrix $M$",
       "{numref}`fig-three-families`, above, draws the three wirings. A mask is a boolean matrix $M$")]),
    ("14_62", "diagram-windows", "cell-004",
     "from helpers.diagrams import windows_and_origins\n\nwindows_and_origins(context=168, horizon=48, origins=3)",
     "fig-windows-and-origins",
     "Top: training examples are (context, horizon) windows slid along a series. Bottom: rolling-origin "
     "evaluation; at each origin the model is fitted on the history before it and scored on the next $H$ "
     "values, and the official test window comes last.",
     "Diagram in two parts. Top: three bars offset from each other, each a blue context of C = 168 values "
     "followed by an orange horizon of H = 48, sliding one step at a time. Bottom: four bars that each start at "
     "the beginning of the series; blue history up to an origin at n-144, n-96, n-48 and n, followed by an "
     "orange 48-value scoring window, and the last one red, the test window. No scored value is ever seen "
     "in fitting.",
     [("cell-004", "and M4's horizon ($H = 48$).",
       "and M4's horizon ($H = 48$); {numref}`fig-windows-and-origins` draws the windows, and the rolling origins "
       "used below.")]),
    ("14_63", "diagram-nbeats", "cell-011", "from helpers.diagrams import nbeats_stack\n\nnbeats_stack(blocks=4, layers=4)",
     "fig-nbeats-stack",
     "The generic N-BEATS of `helpers.nbeats`. Each block is a stack of fully connected ReLU layers with two "
     "linear heads; its backcast is subtracted from what the next block reads, and the blocks' partial "
     "forecasts are summed.",
     "Diagram: the input window enters at the top left and runs down a vertical line past four blocks. Each "
     "block holds four FC-ReLU layers and two heads, forecast and backcast. The backcast returns to a minus "
     "node on the input line, so the next block sees only the residual; each forecast goes right to an add "
     "node on a second vertical line whose end is the forecast of H values.",
     [("cell-010", "and the partial forecasts add up.", "and the partial forecasts add up ({numref}`fig-nbeats-stack`).")]),
]

# ---------------------------------------------------------------------------------------------
# Plots: (section, cell id, name, caption, alt, reference) where reference is
#   "colon"            -> insert " ({numref}`name`)" before the final colon of the markdown cell just above
#   "auto"             -> the same for the nearest markdown cell above if it ends with a colon, else append
#                         " See {numref}`name`." to it
#   (cell, old, new)   -> that replacement in a markdown cell
# ---------------------------------------------------------------------------------------------
PLOTS = [
    ("14_45", "cell-016", "fig-shuffled-series", "A week of M4 Hourly H1 in its original order and the same values shuffled.",
     "Two line charts stacked. Top: the original hourly series rises and falls in a clear daily rhythm over the "
     "week. Bottom: the same values in a random order look like noise. The values are identical as a set; the "
     "pattern lived in their order.", "colon"),
    ("14_45", "cell-019", "fig-acf-shuffled", "Autocorrelation of M4 Hourly H1 and of its shuffled copy, by lag in hours.",
     "Line chart of autocorrelation against lag in hours. The original series starts near one, dips and returns "
     "to peaks at 24, 48 and 72 hours (dotted lines). The shuffled series stays near zero at every lag: "
     "shuffling erased the dependence between time points.",
     ("cell-018", "The autocorrelation function says the same thing in numbers:",
      "The autocorrelation function says the same thing in numbers ({numref}`fig-acf-shuffled`):")),
    ("14_45", "cell-031", "fig-mutual-information",
     "Mutual information between characters $d$ apart in tiny Shakespeare, against the same estimate on shuffled "
     "text (both axes logarithmic).",
     "Log-log line chart of mutual information in bits against distance in characters. The text's curve starts "
     "high at distance one and decays steadily, but it stays above the flat floor of the shuffled text beyond "
     "the dotted mean line length and approaches it only hundreds of characters apart: characters remain "
     "informative about each other over long distances.", "auto"),
    ("14_45", "cell-035", "fig-delay-embedding",
     "Delay embedding $(y_t, y_{t+6}, y_{t+12})$ of M4 Hourly H1 in its original order and shuffled (interactive).",
     "Two rotatable 3-D scatter plots. Left, original order: the points trace a loop, the daily cycle. Right, "
     "shuffled: the same values fill a shapeless cloud. Order is structure.",
     ("cell-034", "Rotate both.", "Rotate both ({numref}`fig-delay-embedding`).")),
    ("14_46", "cell-020", "fig-gradient-by-lag",
     "Gradient norm by lag for several spectral radii, linear recurrence (left) and tanh (right), geometric mean "
     "over random matrices.",
     "Two panels of log-scale line charts, gradient norm against lag. In the linear panel, lines for spectral "
     "radius below one fall steadily and lines above one climb: the gradient shrinks or grows geometrically. "
     "In the tanh panel every line falls, even for radius above one: the saturating nonlinearity only adds to "
     "the vanishing.", "auto"),
    ("14_47", "cell-012", "fig-reach-by-cell", "Input gradient by lag at initialisation for an RNN, a GRU, and an LSTM with torch's "
     "default and with forget bias 1.",
     "Log-scale line chart of input-gradient magnitude against lag. The RNN, the GRU and the LSTM as torch "
     "initialises it fall at nearly the same rate; the LSTM with forget bias 1 falls far more slowly and sits "
     "orders of magnitude above them at long lags: the additive cell path, opened by the bias, carries the "
     "gradient back.", "auto"),
    ("14_47", "cell-017", "fig-reach-surface",
     "Log input gradient over lag and hidden width, LSTM with forget bias 1 (blue) and RNN (orange) (interactive).",
     "A rotatable 3-D plot of two surfaces over lag and hidden width. The orange RNN surface slopes down along "
     "the lag axis at the same rate for every width; the blue LSTM surface stays far above it everywhere. "
     "Widening the network does not rescue the RNN.", ("cell-016", "Rotate the figure and look along the lag axis.", "Rotate {numref}`fig-reach-surface` and look along the lag axis.")),
    ("14_47", "recall-figure", "fig-recall-training",
     "Held-out accuracy while training a tanh RNN and an LSTM with forget bias 1 to name the first symbol of a "
     "sequence after a run of distractors, several seeds each; dashed line: chance.",
     "Line chart of accuracy against Adam step, one line per seed. The RNN's lines leave the dashed chance line "
     "within a few hundred steps and climb far above it; the LSTM's lines stay flat on the chance "
     "line for the whole run: the cell with the longer gradient reach at initialisation is the one that did "
     "not learn.", "auto"),
    ("14_48", "cell-009", "fig-copy-learning-curves",
     "Learning curves of the copy task: test accuracy against training steps for every length and seed, through "
     "the fixed context (left) and with dot-product attention (right); dashed line: chance.",
     "Two panels of line charts, accuracy against Adam steps on a log axis, one line per seed and colour per "
     "sequence length. Left, the fixed context: the shortest source is copied almost perfectly within a few "
     "hundred steps, while the curves for longer sources start near chance and climb slowly, the longest still rising "
     "at the last checkpoint. Right, attention: every length is copied almost perfectly within the shorter budget.",
     "auto"),
    ("14_48", "bylength-fig", "fig-copy-by-length",
     "Token accuracy of the fixed-context copy models by source length after three training budgets; points are "
     "seeds, lines their mean; dashed line: chance.",
     "Line chart with points: token accuracy against sequence length on a log axis, one line per budget. Each "
     "line falls as the length grows; the lines for longer budgets lie higher and fall later, so training longer "
     "moves the fall towards longer sources without removing it within the budgets tried.",
     ("cell-012", None, None)),
    ("14_48", "cell-014", "fig-context-sensitivity",
     "How much the context $\\mathbf c$ moves when source token $j$ is replaced, for an untrained encoder and the "
     "trained copy encoders, one line per seed (log scale).",
     "Log-scale line chart of the change in c against source position. The untrained encoder's curve rises "
     "steeply towards the last position: early tokens barely reach c. Training reverses the profile: in the "
     "trained encoder the first tokens move c the most.", "auto"),
    ("14_48", "cell-018", "fig-copy-by-position",
     "Per-position accuracy of each copy model, position scaled to (0, 1); dashed line: chance.",
     "Line chart of token accuracy against relative position in the output, one line per sequence length. "
     "Accuracy is highest for the first tokens and falls along the output, with a recovery at the last "
     "position, and it is lower for longer sequences.", "auto"),
    ("14_48", "cell-022", "fig-reversal-by-source",
     "Accuracy for each source token on the copy and the reversal task, without attention; dashed line: chance.",
     "Line chart of accuracy against source position, one line per task. For copying, accuracy falls along the "
     "source. For reversal the earliest source tokens, which the decoder needs last, are recovered worst and "
     "accuracy rises towards the last source positions: the tokens needed last degrade most.", "auto"),
    ("14_49", "cell-013", "fig-reversal-training",
     "Training loss of the reversal model with additive attention; dashed line: $\\log V$, the loss of guessing.",
     "Log-scale line chart of cross-entropy per token against training step. The loss starts at the dashed "
     "guessing level, log V, and falls steadily on the log scale, far below guessing: the model learns to "
     "reverse.", "auto"),
    ("14_49", "cell-017", "fig-learned-alignment",
     "Mean attention weights of the trained reversal model; circles mark the source token each step must output.",
     "Heatmap of attention weight, output step against source position. The weight lies on an anti-diagonal, "
     "one position to the right of the circles after the first step: the step attends to the encoder state "
     "that has just read the token it must output.", "auto"),
    ("14_49", "cell-024", "fig-attention-closes-bottleneck",
     "Copy accuracy by length for the same encoder–decoder with attention and without it (at the same budget and "
     "at four times that budget), from §14.48's cached runs; points are seeds, lines their mean; dashed line: chance.",
     "Line chart with points: token accuracy against sequence length, three lines. Without attention accuracy "
     "falls with length at both budgets, less steeply at the longer one; with attention it stays near the top at "
     "every length. Same parameters, different route from encoder to output.", "auto"),
    ("14_50", "cell-015", "fig-logit-spread",
     "Standard deviation of $\\mathbf q\\cdot\\mathbf k$ for random unit-variance vectors, unscaled and divided "
     "by $\\sqrt{d_k}$; dashed line: $\\sqrt{d_k}$.",
     "Log-log line chart of the logit's standard deviation against key dimension. The unscaled line lies on the "
     "dashed square-root line and grows with width; the scaled line stays flat at one. Dividing by sqrt(d_k) "
     "keeps the logits' spread independent of width.", "colon"),
    ("14_50", "cell-020", "fig-softmax-saturation",
     "Median gradient factor, mean largest weight and mean entropy of attention rows by key dimension, with and "
     "without scaling.",
     "Three panels of line charts against key dimension on a log axis. With scaling all three measures stay "
     "flat. Without scaling the entropy falls and the largest weight rises towards one as d_k grows, and the "
     "gradient factor, after a small rise, collapses towards zero: the softmax saturates and stops passing "
     "gradient.", "auto"),
    ("14_50", "cell-025", "fig-entropy-surface",
     "Mean attention entropy over key dimension and divisor $\\tau$; orange: $\\tau = \\sqrt{d_k}$, dashed: "
     "$\\tau = 1$ (interactive).",
     "A rotatable 3-D surface of entropy over log key dimension and log divisor. It falls to zero for small "
     "divisors and rises to ln 32 for large ones. The orange line tau = sqrt(d_k) runs across at constant "
     "height; the dashed unscaled line slides down the slope as d_k grows.", "auto"),
    ("14_50", "cell-038", "fig-mask-before-softmax",
     "Causal attention weights when the mask is applied to the scores (left) and, wrongly, to the weights (right); "
     "row sums at the right.",
     "Two heatmaps of attention weight, query position against key position, zero above the diagonal in both. "
     "Left, masked before the softmax, every row sums to one. Right, masked after it, the row sums printed "
     "beside the rows fall below one except the last: zeroing weights leaks how much attention the future drew.",
     "colon"),
    ("14_51", "cell-021", "fig-four-heads",
     "Causal attention weights of the four heads on one test sequence, at initialisation (top) and after "
     "training (bottom).",
     "A grid of eight heatmaps, query against key position, four heads in columns. At initialisation the "
     "weight is spread over the past without structure. After training each head has a sharp diagonal at its "
     "own offset, one, two, three or four steps back: four heads, four jobs.", "colon"),
    ("14_51", "cell-031", "fig-head-pruning",
     "Mean accuracy as heads are removed greedily at test time, four-head and eight-head models; dashed: chance.",
     "Line chart of mean accuracy against the number of heads removed. The four-head model drops at the first "
     "removal. The eight-head model stays high for the first removals and declines more slowly: spare heads can "
     "go, needed heads cannot.", "colon"),
    ("14_52", "cell-019", "fig-sinusoidal-heatmap",
     "The sinusoidal positional encoding as a heatmap, positions down and embedding dimensions across.",
     "Heatmap of encoding values between -1 and 1, position on the vertical axis and dimension on the "
     "horizontal. Columns on the left oscillate rapidly with position; towards the right the frequency falls "
     "and the columns change slowly. Every row is a distinct code.", "auto"),
    ("14_52", "cell-022", "fig-sinusoidal-surface",
     "The same encoding matrix as a surface over position and dimension (interactive).",
     "A rotatable 3-D surface of encoding value over position and dimension: dense ripples for the fast, "
     "low-index dimensions and smooth ramps for the slow ones.", "auto"),
    ("14_52", "cell-028", "fig-offset-similarity",
     "Dot product of the encodings of two positions against their offset: closed form (line) and the mean of "
     "each diagonal of $PE\\,PE^\\top$ (points).",
     "Line chart with points: similarity against offset k. The points lie on the closed-form curve, which "
     "is symmetric about zero, peaks at d/2 at offset zero and falls away with oscillations: the similarity "
     "depends only on the offset.", "auto"),
    ("14_53", "cell-014", "fig-rope-offset-only",
     "Query–key scores against the offset for four absolute key positions, one panel per scheme.",
     "Panels of line charts, score against offset, with four lines for four absolute positions. In the RoPE "
     "panel the four lines coincide exactly: the score depends only on the offset. In the panel for the sinusoidal "
     "encoding added to the input the lines differ with the absolute position.", "auto"),
    ("14_53", "cell-018", "fig-alibi-biases",
     "ALiBi's biases for each head: $-m(i-j)$ below the diagonal; grey: future keys, removed by the causal mask.",
     "A row of small heatmaps, one per head, query position against key position. Each shows a penalty that "
     "grows with distance below the diagonal; the first heads' penalties grow steeply, the last heads' only "
     "gently, so different heads look at different ranges.", "auto"),
    ("14_53", "cell-028", "fig-train-short-test-long",
     "Held-out cross-entropy by position in the window, for models evaluated on windows longer than those they "
     "were trained on, one line per scheme and seed.",
     "Line chart of cross-entropy against position in the window, three thin lines (seeds) per position scheme, "
     "with a dotted horizontal line at the bigram baseline and a dashed vertical line at the training length. "
     "Within the trained length every line lies below the bigram line and the seeds of a scheme lie close together; "
     "beyond the dashed line some schemes' losses climb while others stay flat, and the learned table has no values "
     "at all. Extrapolation beyond the trained length separates the schemes.", "auto"),
    ("14_54", "cell-022", "fig-prenorm-postnorm-gradients",
     "Gradient norm of each block's parameters in a freshly initialised stack, pre-norm and post-norm.",
     "Log-scale line chart of gradient norm against block index (1 nearest the input) for the two variants, a "
     "line for the mean over initialisations and a band for their range. The pre-norm gradients shrink steadily "
     "towards the output; the post-norm gradients stay roughly level across depth.", "auto"),
    ("14_54", "cell-030", "fig-decoder-masks",
     "Attention weights of head 1 of a fresh decoder block: masked self-attention and cross-attention.",
     "Two heatmaps, query (decoder) position against key position. The self-attention panel is zero above the "
     "diagonal, exactly; the cross-attention panel has weight on every source position for every query.", "auto"),
    ("14_54", "cell-047", "fig-attention-flop-share",
     "Attention's share of a block's matrix-multiply FLOPs by sequence length, for several widths; dotted: "
     "$T = 6d$.",
     "Line chart of attention's share of FLOPs against sequence length on a log axis, one line per width. Each "
     "share rises from near zero towards one, crossing one half near T = 6d: short sequences are dominated by "
     "the projections and the FFN, long ones by attention.", "auto"),
    ("14_55", "cell-013", "fig-cost-map",
     "Where attention is cheaper than a GRU over the $(T, d)$ plane, one panel per measure; labels: cost of "
     "attention ÷ cost of the GRU; dashed line: $T = d$.",
     "Three panels of tiles on a grid of sequence length against width, coloured by which layer is cheaper, "
     "each tile labelled with the cost ratio. For operations the boundary follows the dashed T = d line; for "
     "memory and wall time it lies elsewhere.",
     ("cell-012", "one panel per measure.", "one panel per measure ({numref}`fig-cost-map`).")),
    ("14_55", "cell-016", "fig-cost-ratio",
     "Cost of attention relative to a GRU against $T/d$, one panel per measure; above the solid line the GRU is "
     "cheaper.",
     "Three log-log panels of the attention-to-GRU cost ratio against T/d, one line per width. The operation "
     "ratio rises steadily and crosses the solid line of equal cost near T = d; the memory ratio rises too but "
     "never drops below that line, so attention never needs less memory; wall time follows the count much "
     "less closely.",
     "auto"),
    ("14_56", "cell-010", "fig-fused-attention-cost",
     "Time and peak memory of causal attention by sequence length: the naive formula, the fused kernel and a "
     "sliding window (both axes logarithmic).",
     "Two log-log panels against sequence length, peak memory and wall time, one line per kernel. The naive "
     "formula's memory grows quadratically and is the largest at long sequences; the fused kernel needs the "
     "least memory at every length, and the sliding window's memory grows linearly.", "auto"),
    ("14_56", "cell-026", "fig-sliding-window-change",
     "Change in the trained model's validation loss when full attention is replaced by a sliding window of width "
     "$w$.",
     "Line chart against window width on a log axis of two measures, the change in validation loss and the "
     "mean absolute change of the logits. The narrowest windows cost the most; from a few positions on the loss "
     "change is close to zero, even slightly negative, the logit change keeps shrinking, and both are zero when "
     "the window spans the whole context.", "auto"),
    ("14_57", "cell-024", "fig-vocab-tradeoff",
     "Byte-level BPE on tiny Shakespeare by vocabulary size: characters per token on the validation split, and "
     "how often the average token occurs in training.",
     "Panels of line charts against vocabulary size on a log axis. Characters per token rise with the "
     "vocabulary but with diminishing returns; the average token's training count falls steadily. Larger "
     "vocabularies give shorter sequences of rarer tokens.", "auto"),
    ("14_58", "cell-028", "fig-ngram-orders",
     "Training and validation cross-entropy of smoothed n-gram models of tiny Shakespeare by order $n$.",
     "Line chart of cross-entropy in bits per character against n-gram order. The training curve falls with "
     "every order; the validation curves fall at first and then turn upwards: more context memorises the "
     "training text and stops generalising.", "auto"),
    ("14_59", "cell-018", "fig-charlm-curves",
     "Training and validation loss of the Transformer and the LSTM against training time; x: nanoGPT's CPU "
     "recipe at two budgets; dotted: the bigram baseline.",
     "Line chart of cross-entropy in nats per character against training seconds: solid lines for the training "
     "loss and dashed lines for the validation loss of the LSTM and the Transformer, x markers for the nanoGPT "
     "recipe and a dotted bigram baseline near the top. The curves fall steeply at first and then flatten, far "
     "below the bigram baseline.", ("cell-022", "After {glue:text}`gpt_seconds:.0f` seconds", "{numref}`fig-charlm-curves` shows the learning curves. After {glue:text}`gpt_seconds:.0f` seconds")),
    ("14_60", "cell-018", "fig-sampling-rules",
     "One next-character distribution, as the model gives it and reshaped by sampling rules; grey: the model's "
     "probabilities.",
     "Stacked panels of bar charts over the model's most probable next characters: the model's own "
     "distribution, then a low and a high temperature, top-k and top-p. Grey bars repeat the model's "
     "probabilities in every panel; coloured bars give each rule's: the low temperature sharpens them, the high "
     "one flattens them, top-k and top-p set the tail to zero and renormalise the rest.", "auto"),
    ("14_60", "cell-033", "fig-diversity-likelihood",
     "Diversity (distinct 5-grams) against the model's log-likelihood for continuations sampled with each rule.",
     "Scatter chart with one point per decoding rule and setting, diversity on the horizontal axis and "
     "log-likelihood on the vertical. The points run from greedy, likely but repetitive, to high temperature, "
     "diverse but improbable: diversity costs likelihood.", "auto"),
    ("14_60", "cell-039", "fig-temperature-loss",
     "Validation cross-entropy of $\\mathrm{softmax}(z/T)$ against the temperature $T$; the dot marks the minimum.",
     "Line chart of validation loss against temperature. The curve is a shallow bowl with its minimum, marked "
     "by a dot, close to T = 1; temperature reshapes the predictions but barely improves the model.", "auto"),
    ("14_61", "cell-006", "fig-family-masks",
     "The attention masks of the three families for the example string: what each query may see.",
     "Four grids of query position against key position, visible cells blue and blocked cells orange. The "
     "encoder-only mask is fully visible; the decoder-only mask and the encoder–decoder's decoder self-attention "
     "are causal, the diagonal and below visible; the cross-attention grid is rectangular and fully visible, "
     "decoder queries against source keys.", "auto"),
    ("14_61", "cell-022", "fig-family-training",
     "Training loss per predicted token of the three families on palindromes (log scale).",
     "Log-scale line chart of loss against training step, one line per family. All three fall; they measure "
     "different objectives, and the decoder-only curve levels off above zero because the random first half "
     "cannot be predicted.", "auto"),
    ("14_61", "cell-030", "fig-fill-gap",
     "Accuracy at filling one hidden token of a palindrome, by position; shaded: the random first half.",
     "Line chart of accuracy against the position of the hidden token for the bidirectional and causal models. "
     "In the shaded first half only the bidirectional model fills the gap; the causal model is at chance "
     "there because the answer lies to the right.", "auto"),
    ("14_61", "cell-045", "fig-cross-attention-v",
     "Cross-attention of the trained encoder–decoder on one example, mean over heads.",
     "Heatmap of cross-attention weight, output step against source token. The weight runs down the diagonal "
     "while the word is copied forwards and back up it while it is copied in reverse, tracing a V; the last "
     "step looks at the end-of-sequence token.", "auto"),
    ("14_62", "cell-016", "fig-recursive-vs-direct",
     "Scaled absolute error by step ahead for the recursive and the direct strategy, over all series and the "
     "inner origins.",
     "Line chart of scaled absolute error against hours ahead for the two strategies. Both start equally well; "
     "the recursive strategy's error grows faster towards the end of the horizon because it feeds on its own "
     "forecasts.", "auto"),
    ("14_63", "cell-023", "fig-typical-series-forecasts",
     "One typical series: its last week and the methods' forecasts for the test hours.",
     "Line chart of the last week of one M4 Hourly series in black, then, after a dotted line, the test "
     "hours with the actual values and the forecasts of the methods shown, one coloured line each, following "
     "the daily rhythm.", "auto"),
    ("14_63", "cell-029", "fig-per-series-mase",
     "Per-series MASE on the test window for each method (log scale; 1 is the in-sample seasonal naive error); "
     "a network's per-series MASE is the mean over its seeds.",
     "Box plots of MASE per series, one per method, on a log axis with a dashed reference at one. The networks "
     "and the best classical methods have most series below one; every method has a long right tail of hard "
     "series, so the mean is carried by a few of them.", ("cell-032", "The ensemble beats the in-sample", "{numref}`fig-per-series-mase` shows every series. The ensemble beats the in-sample")),
    ("14_64", "cell-016", "fig-gradient-reach-families",
     "Gradient with respect to the input $k$ steps back, relative to lag 0, at initialisation for each layer.",
     "Log-scale line chart of relative gradient against lag. The RNN falls fastest, the LSTM much more slowly, "
     "and the attention layer stays flat: any input is one step away from the output.", "auto"),
    ("14_64", "cell-021", "fig-cost-against-length",
     "Cost of one layer against sequence length, one panel per measure (log–log: slope 1 is linear, slope 2 "
     "quadratic).",
     "Three log-log panels against sequence length, operations, peak memory and matrix-product calls, for full "
     "attention, windowed attention and an LSTM. Full attention's operations and memory grow with slope two; "
     "the windowed layer and the LSTM grow with slope one. In the calls panel the LSTM's count grows with the "
     "length while both attention layers make a constant number of calls: its sequential depth.", "auto"),
]


def _nb_path(section: str) -> Path:
    matches = sorted(CHAPTERS.glob(f"{section}_*.ipynb"))
    if len(matches) != 1:
        raise SystemExit(f"section {section}: expected one notebook, found {matches}")
    return matches[0]


def _figure_metadata(cell, name, caption, alt):
    cell.metadata["mystnb"] = {"figure": {"caption": caption, "name": name}, "image": {"alt": alt}}


def _refer(nb, cell_id, old, new, problems, section):
    cell = next((c for c in nb.cells if c.get("id") == cell_id), None)
    if cell is None or cell.cell_type != "markdown":
        problems.append(f"{section}: no markdown cell {cell_id} to refer from")
        return
    if new in cell.source:
        return
    if old not in cell.source:
        problems.append(f"{section} {cell_id}: text to refer from not found: {old!r}")
        return
    cell.source = cell.source.replace(old, new, 1)


def apply(check: bool = False) -> list[str]:
    problems: list[str] = []
    by_section: dict[str, list] = {}
    for d in DIAGRAMS:
        by_section.setdefault(d[0], []).append(("diagram", d))
    for p in PLOTS:
        by_section.setdefault(p[0], []).append(("plot", p))
    for section, items in sorted(by_section.items()):
        path = _nb_path(section)
        nb = nbformat.read(path, as_version=4)
        before = nbformat.writes(nb)
        for kind, item in items:
            if kind == "diagram":
                _, new_id, where, code, name, caption, alt, refs = item
                ids = [c.get("id") for c in nb.cells]
                if new_id not in ids:
                    anchor = where.removeprefix("before:")
                    if anchor not in ids:
                        problems.append(f"{section}: anchor cell {anchor} for {name} not found")
                        continue
                    i = ids.index(anchor) + (0 if where.startswith("before:") else 1)
                    if not where.startswith("before:"):  # keep a hidden glue cell next to its code
                        while i < len(nb.cells) and "remove-cell" in nb.cells[i].metadata.get("tags", []):
                            i += 1
                    cell = nbformat.v4.new_code_cell(code)
                    cell.id = new_id
                    cell.metadata["tags"] = ["remove-input"]
                    nb.cells.insert(i, cell)
                cell = next(c for c in nb.cells if c.get("id") == new_id)
                _figure_metadata(cell, name, caption, alt)
                for cid, old, new in refs:
                    _refer(nb, cid, old, new, problems, section)
            else:
                _, cell_id, name, caption, alt, ref = item
                ids = [c.get("id") for c in nb.cells]
                if cell_id not in ids:
                    problems.append(f"{section}: figure cell {cell_id} ({name}) not found")
                    continue
                i = ids.index(cell_id)
                _figure_metadata(nb.cells[i], name, caption, alt)
                if ref == "colon":
                    md = nb.cells[i - 1]
                    text = md.source.rstrip()
                    tag = f" ({{numref}}`{name}`)"
                    if md.cell_type == "markdown" and tag not in md.source:
                        if text.endswith(":"):
                            md.source = text[:-1] + tag + ":"
                        else:
                            problems.append(f"{section} {cell_id}: the cell above does not end with a colon")
                elif ref == "auto":
                    j = i - 1
                    while j >= 0 and nb.cells[j].cell_type != "markdown":
                        j -= 1
                    md = nb.cells[j]
                    text = md.source.rstrip()
                    if f"`{name}`" in md.source:
                        pass
                    elif i - j > 3 or text.splitlines()[-1].startswith("#"):
                        problems.append(f"{section} {cell_id}: no sentence just above to cite {name} from")
                    elif text.endswith(":"):
                        md.source = text[:-1] + f" ({{numref}}`{name}`):"
                    else:
                        md.source = text + f" See {{numref}}`{name}`."
                elif isinstance(ref, tuple) and ref[1] is not None:
                    _refer(nb, ref[0], ref[1], ref[2], problems, section)
        if nbformat.writes(nb) != before:
            if check:
                problems.append(f"{path.name} differs from tools/figures.py")
            else:
                nbformat.write(nb, path)
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report what differs; change nothing")
    args = parser.parse_args(argv)
    problems = apply(check=args.check)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
