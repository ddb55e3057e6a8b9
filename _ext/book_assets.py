"""Sphinx extension: serve the site's JavaScript locally so that every page works offline.

- MathJax 3 (vendored in ``_assets/mathjax``) replaces Sphinx's CDN default; see
  ``mathjax_path`` in ``_config.yml``.
- plotly.js is copied from the installed plotly package to ``_static/plotly.min.js`` and
  added only to pages that contain a plotly figure.
- ``book.css`` and ``book.js`` (in ``_assets``) on every page: figure captions, plots and
  diagrams readable in dark mode, plotly figures that follow the theme, a visible focus ring.
- Each script once per page. Sphinx 7.4 keeps an inline script (``add_js_file(None, body=...)``)
  that an extension adds after the builder started twice: the builder holds it under the file
  name ``None``, and ``prepare_writing`` adds the registry's copy again as ``''``, which does not
  compare equal. sphinx-thebe adds ``const THEBE_JS_URL = ...`` that way, so every notebook page
  declared the constant twice and logged "Identifier 'THEBE_JS_URL' has already been declared"
  (sphinx-togglebutton's ``var togglebuttonSelector`` was doubled too, silently).
"""

from pathlib import Path

import plotly

ASSETS = Path(__file__).resolve().parent.parent / "_assets"
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _add_assets_dir(app, config):
    # added here, not in _config.yml, so Jupyter Book does not put every .js on every page
    config.html_static_path.append(str(ASSETS))


def _plotly_where_needed(app, pagename, templatename, context, doctree):
    if "plotly-graph-div" in context.get("body", ""):
        app.add_js_file("plotly.min.js", priority=100)


def _copy_plotly(app, exception):
    if exception is None and app.builder.format == "html":
        target = Path(app.outdir) / "_static" / "plotly.min.js"
        target.write_bytes(PLOTLY_JS.read_bytes())


def _each_script_once(app, pagename, templatename, context, doctree):
    """Drop the second copy of any script on this page (``None`` and ``''`` are the same no-file)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        key = (getattr(js, "filename", js) or "", getattr(js, "priority", None),
               tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    scripts[:] = kept  # the builder's own list for this page; Sphinx restores it after the page


def setup(app):
    app.connect("config-inited", _add_assets_dir)
    app.add_css_file("book.css")
    app.add_js_file("book.js")
    app.connect("html-page-context", _plotly_where_needed)
    app.connect("html-page-context", _each_script_once, priority=900)  # after every handler that adds one
    app.connect("build-finished", _copy_plotly)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
