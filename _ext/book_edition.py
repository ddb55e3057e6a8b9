"""Sphinx extension: the book's edition and licences in the footer of every page.

The edition string comes from ``$BOOK_VERSION``, which ``tools/book.py`` and ``tools/pdf.py``
set to ``git describe --tags --always --dirty`` (``tools/version.py``); a build started some
other way says "unversioned". It also becomes Sphinx's ``version`` and ``release``.
"""

import html
import os

LICENCES = ('Code: <a href="https://opensource.org/license/mit">MIT</a>; text and figures: '
            '<a href="https://creativecommons.org/licenses/by-sa/4.0/">CC BY-SA 4.0</a>; '
            'data and vendored assets: their own licences (see the README).')


def _edition_footer(app, config):
    edition = os.environ.get("BOOK_VERSION") or "unversioned"
    config.version = config.release = edition
    footer = (f'<p class="book-edition">Edition <code class="book-edition-id">{html.escape(edition)}</code>. '
              f'{LICENCES}</p>')
    options = dict(config.html_theme_options or {})
    options["extra_footer"] = (options.get("extra_footer") or "") + footer
    config.html_theme_options = options


def setup(app):
    app.connect("config-inited", _edition_footer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
