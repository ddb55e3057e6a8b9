"""Sphinx extension: the References page in the citations' own author–year style.

The text cites author–year (``bibtex_reference_style: author_year``: "Cho et al., 2014"), but
sphinxcontrib-bibtex labels the bibliography with pybtex's default *alpha* style
("[CvMerrienboerG+14]"), so a reader could not match a citation to its entry by eye. This
registers a pybtex formatting style, ``authoryear`` (``bibtex_default_style`` in ``_config.yml``):
pybtex's ``unsrt`` entries, sorted by author, year and title, each labelled as the text cites it:
"Karpathy, 2015", "Hochreiter and Schmidhuber, 1997", "Cho et al., 2014"; two works that would
share a label get "2014a", "2014b". The citations must then say "2014a" and "2014b" too: sphinxcontrib-bibtex's
``author_year`` referencing style writes the bare ``year`` field, so this also registers ``author_year_label``
(``bibtex_reference_style``), the same style with the year read from the entry's label.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle
from sphinxcontrib.bibtex.plugin import register_plugin as register_referencing_style
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
    BasicAuthorYearParentheticalReferenceStyle, BasicAuthorYearTextualReferenceStyle)
from sphinxcontrib.bibtex.style.template import join, join2, node, post_text, pre_text, reference


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


@node
def labelled_year(children, data):
    """The year as the References page labels the entry: "2014b" where two entries share "Cho et al., 2014"."""
    from pybtex.richtext import Text

    assert not children
    return Text(data["formatted_entry"].label.rsplit(", ", 1)[1])


# sphinxcontrib-bibtex's two author-year templates (basic_author_year.py), with ``labelled_year`` for ``year``
@dataclass
class _Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
    def inner(self, role_name):
        who = self.person.author_or_editor_or_title(full="s" in role_name)
        return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
            pre_text, reference[join(sep=self.author_year_sep)[who, labelled_year]], post_text]


@dataclass
class _Textual(BasicAuthorYearTextualReferenceStyle):
    def inner(self, role_name):
        who = self.person.author_or_editor_or_title(full="s" in role_name)
        return join(sep=self.text_reference_sep)[who, join[
            self.bracket.left,
            join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[pre_text, reference[labelled_year], post_text],
            self.bracket.right]]


@dataclass
class AuthorYearLabelReferenceStyle(AuthorYearReferenceStyle):
    """``author_year`` with each citation's year as its entry's label gives it (``labelled_year``)."""

    def __post_init__(self):
        super().__post_init__()
        p, t = self.styles[:2]
        self.styles[:2] = [_Parenthetical(bracket=p.bracket, person=p.person, author_year_sep=p.author_year_sep,
                                          pre_text_sep=p.pre_text_sep, post_text_sep=p.post_text_sep),
                           _Textual(bracket=t.bracket, person=t.person, text_reference_sep=t.text_reference_sep,
                                    pre_text_sep=t.pre_text_sep, post_text_sep=t.post_text_sep)]
        self.role_style.update((name, style) for style in self.styles[:2] for name in style.role_names())


def setup(app):
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    register_referencing_style("sphinxcontrib.bibtex.style.referencing", "author_year_label", AuthorYearLabelReferenceStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
