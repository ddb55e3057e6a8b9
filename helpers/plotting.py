"""The book's look: one plotnine theme and palette for 2-D figures, and plotly set-up for 3-D.

Every 2-D figure is a plotnine ``ggplot`` finished with ``+ theme_book()``; the
equivalent plotly code follows it in a cell tagged ``skip-execution`` (shown, not run).
3-D figures are evaluated plotly; ``use_book_style()`` makes them render in the built
site without any network access.
"""

from __future__ import annotations

import hashlib
import json

import plotnine as p9
import plotly.graph_objects as go
import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer

from .book import building_book
from .checks import check_positive

#: Okabe & Ito's colour-blind-safe palette, the book's discrete colours in order.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
#: Neutral grey for reference lines and annotations.
GREY = "#7F7F7F"
#: Continuous colour scale for heatmaps and surfaces (perceptually uniform).
CONTINUOUS = "viridis"


def theme_book(base_size: float = 11, figure_size: tuple[float, float] = (7.0, 4.0)) -> p9.theme:
    """The book's plotnine theme: minimal, light grid, title and legend placed for reading.

    Add it last: ``ggplot(...) + geom_line() + theme_book()``.
    """
    check_positive("base_size", base_size)
    if len(tuple(figure_size)) != 2:
        raise ValueError(f"figure_size must be (width, height) in inches, got {figure_size!r}")
    for side in figure_size:
        check_positive("figure_size's width and height", side)
    return p9.theme_minimal(base_size=base_size) + p9.theme(
        figure_size=figure_size,
        dpi=110,
        plot_title=p9.element_text(weight="bold", size=base_size + 2, ha="left"),
        plot_subtitle=p9.element_text(color="#444444", size=base_size - 1, ha="left"),
        panel_grid_minor=p9.element_blank(),
        panel_grid_major=p9.element_line(color="#E5E5E5", size=0.5),
        strip_text=p9.element_text(weight="bold", size=base_size),
        legend_position="bottom",
        legend_title=p9.element_text(size=base_size - 1),
        axis_title=p9.element_text(size=base_size),
    )


def scale_colour_book(**kwargs) -> p9.scale_color_manual:
    """Discrete colour scale with the book's palette (``kwargs`` go to plotnine)."""
    return p9.scale_color_manual(values=PALETTE, **kwargs)


def scale_fill_book(**kwargs) -> p9.scale_fill_manual:
    """Discrete fill scale with the book's palette (``kwargs`` go to plotnine)."""
    return p9.scale_fill_manual(values=PALETTE, **kwargs)


class _OfflineHtmlRenderer(MimetypeRenderer):
    """Renders a figure as an HTML ``div`` plus the script that draws it, *without* plotly.js.

    The built site loads one local ``plotly.min.js`` on the pages that have figures
    (see ``_ext/book_assets.py``), so pages work offline and stay small. The div id is
    derived from the figure's content, so re-executing a notebook gives the same HTML.
    """

    def to_mimebundle(self, fig_dict):
        spec = json.dumps(fig_dict, sort_keys=True, default=str)
        div_id = "fig-" + hashlib.sha1(spec.encode()).hexdigest()[:12]
        html = pio.to_html(
            fig_dict,
            include_plotlyjs=False,
            include_mathjax=False,
            full_html=False,
            div_id=div_id,
            config={"displaylogo": False, "responsive": True},
            validate=False,
        )
        return {"text/html": html}


#: The widest title, in characters, that a 3-D figure shows on one line: a phone's column (375 px) holds it.
TITLE_3D_CHARS = 40


def layout_3d(fig: go.Figure, title: str, height: int = 560, zoom_out: float = 1.15) -> go.Figure:
    """Lay out a 3-D plotly figure so that it reads on a phone (375 px) and on a laptop (1366 px); returns ``fig``.

    A 3-D scene fills the width it is given, so what clipped and overlapped at 375 px was what
    stood beside it or at its edge: a title longer than the column (it is wrapped at
    ``TITLE_3D_CHARS`` characters), a legend or colour bar beside the scene (both go below it,
    horizontal), and a camera so close that the axis titles left the canvas (every scene's camera
    eye is moved ``zoom_out`` times further away; set the eye first). Axis titles are 12 px and
    tick labels 10 px at every width. ``tests/test_site.py`` checks the result at both widths.
    """
    import textwrap

    lines = textwrap.wrap(title, TITLE_3D_CHARS)
    fig.update_layout(
        # plotly centres a title's lines on its anchor even with yanchor="top": pad by half the extra lines
        title=dict(text="<br>".join(lines), x=0.02, xanchor="left", yref="container", y=1, yanchor="top",
                   pad=dict(t=10 + 11 * (len(lines) - 1)), font=dict(size=15)),
        height=height, margin=dict(l=0, r=0, t=30 + 33 * len(lines), b=10),
        legend=dict(orientation="h", x=0, xanchor="left", y=1, yanchor="top"),
    )
    fig.update_traces(colorbar=dict(orientation="h", x=0.5, xanchor="center", y=0, yanchor="top",
                                    thickness=12, len=0.8, title=dict(side="top")), selector=dict(type="surface"))
    axis = dict(title=dict(font=dict(size=12)), tickfont=dict(size=10))

    def finish(scene):
        eye = scene.camera.eye
        x, y, z = (1.25, 1.25, 1.25) if eye.x is None else (eye.x, eye.y, eye.z)  # plotly's default eye
        scene.update(camera=dict(eye=dict(x=x * zoom_out, y=y * zoom_out, z=z * zoom_out)),
                     xaxis=axis, yaxis=axis, zaxis=axis)

    fig.for_each_scene(finish)
    return fig


def use_book_style() -> None:
    """Make plotnine and plotly draw in the book's style; call once at the top of a notebook.

    While the book is being built, plotly figures render as offline HTML; elsewhere
    (Jupyter, Colab) plotly's own default renderer is left alone.
    """
    p9.theme_set(theme_book())
    template = go.layout.Template(pio.templates["plotly_white"])
    template.layout.colorway = PALETTE
    template.layout.font = dict(family="Helvetica, Arial, sans-serif", size=13)
    template.layout.margin = dict(l=10, r=10, t=50, b=10)
    pio.templates["book"] = template
    pio.templates.default = "book"
    if building_book():
        pio.renderers["book_offline"] = _OfflineHtmlRenderer()
        pio.renderers.default = "book_offline"
