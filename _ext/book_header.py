"""Sphinx extension: the header's repository buttons point where a reader can use them.

sphinx-book-theme derives the edit button's branch from ``repository_branch``, which
``tools/book.py`` sets to the Colab edition's branch so that the launch buttons open the Colab
notebooks. An edit belongs on the source notebook instead: ``book_source_branch``
(``repository.branch`` in ``_config.yml``, put here by ``tools/book.py``) replaces the branch in
the context that pydata-sphinx-theme's edit URL reads. The repository and issue buttons need no
branch; all three come from the one ``repository.url``.
"""


def _edit_on_the_source_branch(app):
    context = app.config.html_context
    for key in [k for k in context if k.endswith("_version") and f"{k[:-len('_version')]}_repo" in context]:
        context[key] = app.config.book_source_branch


def setup(app):
    app.add_config_value("book_source_branch", "main", "html")
    # after sphinx-book-theme's update_context_with_repository_info (builder-inited, priority 500)
    app.connect("builder-inited", _edit_on_the_source_branch, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
