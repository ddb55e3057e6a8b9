"""Sphinx extension: the header's repository buttons point where a reader can use them.

sphinx-book-theme derives the edit button's branch from ``repository_branch``, which
``tools/book.py`` sets to the Colab edition's branch so that the launch buttons open the Colab
notebooks. An edit belongs on the source notebook instead: ``book_source_branch``
(``repository.branch`` in ``_config.yml``, put here by ``tools/book.py``) replaces the branch in
the context that pydata-sphinx-theme's edit URL reads. The repository and issue buttons need no
branch; all three come from the one ``repository.url``.

The download menu hands out what a reader can use: the page's Colab notebook (not on a site
built without solutions, ``book_solutions = "hidden"``: it carries them) and its student
notebook (``tools/book.py`` copies ``_build/colab`` and ``_build/student`` into the site's
``_editions/`` after writing them) and the whole Part as a PDF when ``make pdf`` has built one
(``book_pdf``; copied at the end of the build; empty on a site without solutions). The theme's own menu offered the page's MyST
source twice, as ".ipynb" and as the source file (raw glue roles and directives, a first cell
that refuses to run in Colab), and a ".pdf" that was the browser's print of one page; the
sources are no longer copied into the site at all (``html_copy_source: false``).
"""

import shutil
from pathlib import Path

EDITIONS = "_editions"  # the site's folder of downloads


def _edit_on_the_source_branch(app):
    context = app.config.html_context
    for key in [k for k in context if k.endswith("_version") and f"{k[:-len('_version')]}_repo" in context]:
        context[key] = app.config.book_source_branch


def _link(url, text, tooltip, icon, label):
    return {"type": "link", "url": url, "text": text, "tooltip": tooltip, "icon": icon, "label": label}


def _downloads(app, pagename, templatename, context, doctree):
    buttons = context.get("header_buttons")
    if buttons is None:  # not a page of the book theme
        return
    pathto = context["pathto"]
    items = []
    if pagename.startswith("chapters/"):
        stem = pagename.split("/", 1)[1]
        if app.config.book_solutions != "hidden":
                items.append(_link(pathto(f"{EDITIONS}/colab/{stem}.ipynb", 1), "Colab notebook (.ipynb)",
                               "This section as a plain notebook: numbers of this build, solutions folded",
                               "fas fa-code", "download-colab-button"))
        items.append(_link(pathto(f"{EDITIONS}/student/{stem}.ipynb", 1), "Student notebook (.ipynb)",
                           "This section's exercises without their solutions", "fas fa-user-graduate",
                           "download-student-button"))
    pdf = Path(app.config.book_pdf) if app.config.book_pdf else None
    if pdf is not None and pdf.is_file():
        items.append(_link(pathto(f"{EDITIONS}/{pdf.name}", 1), "The whole Part (.pdf)",
                           "Every section, printed as one PDF", "fas fa-file-pdf", "download-pdf-button"))
    group = {"type": "group", "tooltip": "Download", "icon": "fas fa-download", "buttons": items,
             "label": "download-buttons"}
    at = next((i for i, b in enumerate(buttons) if b.get("label") == "download-buttons"), len(buttons))
    buttons[at:at + 1] = [group] if items else []


def _copy_pdf(app, exception):
    pdf = Path(app.config.book_pdf) if app.config.book_pdf else None
    if exception is None and app.builder.format == "html" and pdf is not None and pdf.is_file():
        target = Path(app.outdir) / EDITIONS / pdf.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(pdf, target)


def setup(app):
    app.add_config_value("book_source_branch", "main", "html")
    app.add_config_value("book_pdf", "", "html")
    app.add_config_value("book_solutions", "shown", "html")
    # after sphinx-book-theme's header buttons (html-page-context, priority 501)
    app.connect("html-page-context", _downloads, priority=600)
    app.connect("build-finished", _copy_pdf)
    # after sphinx-book-theme's update_context_with_repository_info (builder-inited, priority 500)
    app.connect("builder-inited", _edit_on_the_source_branch, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
