"""The plot theme and offline plotly rendering; glue's conversions and refusals."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import plotnine as p9
import pytest
import torch

from helpers import book, plotting


def test_theme_applies_to_a_figure():
    df = pd.DataFrame({"x": [1, 2, 3], "y": [1, 4, 9], "g": ["a", "b", "a"]})
    fig = p9.ggplot(df, p9.aes("x", "y", colour="g")) + p9.geom_line() + plotting.scale_colour_book() + plotting.theme_book()
    drawn = fig.draw()
    assert tuple(drawn.get_size_inches()) == (7.0, 4.0)
    assert len(set(plotting.PALETTE)) == len(plotting.PALETTE) == 8


def test_offline_renderer_emits_no_plotly_js_no_cdn_and_stable_ids(monkeypatch):
    monkeypatch.setenv("BOOK_BUILD", "1")
    plotting.use_book_style()
    fig = go.Figure(go.Surface(z=np.arange(12.0).reshape(3, 4)))
    bundle = pio.renderers["book_offline"].to_mimebundle(fig.to_dict())
    html = bundle["text/html"]
    assert set(bundle) == {"text/html"}
    assert 'class="plotly-graph-div"' in html and "Plotly.newPlot" in html
    assert "<script src" not in html and "cdn" not in html.lower() and len(html) < 50_000
    assert html == pio.renderers["book_offline"].to_mimebundle(fig.to_dict())["text/html"]
    assert pio.renderers.default == "book_offline" and pio.templates.default == "book"


def test_outside_the_build_plotly_default_renderer_is_left_alone(monkeypatch):
    monkeypatch.delenv("BOOK_BUILD", raising=False)
    monkeypatch.setattr(pio.renderers, "default", "png")  # restored afterwards: no state leaks to other tests
    plotting.use_book_style()
    assert pio.renderers.default == "png"


def _captured_glue(monkeypatch):
    """Run book.glue with IPython's display captured: returns (glue, list of (bundle, metadata))."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda bundle, raw, metadata: shown.append((bundle, metadata)))
    return shown


def test_layout_3d_wraps_the_title_puts_legend_and_colour_bar_in_line_and_moves_the_camera_back():
    fig = go.Figure([go.Surface(z=np.eye(3)), go.Scatter3d(x=[0], y=[0], z=[0], name="a line")])
    fig.update_layout(scene=dict(camera=dict(eye=dict(x=1.6, y=-1.4, z=0.9))))
    title = "A title that is longer than one line on a phone holds"
    plotting.layout_3d(fig, title, height=600, zoom_out=1.5)
    assert fig.layout.title.text.split("<br>") == ["A title that is longer than one line on", "a phone holds"]
    assert all(len(line) <= plotting.TITLE_3D_CHARS for line in fig.layout.title.text.split("<br>"))
    assert fig.layout.legend.orientation == "h" and fig.data[0].colorbar.orientation == "h"
    eye = fig.layout.scene.camera.eye
    assert (eye.x, eye.y, eye.z) == pytest.approx((2.4, -2.1, 1.35))
    assert fig.layout.scene.xaxis.title.font.size == 12 and fig.layout.scene.zaxis.tickfont.size == 10
    default = plotting.layout_3d(go.Figure(go.Surface(z=np.eye(2))), "Short", zoom_out=2)
    assert default.layout.scene.camera.eye.x == pytest.approx(2.5)  # plotly's default eye, 1.25, moved back
    assert default.layout.title.text == "Short" and default.layout.height == 560


def test_glue_stores_plain_python_numbers(monkeypatch):
    import ast

    from myst_nb.ext.glue import GLUE_PREFIX

    shown = _captured_glue(monkeypatch)
    book.glue("a", np.float64(0.5))
    book.glue("b", torch.tensor(3))
    book.glue("c", np.bool_(True))
    stored = {m["scrapbook"]["name"]: ast.literal_eval(b[GLUE_PREFIX + "text/plain"]) for b, m in shown}
    assert stored == {"a": 0.5, "b": 3, "c": True}
    assert [type(v) for v in stored.values()] == [float, int, bool]
    assert all(m["scrapbook"]["mime_prefix"] == GLUE_PREFIX and "book" not in m for _, m in shown)


def test_glue_marks_settings_and_only_settings(monkeypatch):
    shown = _captured_glue(monkeypatch)
    book.glue("width", 64, setting=True)
    book.glue("loss", 1.5)
    assert [m.get("book") for _, m in shown] == [{"setting": True}, None]


def test_glue_refuses_bad_names_and_values():
    with pytest.raises(ValueError, match="identifier"):
        book.glue("not a name", 1)
    with pytest.raises(TypeError, match="glue each number separately"):
        book.glue("arr", np.arange(3))


def test_repository_url_is_read_from_the_config(monkeypatch):
    import yaml

    config = yaml.safe_load(book.repo_path("_config.yml").read_text())
    assert book.repository_url() == config["repository"]["url"].rstrip("/")
    assert book.repository_url().startswith("https://github.com/")
    monkeypatch.setattr(book, "book_config", lambda: {"repository": {"url": "https://example.org/fork/"}})
    assert book.repository_url() == "https://example.org/fork", "follows _config.yml, not a typed copy"


@pytest.mark.parametrize("kwargs, message", [
    ({"base_size": 0}, "base_size must be a finite number > 0"),
    ({"figure_size": (7,)}, r"figure_size must be \(width, height\) in inches"),
    ({"figure_size": (7, -1)}, "figure_size's width and height must be a finite number > 0"),
])
def test_theme_book_names_a_bad_size(kwargs, message):
    from helpers.plotting import theme_book

    with pytest.raises(ValueError, match=message):
        theme_book(**kwargs)
