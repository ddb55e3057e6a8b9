"""The built site, opened in headless Chromium as a reader would: offline, complete, drawn."""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from conftest import ROOT, SITE

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
#: Console messages that are known, harmless noise of the theme (matched as substrings).
CONSOLE_ALLOW = [
    "Got invalid theme mode",           # pydata-sphinx-theme, first visit without a stored mode
    "GPU stall due to ReadPixels",      # software WebGL in headless Chromium
    "willReadFrequently",               # plotly reading back a canvas
]

pytestmark = pytest.mark.browser


def _toc() -> dict:
    return yaml.safe_load((ROOT / "_toc.yml").read_text())


def toc_pages() -> list[str]:
    toc = _toc()
    files = [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]
    return [f"{f}.html" for f in files]


def smoke_pages() -> list[str]:
    """The site's smoke test in the fast tier: the landing page and the first page of every Part."""
    toc = _toc()
    return [f"{toc['root']}.html"] + [f"{part['chapters'][0]['file']}.html" for part in toc["parts"]]


def tiered(pages: list[str], modes: tuple[str, ...] = ("light",), smoke_modes: tuple[str, ...] = ("light", "dark")):
    """Parameters (page, mode): the smoke pages in ``smoke_modes`` run in the fast tier; every other
    (page, mode) of ``pages`` x ``modes`` runs in the full tier only (``-m full``)."""
    smoke = smoke_pages()
    fast = [(p, m) for p in pages if p in smoke for m in smoke_modes]
    full = [(p, m) for p in pages for m in modes if (p, m) not in fast]
    return ([pytest.param(p, m, id=f"{p}-{m}") for p, m in fast]
            + [pytest.param(p, m, id=f"{p}-{m}", marks=pytest.mark.full) for p, m in full])


@pytest.fixture(scope="module")
def site_url():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE} has no site: build it first (`make book`; `make test` does it)")
    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    from tools.browser import find_chromium, missing_message

    chromium = find_chromium()  # `make test` installs one first (tools/browser.py)
    if chromium is None:
        pytest.fail(missing_message())
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield b
        b.close()


def visit(browser, url, mode=None):
    """Open `url` (in the theme's colour mode ``mode``, if given); returns (page, console messages,
    non-local requests, failed local responses)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    if mode:
        page.add_init_script(f"localStorage.setItem('mode', '{mode}'); localStorage.setItem('theme', '{mode}');")
    console, foreign, failed = [], [], []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("error", f"uncaught: {e}")))  # a script that threw

    def route(r):
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host in ("127.0.0.1", "localhost"):
            return r.continue_()
        foreign.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    page.on("response", lambda resp: failed.append(resp.url) if resp.status >= 400 else None)
    page.goto(url, wait_until="networkidle")
    page.wait_for_timeout(500)
    return page, console, foreign, failed


@pytest.mark.parametrize("page_path, mode", tiered(toc_pages()))
def test_page_loads_offline_and_draws_everything(browser, site_url, page_path, mode):
    page, console, foreign, failed = visit(browser, f"{site_url}/{page_path}", mode)
    assert page.evaluate("document.documentElement.dataset.theme") == mode
    assert not foreign, f"requests to non-local hosts: {foreign}"
    assert [u for u in failed if not u.endswith("/favicon.ico")] == []
    errors = [t for kind, t in console if kind == "error" and not any(a in t for a in CONSOLE_ALLOW)
              and not ("Failed to load resource" in t and failed and all(u.endswith("favicon.ico") for u in failed))]
    assert not errors, f"console errors: {errors}"
    # every figure image is visible and actually decoded
    images = page.locator("main .cell_output img")
    for i in range(images.count()):
        img = images.nth(i)
        hidden_by_toggle = img.evaluate("el => !!el.closest('details:not([open]), .toggle-hidden')")
        if not hidden_by_toggle:
            img.scroll_into_view_if_needed()
            assert img.is_visible(), f"figure {i} is not visible"
        assert img.evaluate("el => el.complete && el.naturalWidth > 0"), f"figure {i} did not load"
    # every plotly div is drawn (an SVG for 2-D, a WebGL canvas too for 3-D)
    divs = page.locator(".plotly-graph-div")
    for i in range(divs.count()):
        div = divs.nth(i)
        div.scroll_into_view_if_needed()
        assert div.locator(".main-svg").count() > 0, f"plotly figure {i} not drawn"
        if div.evaluate("el => (el.data || []).some(t => /3d|surface|mesh/.test(t.type))"):
            assert div.locator("canvas").count() > 0, f"3-D plotly figure {i} has no WebGL canvas"
    # plotly.js is loaded only by pages with plotly figures
    scripts = page.eval_on_selector_all("script[src]", "els => els.map(e => e.getAttribute('src'))")
    assert any("plotly.min.js" in s for s in scripts) == (divs.count() > 0)
    # typeset math, if the page has any
    if page.locator("div.math, span.math").count():
        page.wait_for_selector("mjx-container", state="attached", timeout=10_000)
    page.close()


@pytest.mark.parametrize("page_path, mode", tiered([p for p in toc_pages() if p.startswith("chapters/")],
                                                   smoke_modes=("light",)))
def test_notebook_pages_have_colab_and_download_buttons(browser, site_url, page_path, mode):
    page, *_ = visit(browser, f"{site_url}/{page_path}", mode)
    from helpers.book import colab_url

    notebook = page_path.replace(".html", ".ipynb")
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    assert colab_url(Path(notebook).stem) in links  # the Colab edition's branch (tools/colab.py)
    stem = Path(notebook).stem
    for edition in ("colab", "student"):  # the downloads (test_downloads_... checks what they are)
        assert any(link.endswith(f"_editions/{edition}/{stem}.ipynb") for link in links), f"no {edition} download"
    assert not any("_sources/" in link for link in links), "the raw MyST source is offered"
    # the injected-parameters cell is hidden; the notebook's own parameters cell is shown
    body = page.inner_text("main")
    assert "# Parameters" not in body and "HEAVY_EVAL = False" in body
    page.close()


def test_glued_numbers_appear_in_the_rendered_prose(browser, site_url):
    """No chapter page holds a raw glue role (checked in every page's HTML); and one sentence
    shows its number in place in the browser."""
    for page_path in [p for p in toc_pages() if p.startswith("chapters/")]:
        html = (SITE / page_path).read_text(encoding="utf-8")
        assert "{glue" not in html, f"{page_path} shows an unrendered glue role"
    page, *_ = visit(browser, f"{site_url}/chapters/14_45_sequence_modelling_problems.html")
    body = page.inner_text("main")
    assert "{glue" not in body
    assert re.search(r"has \d+ parameters at every length", body)
    page.close()


# --- accessibility and dark mode (issue 13) -----------------------------------------------------

AXE = ROOT / "_build" / "node" / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = ROOT / "_build" / "screenshots"
#: Pages whose figures are photographed in both modes: diagrams, plotnine plots and plotly 3-D.
SCREENSHOT_PAGES = ["chapters/14_46_recurrent_networks.html", "chapters/14_50_scaled_dot_product_attention.html",
                    "chapters/14_54_transformer_block.html", "chapters/14_63_neural_versus_classical_forecasting.html"]


def open_in_mode(browser, url, mode):
    """Open `url` with the theme's colour mode ("light" or "dark") chosen before the page loads."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.add_init_script(f"localStorage.setItem('mode', '{mode}'); localStorage.setItem('theme', '{mode}');")
    page.route("**/*", lambda r: r.continue_() if urlparse(r.request.url).hostname in ("127.0.0.1", "localhost")
               or r.request.url.startswith(("data:", "blob:")) else r.abort())
    page.goto(url, wait_until="networkidle")
    page.wait_for_load_state("load")  # the page's own scripts (book.js) have run their fixes
    page.wait_for_timeout(500)
    assert page.evaluate("document.documentElement.dataset.theme") == mode
    return page


@pytest.mark.parametrize("page_path, mode", tiered(toc_pages(), modes=("light", "dark"), smoke_modes=()))
def test_axe_finds_no_serious_or_critical_violation(browser, site_url, page_path, mode):
    if not AXE.is_file():
        pytest.fail(f"{AXE} missing: `npm install --prefix _build/node axe-core` (`make test` does it)")
    page = open_in_mode(browser, f"{site_url}/{page_path}", mode)
    page.add_script_tag(path=str(AXE))
    violations = page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']})).violations
        .filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => `${v.id} (${v.impact}) x${v.nodes.length}: ${v.nodes[0].target.join(' ')}`)""")
    page.close()
    assert not violations, violations


def test_keyboard_reaches_the_content_and_the_search(browser, site_url):
    page = open_in_mode(browser, f"{site_url}/chapters/14_54_transformer_block.html", "light")
    reached = set()
    for _ in range(60):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("""() => { const e = document.activeElement;
            if (e.classList.contains('skip-link')) return 'skip';
            if (e.closest('.search-button-field, .search-button')) return 'search';
            if (e.closest('#main-content article, article.bd-article') && e.tagName === 'A') return 'content';
            return 'other'; }"""))
        if {"search", "content"} <= reached:
            break
    page.close()
    assert {"search", "content"} <= reached, f"Tab reached only {sorted(reached)}"


def test_figures_are_numbered_captioned_and_described(browser, site_url):
    page, *_ = visit(browser, f"{site_url}/chapters/14_46_recurrent_networks.html")
    figures = page.locator("main figure")
    assert figures.count() >= 2
    for i in range(figures.count()):
        fig = figures.nth(i)
        assert re.fullmatch(r"Figure \d+(\.\d+)*", fig.locator(".caption-number").inner_text().strip())
        alt = fig.locator("img").get_attribute("alt")
        assert len(alt) >= 80 and "_images/" not in alt
    body = page.inner_text("main")
    assert "{numref}" not in body and re.search(r"draws the loop unrolled", body)
    page.close()


@pytest.mark.parametrize("page_path", [SCREENSHOT_PAGES[0]] + [pytest.param(p, marks=pytest.mark.full)
                                                               for p in SCREENSHOT_PAGES[1:]])
def test_figures_are_readable_in_both_modes(browser, site_url, page_path):
    """Screenshots of each mode go to _build/screenshots/ (look at them); what can be checked is checked:
    in dark mode images sit unfiltered on a light card, and plotly's text follows the theme."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    stem = Path(page_path).stem[:5]
    inks = {}
    for mode in ("light", "dark"):
        page = open_in_mode(browser, f"{site_url}/{page_path}", mode)
        figures = page.locator("main figure")
        for i in range(min(figures.count(), 3)):
            figures.nth(i).scroll_into_view_if_needed()
            figures.nth(i).screenshot(path=str(SCREENSHOTS / f"{stem}-{mode}-fig{i + 1}.png"))
        for i in range(page.locator("main figure img").count()):
            img = page.locator("main figure img").nth(i)
            style = img.evaluate("el => { const s = getComputedStyle(el); return [s.filter, s.backgroundColor]; }")
            if mode == "dark":
                assert style == ["none", "rgb(255, 255, 255)"], f"figure image {i} in dark mode: {style}"
        divs = page.locator(".plotly-graph-div")
        if divs.count():
            page.wait_for_timeout(300)
            inks[mode] = divs.first.evaluate("el => el._fullLayout.font.color")
        page.close()
    if inks:
        assert inks["light"] != inks["dark"], f"plotly text does not follow the theme: {inks}"


def test_plotly_figures_carry_their_alt_text():
    """myst-nb gives alt text to <img> only; every executed plotly figure must carry its alt text
    on the page too (tools/book.py puts it in front of the figure as visually hidden text)."""
    import html
    import json

    from conftest import EXECUTED

    found = 0
    for path in sorted(EXECUTED.glob("*.ipynb")):
        page = (SITE / "chapters" / f"{path.stem}.html").read_text(encoding="utf-8")
        for cell in json.loads(path.read_text())["cells"]:
            outputs = [o for o in cell.get("outputs", []) if "plotly-graph-div" in "".join(o.get("data", {}).get("text/html", ""))]
            if not outputs:
                continue
            alt = cell["metadata"]["mystnb"]["image"]["alt"]
            found += 1
            assert f'<p class="visually-hidden book-alt">{html.escape(alt)}</p>' in page, \
                f"{path.stem}: a plotly figure without its alt text on the page"
    assert found >= 4, f"expected the Part's executed plotly figures, found {found}"


#: The widths the figures are measured at: a phone, a tablet, a laptop, a desktop.
WIDTHS = (375, 768, 1366, 1920)


def _squashed_images(page, page_path: str, width: int) -> list:
    """(src, shown/natural aspect ratio) of every visible figure image off by more than 2 % at ``width``."""
    page.set_viewport_size({"width": width, "height": 900})
    # the images are laid out some time after the network is idle when the machine is busy; wait for them
    page.wait_for_selector("main .cell_output img", state="visible", timeout=20_000)
    page.wait_for_timeout(200)  # the resize's layout
    ratios = page.eval_on_selector_all("main .cell_output img", """els => els.filter(e => e.offsetParent).map(e => {
        const s = getComputedStyle(e), px = v => parseFloat(s[v]);
        const w = e.clientWidth - px('paddingLeft') - px('paddingRight');
        const h = e.clientHeight - px('paddingTop') - px('paddingBottom');
        return [e.getAttribute('src'), (w / h) / (e.naturalWidth / e.naturalHeight)]; })""")
    assert ratios, f"{page_path} at {width} px: no visible figure image"
    return [(src, round(r, 3)) for src, r in ratios if abs(r - 1) > 0.02]


@pytest.mark.parametrize("page_path", [p for p in smoke_pages() if p.startswith("chapters/")])
def test_figures_keep_their_aspect_ratio_on_a_phone(browser, site_url, page_path):
    """myst-nb's inline pixel sizes squashed narrowed figures (book.css sets height: auto): every figure
    image's content box keeps the PNG's own width-to-height ratio, to 2 %, at 375 px (fast tier)."""
    page = browser.new_page(viewport={"width": 375, "height": 900})
    page.goto(f"{site_url}/{page_path}", wait_until="networkidle")
    squashed = _squashed_images(page, page_path, 375)
    page.close()
    assert not squashed, f"{page_path} at 375 px: shown/natural aspect ratios {squashed}"


@pytest.mark.full
@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("page_path", [p for p in toc_pages() if p.startswith("chapters/")])
def test_figures_keep_their_aspect_ratio_at_every_width(browser, site_url, page_path, mode):
    """Every figure image of every page, at 375, 768, 1366 and 1920 px, in both modes, and in print
    (an A4 page's 794 px, print media: the PDF's styles): shown and natural width-to-height ratios
    agree to 2 % (one page load, resized)."""
    if "<img" not in (SITE / page_path).read_text(encoding="utf-8").split('id="main-content"', 1)[-1]:
        pytest.skip(f"{page_path} has no figure image")
    page = open_in_mode(browser, f"{site_url}/{page_path}", mode)
    squashed = {w: bad for w in WIDTHS if (bad := _squashed_images(page, page_path, w))}
    page.emulate_media(media="print")
    if bad := _squashed_images(page, page_path, 794):
        squashed["print"] = bad
    page.close()
    assert not squashed, f"{page_path} ({mode}): shown/natural aspect ratios by width {squashed}"


#: The pages with 3-D plotly figures (each laid out by helpers.plotting.layout_3d).
PAGES_3D = ["chapters/14_45_sequence_modelling_problems.html", "chapters/14_47_lstm_and_gru_gating.html",
            "chapters/14_50_scaled_dot_product_attention.html", "chapters/14_52_positional_encoding.html"]


def _scene_report(page) -> list[dict]:
    """Per 3-D figure on ``page``: its box, every scene's box (both in page pixels), the boxes of its
    SVG texts (title, legend, colour bar, subplot titles) and its axis font sizes."""
    return page.eval_on_selector_all(".plotly-graph-div", """divs => divs.filter(d => d._fullLayout &&
        Object.keys(d._fullLayout).some(k => /^scene\\d*$/.test(k))).map(d => {
        const L = d._fullLayout, s = L._size, r = d.getBoundingClientRect();
        const scenes = Object.keys(L).filter(k => /^scene\\d*$/.test(k)).map(k => {
            const x = L[k].domain.x, y = L[k].domain.y;
            return {name: k, left: r.left + s.l + x[0] * s.w, right: r.left + s.l + x[1] * s.w,
                    top: r.top + s.t + (1 - y[1]) * s.h, bottom: r.top + s.t + (1 - y[0]) * s.h,
                    fonts: ['xaxis', 'yaxis', 'zaxis'].map(a => [L[k][a].title.font.size, L[k][a].tickfont.size])};
        });
        const texts = [...d.querySelectorAll('.main-svg text, .main-svg .legendtoggle')].filter(t => t.textContent.trim())
            .map(t => { const b = t.getBoundingClientRect();
                        return {text: t.textContent.trim(), left: b.left, right: b.right, top: b.top, bottom: b.bottom}; });
        return {fitted: d._bookWidth === d.clientWidth, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                scenes, texts};
    })""")


def _ink_on_frame(image, box, origin, background) -> int:
    """Pixels of ``image`` (a screenshot whose top-left is page point ``origin``) on the 2-px frame just
    inside ``box`` that differ from ``background``: what a scene drew up to its edge, where the canvas cuts it."""
    left, top = round(box["left"] - origin[0]) + 1, round(box["top"] - origin[1]) + 1
    right, bottom = round(box["right"] - origin[0]) - 2, round(box["bottom"] - origin[1]) - 2
    px = image.load()
    frame = [(x, y) for x in range(left, right) for y in (top, top + 1, bottom - 1, bottom)]
    frame += [(x, y) for y in range(top, bottom) for x in (left, left + 1, right - 1, right)]
    return sum(1 for x, y in frame if max(abs(a - b) for a, b in zip(px[x, y][:3], background)) > 40)


@pytest.mark.parametrize("mode", ["light", pytest.param("dark", marks=pytest.mark.full)])
@pytest.mark.parametrize("width", [375, pytest.param(1366, marks=pytest.mark.full)])
@pytest.mark.parametrize("page_path", [PAGES_3D[0]] + [pytest.param(p, marks=pytest.mark.full) for p in PAGES_3D[1:]])
def test_3d_figures_are_whole_and_readable_on_a_phone_and_a_laptop(browser, site_url, page_path, width, mode):
    """At 375 px the 3-D figures lost their sides, axis titles and title (a scene keeps plotly's vertical
    field of view; book.js now shortens it and moves its cameras back). Checked: nothing the scene draws
    (surface, axes, axis titles: WebGL, clipped by its canvas) reaches its canvas's edge, with the SVG
    layers hidden; every SVG text (title, legend, colour bar) lies inside the figure and no two overlap;
    axis titles are at least 12 px and tick labels 10 px. Screenshots go to _build/screenshots/."""
    import io

    from PIL import Image

    page = open_in_mode(browser, f"{site_url}/{page_path}", mode)
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_selector(".plotly-graph-div canvas", state="attached", timeout=20_000)
    page.wait_for_function("""() => [...document.querySelectorAll('.plotly-graph-div')].filter(d => d._fullLayout &&
        Object.keys(d._fullLayout).some(k => /^scene\\d*$/.test(k))).every(d => d._bookWidth === d.clientWidth)""",
                           timeout=20_000)
    page.wait_for_timeout(800)  # WebGL draws after the relayout
    figures = _scene_report(page)
    assert figures, f"{page_path}: no 3-D figure"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    background = (255, 255, 255) if mode == "light" else tuple(int(c) for c in re.findall(r"\d+", page.evaluate(
        "getComputedStyle(document.querySelector('.bd-article-container') || document.body).backgroundColor"))[:3])
    for i, fig in enumerate(figures):
        div = page.locator(".plotly-graph-div").nth(i)
        div.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        fig = _scene_report(page)[i]  # boxes after the scroll
        div.screenshot(path=str(SCREENSHOTS / f"3d-{Path(page_path).stem[:5]}-{i}-{width}-{mode}.png"))
        div.evaluate("d => d.querySelectorAll('.main-svg').forEach(s => s.style.visibility = 'hidden')")
        image = Image.open(io.BytesIO(div.screenshot())).convert("RGB")
        div.evaluate("d => d.querySelectorAll('.main-svg').forEach(s => s.style.visibility = '')")
        for scene in fig["scenes"]:
            ink = _ink_on_frame(image, scene, (fig["left"], fig["top"]), background)
            if ink > 3:
                problems.append(f"figure {i} {scene['name']}: {ink} pixels drawn up to the canvas's edge (cut off)")
            if min(f[0] for f in scene["fonts"]) < 12 or min(f[1] for f in scene["fonts"]) < 10:
                problems.append(f"figure {i} {scene['name']}: axis (title, tick) font sizes {scene['fonts']}")
        for t in fig["texts"]:
            if t["left"] < fig["left"] - 1 or t["right"] > fig["right"] + 1 or t["top"] < fig["top"] - 1 \
                    or t["bottom"] > fig["bottom"] + 1:
                problems.append(f"figure {i}: text {t['text']!r} leaves the figure")
        for a, b in [(a, b) for n, a in enumerate(fig["texts"]) for b in fig["texts"][n + 1:]]:
            if min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1 and \
                    min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1:
                problems.append(f"figure {i}: texts {a['text']!r} and {b['text']!r} overlap")
    page.close()
    assert not problems, f"{page_path} at {width} px ({mode}): {problems}"


# --- the header, the console and navigation at every width (issue 25) ---------------------------

def test_no_page_carries_a_script_twice():
    """Sphinx 7.4 wrote sphinx-thebe's inline `const THEBE_JS_URL = ...` twice into every notebook page
    (every page then logged "Identifier 'THEBE_JS_URL' has already been declared"); _ext/book_assets.py
    keeps one copy of each script."""
    doubled = {}
    for path in sorted(SITE.rglob("*.html")):
        head = path.read_text(encoding="utf-8").split("</head>", 1)[0]
        scripts = re.findall(r"<script\b[^>]*>.*?</script>", head, flags=re.S)
        twice = sorted({s[:80] for s in scripts if scripts.count(s) > 1})
        if twice:
            doubled[str(path.relative_to(SITE))] = twice
    assert not doubled, f"{len(doubled)} pages repeat a script, e.g. {next(iter(doubled.items()))}"


def _header_links(page_path: str) -> dict[str, str]:
    """The article header's links by their theme label (source-repository-button, ...)."""
    html = (SITE / page_path).read_text(encoding="utf-8")
    header = html.split('class="bd-header-article', 1)[1].split("</div>\n</div>\n</div>", 1)[0]
    links = {}
    for a in re.findall(r"<a\b[^>]*>", header):
        href, label = re.search(r'href="([^"]+)"', a), re.search(r'aria-label="([^"]+)"|title="([^"]+)"', a)
        if href and label:
            links[label.group(1) or label.group(2)] = href.group(1).replace("&amp;", "&")
    return links


@pytest.mark.parametrize("page_path", [p for p in toc_pages() if p.startswith("chapters/")])
def test_repository_issue_and_edit_buttons_come_from_the_one_repository_url(page_path):
    """use_repository_button was lost (Jupyter Book's html: switches are replaced by our own
    html_theme_options; tools/book.py copies them). All three links derive from repository.url; the
    edit link opens the page's source notebook on repository.branch, not on the Colab branch."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo, branch = config["repository"]["url"].rstrip("/"), config["repository"]["branch"]
    hrefs = set(_header_links(page_path).values())
    notebook = page_path.replace(".html", ".ipynb")
    assert repo in hrefs, f"no repository button in {sorted(hrefs)}"
    assert any(h.startswith(f"{repo}/issues/new?") and f"{page_path.removesuffix('.html')}.html" in h
               for h in hrefs), f"no issue button for this page in {sorted(hrefs)}"
    assert f"{repo}/edit/{branch}/{notebook}" in hrefs, f"no edit button on {branch} in {sorted(hrefs)}"


def test_the_theme_options_keep_the_repository_buttons_and_drop_the_second_navbar():
    import copy

    from tools import book

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    other = copy.deepcopy(config)
    other["html"].update(use_repository_button=True, use_issues_button=False, use_edit_page_button=True)
    other["repository"]["branch"] = "trunk"
    staged = book.staged_config(other)["sphinx"]["config"]
    theme = staged["html_theme_options"]
    assert (theme["use_repository_button"], theme["use_issues_button"], theme["use_edit_page_button"]) == (True, False, True)
    assert staged["book_source_branch"] == "trunk" and theme["repository_branch"] == config["edition"]["colab_branch"]
    assert theme["navbar_persistent"] == []  # the top navbar's second search field and second toggles


NAV_WIDTHS = (375, 768, 991, 1366)


def nav_params():
    """(page, width, mode): one smoke page at a phone's and a laptop's width in the fast tier; the
    first page of every Part at all four widths in both modes in the full tier."""
    pages = [p for p in smoke_pages() if p.startswith("chapters/")]
    fast = [(pages[0], 375, "light"), (pages[0], 1366, "dark")]
    full = [(p, w, m) for p in pages for w in NAV_WIDTHS for m in ("light", "dark") if (p, w, m) not in fast]
    return ([pytest.param(*f, id=f"{f[0]}-{f[1]}-{f[2]}") for f in fast]
            + [pytest.param(*f, id=f"{f[0]}-{f[1]}-{f[2]}", marks=pytest.mark.full) for f in full])


SHOWN = """sel => { const e = document.querySelector(sel); if (!e) return false;
    const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    return r.width > 50 && r.height > 20 && s.visibility !== 'hidden' && r.right > 0 && r.left < innerWidth; }"""


def _click_visible(page, selector):
    buttons = [b for b in page.locator(selector).all() if b.is_visible()]
    assert len(buttons) == 1, f"{len(buttons)} visible {selector} buttons"
    buttons[0].click(timeout=5_000)
    page.wait_for_timeout(400)


@pytest.mark.parametrize("page_path, width, mode", nav_params())
def test_sidebar_contents_and_search_open_and_close_at_every_width(browser, site_url, page_path, width, mode):
    """Click ☰, "on this page" and search as a reader would: each opens its panel and closes again.
    Below 992 px (☰) and 1200 px (contents) the panel is a dialog, closed with Escape; wider, the button
    collapses the panel beside the text and a second click restores it. One search field, no navbar."""
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.add_init_script(f"localStorage.setItem('mode', '{mode}'); localStorage.setItem('theme', '{mode}');")
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{site_url}/{page_path}", wait_until="networkidle")
    page.wait_for_load_state("load")
    page.wait_for_timeout(500)
    shown = lambda sel: page.evaluate(SHOWN, sel)
    assert page.evaluate("document.getElementById('pst-header').offsetHeight") == 0, "the second navbar is back"
    assert page.locator(".search-button-field:visible").count() == (1 if width >= 992 else 0)
    nav, toc = "#pst-primary-sidebar nav.bd-docs-nav, #pst-primary-sidebar-modal nav.bd-docs-nav", "#pst-page-toc-nav"
    for button, panel, dialog, wide in ((".primary-toggle", nav, "pst-primary-sidebar-modal", 992),
                                        (".secondary-toggle", toc, "pst-secondary-sidebar-modal", 1200)):
        is_open = lambda: page.evaluate(f"document.getElementById('{dialog}').open")
        if width < wide:
            assert not is_open()
            _click_visible(page, button)
            assert is_open() and shown(panel), f"{button} opened nothing at {width} px"
            page.keyboard.press("Escape")
            page.wait_for_timeout(300)
            assert not is_open(), f"{button}'s panel did not close at {width} px"
        else:
            assert shown(panel)
            _click_visible(page, button)
            assert not shown(panel) and not is_open(), f"{button} did not collapse its panel at {width} px"
            if button == ".primary-toggle":  # the sidebar's search field went with it: the header has one
                assert page.locator(".bd-header-article .search-button:visible").count() == 1
            _click_visible(page, button)
            assert shown(panel), f"{button} did not restore its panel at {width} px"
    _click_visible(page, ".search-button-field, .bd-header-article .search-button")
    assert page.locator("#pst-search-dialog input[name=q]").is_visible(), f"search did not open at {width} px"
    page.keyboard.press("Escape")
    page.wait_for_timeout(300)
    assert not page.evaluate("document.getElementById('pst-search-dialog').open"), f"search did not close at {width} px"
    page.close()
    assert not errors, errors


def test_the_references_are_labelled_as_the_text_cites_them():
    """The bibliography used pybtex's alpha labels ("[CvMerrienboerG+14]") beside author-year
    citations ("Cho et al., 2014"), under an author's note; _ext/book_bibliography.py labels each
    entry as it is cited. Every citation in the book links to an entry whose label is its own text."""
    refs = (SITE / "references.html").read_text(encoding="utf-8")
    labels = dict(re.findall(r'<div class="citation" id="(id\d+)" role="doc-biblioentry">\s*<span class="label">'
                             r'<span class="fn-bracket">\[</span>(.*?)<span class="fn-bracket">\]</span>', refs))
    assert len(labels) >= 40, f"{len(labels)} bibliography entries found"
    wrong = {k: v for k, v in labels.items() if not re.fullmatch(r"[^\d,]+(?: et al\.)?, \d{4}[a-z]?", v)}
    assert not wrong, f"labels not in author-year form: {wrong}"
    cited = 0
    for path in sorted(SITE.rglob("*.html")):
        for target, text in re.findall(r'<span class="bibtex-citation"[^>]*>\[<a class="reference internal" '
                                       r'href="[./]*references\.html#(id\d+)"[^>]*>(.*?)</a>', path.read_text(encoding="utf-8")):
            cited += 1
            shown = re.sub(r"<[^>]+>", "", text).replace("\xa0", " ")  # a two-word surname may keep a no-break space
            assert labels[target] == shown, f"{path.name}: cites {text!r}, entry says {labels[target]!r}"
    assert cited >= 40
    main = re.sub(r"<[^>]+>", "", refs.split("<main", 1)[1])
    assert "{cite}" not in main and "cite into it" not in main


@pytest.mark.parametrize("page_path", [p for p in toc_pages() if p.startswith("chapters/")])
def test_downloads_are_the_colab_and_student_notebooks_never_the_myst_source(page_path):
    """The theme's menu offered the page's MyST source (as ".ipynb" and as the source file: raw glue
    roles, a first cell that refuses to run in Colab) and a browser print as ".pdf". Now: the page's
    Colab and student notebooks (and the PDF when built, below); no raw source is in the site at all."""
    html = (SITE / page_path).read_text(encoding="utf-8")
    menu = html.split('class="dropdown dropdown-download-buttons"', 1)[1].split("</ul>", 1)[0]
    hrefs = re.findall(r'href="([^"]+)"', menu)
    stem = Path(page_path).stem
    assert hrefs[:2] == [f"../_editions/colab/{stem}.ipynb", f"../_editions/student/{stem}.ipynb"], hrefs
    assert "window.print" not in menu and "_sources" not in html
    assert not (SITE / "_sources").exists(), "the site still carries the raw sources"
    import json

    for href, edition in zip(hrefs, ("colab", "student")):
        nb = json.loads((SITE / "chapters" / href).resolve().read_text())
        assert nb["metadata"]["book_edition"]["edition"] == edition
        prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        assert "{glue" not in prose and ":::" not in prose
        assert ("<details>" in prose) == (edition == "colab")  # the student notebook has no solutions
    pdf = Path(yaml.safe_load((ROOT / "_build" / "executed" / "_config.yml").read_text())["sphinx"]["config"]["book_pdf"])
    if pdf.is_file() and pdf.stat().st_mtime < (SITE / page_path).stat().st_mtime:
        assert f"../_editions/{pdf.name}" in hrefs and (SITE / "_editions" / pdf.name).is_file()


def test_the_download_menu_offers_the_pdf_only_when_it_is_built(tmp_path):
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("book_header", ROOT / "_ext" / "book_header.py")
    header = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(header)
    pdf = tmp_path / "part.pdf"

    def menu(pagename, solutions="shown"):
        app = SimpleNamespace(config=SimpleNamespace(book_pdf=str(pdf) if solutions == "shown" else "",
                                                     book_solutions=solutions))
        context = {"header_buttons": [{"label": "launch-buttons"}, {"label": "download-buttons", "buttons": ["theirs"]}],
                   "pathto": lambda name, resource: f"../{name}"}
        header._downloads(app, pagename, "page.html", context, None)
        return [b["label"] for b in context["header_buttons"]], [
            b["url"] for g in context["header_buttons"] if g["label"] == "download-buttons" for b in g["buttons"]]

    assert menu("chapters/14_45_x") == (["launch-buttons", "download-buttons"],
                                        ["../_editions/colab/14_45_x.ipynb", "../_editions/student/14_45_x.ipynb"])
    assert menu("intro") == (["launch-buttons"], [])  # nothing to download: no menu
    pdf.write_bytes(b"%PDF-1.7")
    assert menu("chapters/14_45_x")[1][-1] == "../_editions/part.pdf" and menu("intro")[1] == ["../_editions/part.pdf"]
    # a site without solutions (tools/book.staged_config(..., "hidden") sets both): the student notebook only
    assert menu("chapters/14_45_x", "hidden") == (["launch-buttons", "download-buttons"],
                                                  ["../_editions/student/14_45_x.ipynb"])
