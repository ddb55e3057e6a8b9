"""Print the whole Part to one PDF: Jupyter Book's single-page HTML, printed by Chromium.

    python -m tools.pdf          # after `make book`; `make pdf` does both

Steps: Jupyter Book renders the executed notebooks (``_build/executed``) with the
``singlehtml`` builder into ``_build/singlehtml``; headless Chromium (``tools/browser.py``)
opens that page offline, waits for MathJax to finish typesetting, replaces each plotly
figure by a static PNG of itself (``Plotly.toImage``; the 3-D ones are drawn with software
WebGL), adds a title page with the edition and a table of contents, starts each section
on a new page, and prints it with Playwright's ``page.pdf`` (A4, page numbers and the
edition in the footer, a PDF outline from the headings) to ``_build/pdf/``.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `python tools/pdf.py`: tools/ is a package
    raise SystemExit("run it as a module, from the repository root: python -m tools.pdf ...")

import argparse
import functools
import html
import http.server
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

from tools import browser, version
from tools.notebooks import ROOT

STAGE = ROOT / "_build" / "executed"
SINGLE = ROOT / "_build" / "singlehtml"
PDF = ROOT / "_build" / "pdf" / "sequence-models-ch14-part3.pdf"
#: Chromium switches: software WebGL so that plotly's 3-D figures draw without a GPU.
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--use-angle=swiftshader",
               "--enable-unsafe-swiftshader"]

PRINT_CSS = """
@page { size: A4; margin: 16mm 15mm 18mm 15mm; }
html, body { background: #fff !important; }
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-header-article, .prev-next-area,
.bd-footer-article, .bd-footer, #pst-back-to-top, .search-button-field, .headerlink,
.toggle-details, button.toggle-button, .header-article-items, .skip-link, .sbt-scroll-pixel-helper,
#jb-print-docs-body, .onlyprint, nav.bd-links, .bd-toc { display: none !important; }
.bd-main .bd-content .bd-article-container, .bd-page-width, .bd-main .bd-content { max-width: none !important; }
.bd-container, .bd-main { display: block !important; }
body { font-size: 10.5pt; }
pre, div.highlight pre { white-space: pre-wrap !important; word-break: break-word; font-size: 8.5pt; }
.cell_output, figure, img, .book-static-plotly, table, .math { break-inside: avoid; }
img { max-width: 100% !important; height: auto; }
h2, h3, h4 { break-after: avoid; }
.book-section-start { break-before: page; }
#book-title-page { break-after: page; min-height: 240mm; display: flex; flex-direction: column;
                   justify-content: center; text-align: center; }
#book-title-page .title { font-size: 28pt; font-weight: 700; margin-bottom: 6mm; }
#book-title-page .subtitle { font-size: 14pt; margin-bottom: 18mm; }
#book-title-page .meta { font-size: 10pt; color: #444; line-height: 1.6; }
#book-contents { break-after: page; }
#book-contents ol { list-style: none; padding-left: 0; font-size: 11pt; line-height: 1.9; }
#book-contents a { color: inherit; text-decoration: none; }
"""

# Runs in the page: wait for MathJax, turn plotly figures into images, add title page and contents.
PREPARE_JS = """
async ({title, subtitle, meta}) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const plots = [...document.querySelectorAll('.plotly-graph-div')];
  for (const gd of plots) {
    const w = Math.min(gd.offsetWidth || 700, 700), h = gd.offsetHeight || 450;
    const url = await Plotly.toImage(gd, {format: 'png', width: w, height: h, scale: 2});
    const img = document.createElement('img');
    img.src = url; img.className = 'book-static-plotly'; img.style.width = w + 'px';
    img.alt = gd.getAttribute('aria-label') || 'a static image of an interactive plotly figure';
    gd.replaceWith(img);
  }
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const sections = [...article.querySelectorAll('h2')].filter(h => /^\\s*14\\.\\d\\d\\s/.test(h.textContent)
                                                                  || /^\\s*References/.test(h.textContent));
  const items = sections.map(h => {
    const sec = h.closest('section'); sec.classList.add('book-section-start');
    const text = h.textContent.replace(/#\\s*$/, '').trim();
    return `<li><a href="#${sec.id}">${text.replace(/</g, '&lt;')}</a></li>`;
  });
  const titlePage = document.createElement('div'); titlePage.id = 'book-title-page';
  titlePage.innerHTML = `<div class="title" role="heading" aria-level="1">${title}</div><div class="subtitle">${subtitle}</div><div class="meta">${meta}</div>`;
  const contents = document.createElement('div'); contents.id = 'book-contents';
  contents.innerHTML = `<h2>Contents</h2><ol>${items.join('')}</ol>`;
  article.prepend(titlePage, contents);
  const raw = (document.body.innerText.match(/\\$\\$|\\\\\\(|\\{glue|\\{cite/g) || []).length;
  return {plots: plots.length, sections: sections.length, raw: raw};
}
"""


def build_singlehtml(edition: str) -> float:
    """Render ``_build/executed`` to ``_build/singlehtml``; log in ``_build/singlehtml.log``; seconds."""
    if not (STAGE / "_toc.yml").is_file():
        raise SystemExit(f"{STAGE} holds no executed book: run `make book` first (`make pdf` does)")
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(STAGE), "--builder", "singlehtml", "--path-output", str(ROOT), "--all"]
    log = ROOT / "_build" / "singlehtml.log"
    start = time.perf_counter()
    with log.open("w") as out:
        result = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, version.ENV_VAR: edition})
    if result.returncode != 0:
        print("\n".join(log.read_text(errors="replace").splitlines()[-30:]), file=sys.stderr)
        raise SystemExit(f"the single-page build failed (exit {result.returncode}); the log is {log}")
    return time.perf_counter() - start


def _serve(folder: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def print_pdf(edition: str, out: Path = PDF, timeout_s: float = 1800) -> dict:
    """Print ``_build/singlehtml/intro.html`` to ``out``; returns what the page reported."""
    from playwright.sync_api import sync_playwright

    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    meta = (f"Edition {html.escape(edition)} · printed {time.strftime('%Y-%m-%d')}<br>"
            f"{html.escape(config['repository']['url'])}<br>"
            "Code: MIT · text and figures: CC BY-SA 4.0 · data and vendored assets: their own licences")
    footer = ('<div style="font-size:7pt;width:100%;text-align:center;color:#555;">'
              f'{html.escape(config["title"])} · edition {html.escape(edition)} · '
              'page <span class="pageNumber"></span> of <span class="totalPages"></span></div>')
    server = _serve(SINGLE)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=browser.ensure_chromium(), args=LAUNCH_ARGS)
            page = chromium.new_page(viewport={"width": 1100, "height": 1400}, color_scheme="light")
            foreign = []

            def offline(route):
                host = urlparse(route.request.url).hostname
                if route.request.url.startswith(("data:", "blob:")) or host in ("127.0.0.1", "localhost"):
                    return route.continue_()
                foreign.append(route.request.url)
                return route.abort()

            page.route("**/*", offline)
            page.set_default_timeout(timeout_s * 1000)
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/intro.html", wait_until="commit")
            # a ~3 MB page: parsing, MathJax and plotly take a while (minutes on a loaded 2-core machine)
            page.wait_for_function("document.readyState === 'complete' && document.querySelectorAll("
                                   "'.plotly-graph-div').length === document.querySelectorAll('.js-plotly-plot').length",
                                   polling=1000)
            page.add_style_tag(content=PRINT_CSS)
            report = page.evaluate(PREPARE_JS, {"title": html.escape(config["title"]),
                                                "subtitle": html.escape(config["author"]), "meta": meta})
            page.pdf(path=str(out), format="A4", print_background=True, display_header_footer=True,
                     header_template="<span></span>", footer_template=footer, outline=True, tagged=True,
                     margin={"top": "16mm", "bottom": "18mm", "left": "15mm", "right": "15mm"})
            chromium.close()
    finally:
        server.shutdown()
    report["foreign_requests"] = foreign
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=PDF, help=f"where to write the PDF (default {PDF.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    edition = version.book_version(ROOT)
    start = time.perf_counter()
    single_s = build_singlehtml(edition)
    print(f"single-page HTML in {single_s:.1f} s", flush=True)
    report = print_pdf(edition, args.out)
    if report["raw"]:
        print(f"warning: {report['raw']} pieces of raw markup ($$, \\(, {{glue, {{cite) left in the page", flush=True)
    if report["foreign_requests"]:
        print(f"warning: blocked {len(report['foreign_requests'])} requests off this machine, e.g. "
              f"{report['foreign_requests'][0]}", flush=True)
    from pypdf import PdfReader

    pages = len(PdfReader(str(args.out)).pages)
    if args.out == PDF and (ROOT / "_build" / "html" / "index.html").is_file():
        # the site's download menus offer the PDF only once it exists (_ext/book_header.py): render again
        from tools import book

        print(f"site rendered again with the PDF in its download menus in {book.render():.1f} s", flush=True)
        book.write_editions()
    print(f"PDF: {args.out} — {pages} pages, {args.out.stat().st_size / 2**20:.1f} MB, {report['sections']} "
          f"sections, {report['plots']} plotly figures as images, edition {edition}; "
          f"{time.perf_counter() - start:.1f} s in all", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
