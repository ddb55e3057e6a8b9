// plotly figures follow the theme: light or dark text, grid and background.
(function () {
  "use strict";
  var LIGHT = { ink: "#2a3f5f", grid: "#EBF0F8", zero: "#EBF0F8", scene: "#FFFFFF", sceneGrid: "#DFE8F3" };
  var DARK = { ink: "#E3E3E3", grid: "#3A3F44", zero: "#555B61", scene: "#1E2125", sceneGrid: "#4A5056" };

  function isDark() {
    return document.documentElement.getAttribute("data-theme") === "dark";
  }

  function restyle() {
    if (!window.Plotly) return;
    var c = isDark() ? DARK : LIGHT;
    document.querySelectorAll(".plotly-graph-div").forEach(function (div) {
      if (!div.layout) return;
      var update = {
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "font.color": c.ink,
        "title.font.color": c.ink,
        "legend.font.color": c.ink
      };
      Object.keys(div.layout).forEach(function (key) {
        if (/^[xy]axis\d*$/.test(key)) {
          update[key + ".gridcolor"] = c.grid;
          update[key + ".zerolinecolor"] = c.zero;
          update[key + ".color"] = c.ink;
        } else if (/^scene\d*$/.test(key)) {
          ["xaxis", "yaxis", "zaxis"].forEach(function (ax) {
            update[key + "." + ax + ".backgroundcolor"] = c.scene;
            update[key + "." + ax + ".gridcolor"] = c.sceneGrid;
            update[key + "." + ax + ".color"] = c.ink;
          });
        }
      });
      (div.layout.annotations || []).forEach(function (_, i) {
        update["annotations[" + i + "].font.color"] = c.ink;
      });
      window.Plotly.relayout(div, update);
    });
  }

  // A 3-D scene keeps plotly's fixed vertical field of view, so a column narrower than the one a
  // figure was laid out for (FIT_WIDTH, the laptop's) cuts its sides and axis titles: there the
  // figure gets shorter (to SHORTEST of its height at most) and its cameras move back, so that the
  // whole scene fits as it does on a laptop (moving it back less cut the axis titles at 375 px: the
  // canvas clips them). Below 3/4 of FIT_WIDTH an axis gets at most FEW_TICKS ticks. A reader's own
  // rotation is kept until the width changes.
  var FIT_WIDTH = 800, SHORTEST = 0.85, FEW_TICKS = 4;
  function fit3d() {
    if (!window.Plotly) return;
    document.querySelectorAll(".plotly-graph-div").forEach(function (div) {
      if (!div.layout || !div._fullLayout) return;
      var scenes = Object.keys(div._fullLayout).filter(function (k) { return /^scene\d*$/.test(k); });
      if (!scenes.length) return;
      if (!div._bookDesign) {
        div._bookDesign = { height: div._fullLayout.height, eyes: {} };
        scenes.forEach(function (k) {
          var e = div._fullLayout[k].camera.eye;
          div._bookDesign.eyes[k] = { x: e.x, y: e.y, z: e.z };
        });
      }
      var width = div.clientWidth;
      if (!width || div._bookWidth === width) return;
      div._bookWidth = width;
      var design = div._bookDesign, narrow = Math.min(1, width / FIT_WIDTH);
      var height = Math.round(design.height * Math.max(SHORTEST, narrow));
      var back = Math.max(1, (height / design.height) / narrow);
      var update = { width: width, height: height };  // both: a height alone froze the old width
      scenes.forEach(function (k) {
        var e = design.eyes[k];
        update[k + ".camera.eye"] = { x: e.x * back, y: e.y * back, z: e.z * back };
        ["xaxis", "yaxis", "zaxis"].forEach(function (ax) {
          update[k + "." + ax + ".nticks"] = narrow < 0.75 ? FEW_TICKS : 0;  // 0: plotly's own choice
        });
      });
      div.style.height = height + "px";  // the div's own inline height, else the space below stays empty
      window.Plotly.relayout(div, update);
    });
  }

  function start() {
    restyle();
    fit3d();
    window.addEventListener("resize", function () { window.clearTimeout(fit3d.timer); fit3d.timer = window.setTimeout(fit3d, 150); });
    new MutationObserver(restyle).observe(document.documentElement,
      { attributes: true, attributeFilter: ["data-theme"] });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();

// Accessibility fixes to the theme's markup, found by axe-core (tests/test_site.py runs it).
(function () {
  "use strict";
  function quietIcons(button) {
    button.querySelectorAll(".theme-switch, svg").forEach(function (el) {
      if (el.hasAttribute("title")) el.removeAttribute("title");
      if (el.getAttribute("aria-hidden") !== "true") el.setAttribute("aria-hidden", "true");
    });
    button.querySelectorAll("svg title").forEach(function (t) { t.remove(); });
  }
  function fix() {
    // Label in name (WCAG 2.5.3): the theme labels some controls with words that differ from
    // the words they show (the search field shows "Search this book... Ctrl+K" but is named
    // "Search"; a code toggle shows "Show code cell source" but is named "Toggle hidden
    // content"). Let the visible text be the accessible name.
    document.querySelectorAll("button[aria-label], a[aria-label], summary[aria-label], [role=button][aria-label]").forEach(function (el) {
      if (el.classList.contains("theme-switch-button")) return;  // icons only; handled below
      var shown = (el.textContent || "").replace(/\s+/g, " ").trim();  // not innerText: no layout needed
      if (shown && el.getAttribute("aria-label").toLowerCase().indexOf(shown.toLowerCase()) < 0) {
        el.removeAttribute("aria-label");
      }
    });
    // The colour-mode button's icons carry titles ("Light", "Dark", ...) that become hidden
    // text inside a button named "Color mode": make the icons decorative.
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      quietIcons(button);
      // Font Awesome swaps the <i> icons for <svg> ones whenever it gets round to it (and the
      // theme may redraw them): keep the icons decorative whatever arrives later.
      if (!button.dataset.bookObserved) {
        button.dataset.bookObserved = "1";
        new MutationObserver(function () { quietIcons(button); })
          .observe(button, {childList: true, subtree: true, attributes: true, attributeFilter: ["title"]});
      }
    });
    // sphinxcontrib-bibtex writes the bibliography as role="list" whose entries carry the
    // deprecated role doc-biblioentry, which is not a list item (ARIA 1.2): make them list items.
    document.querySelectorAll("[role=list].citation-list > .citation").forEach(function (el) {
      el.setAttribute("role", "listitem");
    });
    // A region that scrolls must be reachable by keyboard to be scrolled (WCAG 2.1.1). Code
    // blocks scroll sideways at some widths, so every one is focusable; other boxes when they scroll.
    document.querySelectorAll(".highlight pre, .cell_output pre").forEach(function (el) {
      if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
    });
    document.querySelectorAll(".pst-scrollable-table-container, .cell_output .output, .table-wrapper, mjx-container[display=true]")
      .forEach(function (el) {
        var scrolls = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
        if (scrolls && !el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
      });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", fix);
  } else {
    fix();
  }
  window.addEventListener("load", fix);
  window.addEventListener("load", function () { window.setTimeout(fix, 300); });  // after the icon font's swap
})();

// Navigation at every width. The ☰ and "on this page" buttons work because the theme's second
// copy of them (in the top navbar) is switched off in _config.yml (`navbar_persistent: []`, which
// says why: pydata-sphinx-theme #2451). Below 992 px (☰) and 1200 px ("on this page") the theme
// opens each panel as a dialog; at 992 px and up, sphinx-book-theme's ☰ collapses the sidebar.
// What the theme lacks, and this adds: at 1200 px and up it hides the "on this page" button and
// keeps the page's contents beside the text for good; here the button stays (book.css) and
// collapses and restores that panel, as ☰ does the sidebar.
(function () {
  "use strict";
  var WIDE = "(min-width: 1200px)";
  function start() {
    var sidebar = document.getElementById("pst-secondary-sidebar");
    if (!sidebar) return;
    document.querySelectorAll(".bd-header-article .secondary-toggle").forEach(function (button) {
      button.addEventListener("click", function (event) {
        if (!window.matchMedia(WIDE).matches) return;  // narrower: the theme's dialog
        event.preventDefault();
        event.stopImmediatePropagation();  // capture phase: before the theme opens its dialog
        sidebar.classList.toggle("book-sidebar-hidden");
        button.blur();  // else its tooltip stays up over the next button
      }, true);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
