"""Sphinx extension: the References page in the citations' own author–year style.

The text cites author–year (``bibtex_reference_style: author_year``: "Cho et al., 2014"), but
sphinxcontrib-bibtex labels the bibliography with pybtex's default *alpha* style
("[CvMerrienboerG+14]"), so a reader could not match a citation to its entry by eye. This
registers a pybtex formatting style, ``authoryear`` (``bibtex_default_style`` in ``_config.yml``):
pybtex's ``unsrt`` entries, sorted by author, year and title, each labelled as the text cites it:
"Karpathy, 2015", "Hochreiter and Schmidhuber, 1997", "Cho et al., 2014"; two works that would
share a label get "2014a", "2014b".
"""

from collections import Counter, defaultdict

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle


def _last_names(person) -> str:
    from pybtex.richtext import Text

    return Text(" ".join(person.prelast_names + person.last_names)).render_as("text").replace("{", "").replace("}", "")


def author_year(entry) -> str:
    """The label the author–year citation style writes for ``entry``."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last_names(p) for p in people]
    who = ("Anon." if not names else names[0] if len(names) == 1
           else f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} et al.")
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        sorted_entries = list(sorted_entries)
        labels = [author_year(e) for e in sorted_entries]
        shared, seen = Counter(labels), defaultdict(int)
        for label in labels:
            if shared[label] > 1:
                seen[label] += 1
                label += "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            yield label


class AuthorYearStyle(UnsrtStyle):
    default_label_style = AuthorYearLabelStyle
    default_sorting_style = SortingStyle


def setup(app):
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
