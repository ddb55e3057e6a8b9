"""Shared code for *Sequence Models: Recurrence and Attention* (Chapter 14, Part 3).

Each module holds one kind of thing and is introduced in the section that first needs it:

- ``helpers.book``                where the book lives, Colab detection, ``glue`` (§14.45)
- ``helpers.repro``               seeding and device choice (§14.45)
- ``helpers.checks``              the argument checks every module shares, one message per kind of mistake
- ``helpers.plotting``            the book's plotnine theme, palette and plotly set-up (§14.45)
- ``helpers.diagrams``            the conceptual diagrams, drawn from text with matplotlib patches
- ``helpers.data``                the vendored data sets, checksum-verified on load (§14.45)
- ``helpers.cache``               cached results of heavy training, with a manifest (§14.45)
- ``helpers.reproduce``           one short rerun of every heavy cache, compared with the cached result
- ``helpers.gradients``           gradient norms by lag, gate equations, parameter counts (§14.46–§14.47)
- ``helpers.recall``              §14.47's heavy sweep: steps to recall a symbol, by cell, lag and learning rate
- ``helpers.seq2seq``             GRU encoder–decoders with and without attention, copy/reversal tasks (§14.48–§14.49)
- ``helpers.bottleneck``          §14.48's heavy experiment: the fixed-context encoder–decoder's learning curves
- ``helpers.seq2seq_eval``        free-running (greedy) decoding and the output layer's inputs of a trained encoder–decoder (§14.48–§14.49)
- ``helpers.attention``           scaled dot-product and multi-head attention, the causal mask (§14.50–§14.51)
- ``helpers.positional``          sinusoidal, rotary (RoPE) and ALiBi positions (§14.52–§14.53)
- ``helpers.position_lm``         §14.53's heavy experiment: position schemes on small GPTs, train short, test long
- ``helpers.transformer``         the Transformer block, pre- and post-norm, and its accounting (§14.54)
- ``helpers.efficient_attention`` cost measurement, sliding-window attention, the KV cache (§14.55–§14.56)
- ``helpers.gpt``                 the book's one GPT: config, model, KV-cached generation, §14.59's weights (§14.53–§14.64)
- ``helpers.tokenization``        character and byte-level BPE tokenizers, the train/validation split (§14.57)
- ``helpers.ngram``               interpolated Kneser–Ney character n-grams, the classical text baseline (§14.58)
- ``helpers.charlm``              the character-level Transformer and LSTM, trained against the clock (§14.59)
- ``helpers.sampling``            temperature, top-k and nucleus filtering and sampling (§14.60, used in §14.61)
- ``helpers.forecasting``         MASE, sMAPE, OWA, rolling origin and M4's Naive2 (§14.62)
- ``helpers.bootstrap``           the paired bootstrap over series (§14.63)
- ``helpers.nbeats``              a global N-BEATS-style forecaster, its window sampler, scalings and losses (§14.63)
- ``helpers.seqforecast``         the Part's GRU and small Transformer as global forecasters (§14.63)
- ``helpers.m4benchmark``         §14.63's heavy benchmark: classical and neural forecasters on M4 Hourly
- ``helpers.m4report``            reading the M4 cache the way §14.63 and §14.64 report it
"""

__version__ = "0.1.0"
