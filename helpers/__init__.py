"""Shared code for *Sequence Models: Recurrence and Attention* (Chapter 14, Part 3).

Each module holds one kind of thing and is introduced in the section that first
needs it:

- ``helpers.book``      where the book lives, Colab detection, ``glue`` (§14.45)
- ``helpers.repro``     seeding and device choice (§14.45)
- ``helpers.plotting``  the book's plotnine theme, palette and plotly set-up (§14.45)
- ``helpers.data``      the vendored data sets, checksum-verified on load (§14.45)
- ``helpers.cache``     cached results of heavy training, with a manifest (§14.45)
"""

__version__ = "0.1.0"
