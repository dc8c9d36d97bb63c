"""What on the built book is wider than its column, and what axe-core finds, page by page (issue 33).

    python scripts/check_layout.py [--html DIR] [--width 1280 --width 390] [PAGE ...]   # outputs wider than the column
    python scripts/check_layout.py --axe [--json FILE] [PAGE ...]                       # axe-core's WCAG 2.1 AA audit
    python scripts/check_layout.py --current-js ...     # the same, with the package's widget JS, not the stored one

The book in DIR (default ``_build/html``; build your own copy with ``jupyter-book build . --path-output /tmp/x``) is
served on 127.0.0.1 and opened in Debian's chromium (Playwright, never ``playwright install``), offline. For every
page and width it prints each **text output** (a printed line, a table, an image) and each **widget** whose content
is wider than the text column (688 px at a 1,280 px window, about 350 px at 390 px), with the chapter cell it comes
from (its position among the page's cells, and its first line of code or of output), and any widget label drawn
under 10 px. A widget may hold a deliberate scroller (overflow auto, ``tabindex="0"`` and an accessible name): its
box counts, not what scrolls inside it. It also lists what fits only because the book's CSS wraps it (a printed line
longer than the column: shorten it) or because it scrolls sideways in a focusable box (a wide table or widget),
with its full width. Exit status 1 when anything is too wide (or, with ``--axe``, when axe finds a critical or
serious violation).

A notebook stores each widget's JS when it runs, so a page shows the JS of its last run. ``--current-js`` swaps in
the package's current widget modules and CSS as the page loads (the built files are not changed): how the page will
look once its notebook runs again.

The browser tests (tests/browser/test_layout.py, test_a11y.py) use the same measurements.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import re
import sys
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
NOT_PAGES = {"search.html", "genindex.html", "py-modindex.html"}
NOT_PAGE_DIRS = {"_static", "_sources", "_images", "vendor", "_downloads", "jupyter_execute", "slides"}
WIDTHS = (1280, 390)
MIN_LABEL_PX = 10  # the smallest font a widget may draw a label with, at a 1,280 px window
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"  # pinned in package.json (npm ci)
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def book_pages(html: Path, *, slides: bool = False, redirect: bool = False) -> list[str]:
    """Every HTML page of the built book (paths relative to its root), search and index pages excluded; the slide
    decks (slides/) and the root index.html (a redirect to the first page) only when asked."""
    if not (html / "index.html").is_file():
        return []
    out = []
    for f in sorted(html.rglob("*.html")):
        rel = f.relative_to(html)
        if rel.name in NOT_PAGES or (rel.parts[0] in NOT_PAGE_DIRS and not (slides and rel.parts[0] == "slides")):
            continue
        if rel.as_posix() == "index.html" and not redirect:
            continue
        out.append(rel.as_posix())
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(html: Path):
    """Serve ``html`` on 127.0.0.1 at a free port; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=html))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


# Widget views embedded in the page: how many have their model in the saved widget state (the html-manager can only
# render those; a view without state is a blank output in the book), and how many are seqviz widgets.
WIDGET_VIEWS = """() => {
  const s = document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  const state = s ? JSON.parse(s.textContent).state : {};
  const out = { total: 0, with_state: 0, seqviz: 0 };
  for (const v of document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')) {
    out.total++;
    const m = state[JSON.parse(v.textContent).model_id];
    if (!m) continue;
    out.with_state++;
    if (String(m.state._anywidget_id || "").startsWith("seqviz.widgets.")) out.seqviz++;
  }
  return out;
}"""


def wait_until_rendered(page, timeout: float = 30_000) -> None:
    """Wait until every embedded widget view that has saved state has rendered and MathJax has typeset the page."""
    page.wait_for_load_state("networkidle")
    views = page.evaluate(WIDGET_VIEWS)
    if views["with_state"]:
        page.wait_for_function(
            """n => Array.from(document.querySelectorAll('.widget-subarea'))
                     .filter(s => s.children.length > 0).length >= n""",
            arg=views["with_state"], timeout=timeout)
        page.wait_for_function("n => document.querySelectorAll('.seqviz').length >= n", arg=views["seqviz"],
                               timeout=timeout)
    if page.locator(".math").count():
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=timeout)
        page.evaluate("() => MathJax.startup.promise")
    page.wait_for_timeout(150)  # let the coalesced (microtask) redraws and the widgets' resize observers settle


# Added to every page before its scripts run: each canvas remembers the smallest font size it drew text with (the DOM
# cannot see inside a canvas), so a test can hold a widget's own claim (data-min-font) against what it really drew.
CANVAS_FONTS = """(() => {
  const P = CanvasRenderingContext2D.prototype;
  for (const name of ["fillText", "strokeText"]) {
    const orig = P[name];
    P[name] = function (...args) {
      const m = /(\\d+(?:\\.\\d+)?)px/.exec(this.font || "");
      const c = this.canvas;
      if (m && c && String(args[0]).trim() !== "") {
        const px = parseFloat(m[1]);
        c.__svMinFont = Math.min(c.__svMinFont === undefined ? Infinity : c.__svMinFont, px);
      }
      return orig.apply(this, args);
    };
  }
})();"""

# Measure every cell output of the page against the text column. A printed line is measured by its <pre>'s scroll
# width; a widget or HTML output by the farthest right edge of anything it lays out, where a deliberate scroller
# (overflow auto/scroll, tabindex=0, an accessible name) counts by its own box. Also returns, per seqviz widget, the
# smallest font of its visible text (DOM text and canvas text) and what the widget says it drew (data-min-font).
LAYOUT = """() => {
  const art = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  const acs = getComputedStyle(art);
  const ar = art.getBoundingClientRect();
  const colLeft = ar.left + parseFloat(acs.paddingLeft) + parseFloat(acs.borderLeftWidth);
  const colWidth = art.clientWidth - parseFloat(acs.paddingLeft) - parseFloat(acs.paddingRight);
  const colRight = colLeft + colWidth;
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 || r.height > 0; };
  const deliberate = (e) => {
    const s = getComputedStyle(e);
    return /(auto|scroll)/.test(s.overflowX) && e.getAttribute("tabindex") === "0"
      && Boolean(e.getAttribute("aria-label") || e.getAttribute("aria-labelledby"));
  };
  const extent = (e) => {
    if (!shown(e)) return -Infinity;
    const r = e.getBoundingClientRect();
    const s = getComputedStyle(e);
    if (deliberate(e) || /(hidden|clip)/.test(s.overflowX)) return r.right; // what it clips is not seen
    let right = r.right;
    if (e.scrollWidth > e.clientWidth + 1 && s.display !== "inline") right = Math.max(right, r.left + e.scrollWidth);
    for (const c of e.children) right = Math.max(right, extent(c));
    return right;
  };
  const cells = Array.from(document.querySelectorAll("div.cell"));
  const firstLine = (t) => (t || "").split("\\n").map((x) => x.trim()).find((x) => x) || "";
  const where = (e) => {
    const cell = e.closest("div.cell");
    const input = cell && cell.querySelector(".cell_input pre");
    return { cell: cell ? cells.indexOf(cell) : -1, input: firstLine(input && input.textContent).slice(0, 90),
      tags: cell ? Array.from(cell.classList).filter((c) => c.startsWith("tag_")).map((c) => c.slice(4)) : [] };
  };
  const items = [];
  const seen = new Set();
  const add = (e, kind, right, extra) => {
    const w = Math.round(right - colLeft);
    const text = firstLine(e.innerText).slice(0, 90);
    items.push(Object.assign({ kind, width: w, column: Math.round(colWidth), over: w > colWidth + 1, text }, where(e),
      extra || {}));
  };
  // a box inside e that scrolls sideways on purpose and has more than it shows: its full width, else 0
  const scrolled = (e) => Math.max(0, ...Array.from(e.querySelectorAll("[tabindex='0']"))
    .filter((b) => deliberate(b) && b.scrollWidth > b.clientWidth + 1)
    .map((b) => Math.round(b.getBoundingClientRect().left + b.scrollWidth - colLeft)));
  for (const pre of document.querySelectorAll(".cell_output pre, .cell_output .output.text_plain, .cell_output .output.stream")) {
    const p = pre.tagName === "PRE" ? pre : pre.querySelector("pre");
    if (!p || seen.has(p) || !shown(p)) continue;
    seen.add(p);
    const r = p.getBoundingClientRect();
    // how wide its longest line is unwrapped: the book's CSS wraps printed lines, which a chapter should shorten
    const ws = p.style.whiteSpace;
    p.style.whiteSpace = "pre";
    const natural = Math.round(r.left + p.scrollWidth - colLeft);
    p.style.whiteSpace = ws;
    if (deliberate(p)) add(p, "text", r.right, { natural, scrolls: natural > colWidth + 1 }); // scrolls as a block
    else add(p, "text", Math.max(r.right, r.left + p.scrollWidth), { natural, wraps: natural > colWidth + 1 });
  }
  for (const o of document.querySelectorAll(".cell_output .output.text_html, .cell_output img")) {
    if (!shown(o) || o.closest(".widget-subarea")) continue;
    const full = scrolled(o);
    add(o, o.tagName === "IMG" ? "image" : "html", extent(o), { natural: full, scrolls: full > colWidth + 1 });
  }
  const widgets = [];
  for (const sub of document.querySelectorAll(".cell_output .widget-subarea")) {
    if (!shown(sub) || sub.parentElement.closest(".widget-subarea")) continue;
    for (const c of sub.children) {
      const full = scrolled(c);
      add(c, "widget", extent(c), { natural: full, scrolls: full > colWidth + 1 });
    }
  }
  for (const root of document.querySelectorAll(".seqviz")) {
    if (!shown(root)) continue;
    let min = Infinity;
    const walk = (e) => {
      const s = getComputedStyle(e);
      if (s.display === "none" || s.visibility === "hidden") return;
      if (e.tagName === "CANVAS" && e.__svMinFont !== undefined) min = Math.min(min, e.__svMinFont);
      if (Array.from(e.childNodes).some((n) => n.nodeType === 3 && n.data.trim()) && shown(e)) {
        min = Math.min(min, parseFloat(s.fontSize));
      }
      for (const c of e.children) walk(c);
    };
    walk(root);
    const claimed = root.dataset.minFont === undefined ? null : parseFloat(root.dataset.minFont);
    const kind = (root.className.match(/sv-[a-z]+/) || [""])[0];
    widgets.push(Object.assign({ kind, minFont: Number.isFinite(min) ? min : null, claimed }, where(root)));
  }
  return { column: Math.round(colWidth), viewport: window.innerWidth, items, widgets };
}"""


# the built page's saved widget state, and the widget module file of each seqviz widget class
_STATE = re.compile(r'(<script type="application/vnd\.jupyter\.widget-state\+json">)(.*?)(</script>)', re.S)
_MODULES = {"attention": "attention.js", "attention_steps": "attention_steps.js", "beam_tree": "beam_tree.js",
            "lstm_gates": "lstm_gates.js", "next_token": "next_token.js", "positional": "positional.js",
            "quiz": "quiz.js"}


def with_current_js(html: str) -> str:
    """A built page's HTML with every seqviz widget's saved ES module and CSS replaced by the package's current ones
    (what the page shows once its notebook is executed again)."""
    from seqviz.widgets._common import CSS, esm

    def swap(m):
        state = json.loads(m.group(2))
        for model in state.get("state", {}).values():
            st = model.get("state", {})
            parts = str(st.get("_anywidget_id", "")).split(".")
            if parts[:2] == ["seqviz", "widgets"] and len(parts) == 4 and parts[2] in _MODULES:
                st["_esm"] = esm(_MODULES[parts[2]])
                st["_css"] = CSS.read_text(encoding="utf-8")
        return m.group(1) + json.dumps(state).replace("</", "<\\/") + m.group(3)

    return _STATE.sub(swap, html, count=1)


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def route_current_js(ctx) -> None:
    """Serve every HTML page of the context with the package's current widget JS (see with_current_js)."""
    def handle(route):
        response = route.fetch()
        route.fulfill(response=response, body=with_current_js(response.text()))

    ctx.route("**/*.html", handle)


def open_page(browser, url: str, width: int, height: int = 900, current_js: bool = False):
    """A fresh context at ``width`` with canvas fonts recorded and every non-loopback request refused."""
    from urllib.parse import urlparse

    ctx = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
    ctx.add_init_script(CANVAS_FONTS)
    ctx.route("**/*", lambda r: r.continue_() if urlparse(r.request.url).hostname in ("127.0.0.1", None)
              else r.abort())
    if current_js:
        route_current_js(ctx)
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    wait_until_rendered(page)
    return ctx, page


def measure(page) -> dict:
    """The page's outputs and widgets against its column (see LAYOUT)."""
    return page.evaluate(LAYOUT)


def load_axe(page) -> None:
    """Inject the pinned axe-core (node_modules, offline) into ``page`` unless it is there."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        if not AXE.is_file():
            raise FileNotFoundError(f"{AXE} is missing: run `npm ci` (axe-core is pinned in package.json)")
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))


def run_axe(page, context=None, owner: str | None = None) -> list[dict]:
    """axe-core's violations (WCAG 2.0/2.1 A and AA rules) on the page, or on ``context`` (a CSS selector: every
    element it matches). With ``owner`` (an attribute name) each node also says whose it is: ``owner`` is that
    attribute's value on the node's nearest element that has it (None if none), so that one run over several widgets
    (each run costs about a second of building the page's tree) tells their violations apart."""
    load_axe(page)
    return page.evaluate(
        """async ([ctx, tags, owner]) => {
             const r = await axe.run(ctx ? document.querySelectorAll(ctx) : document,
                                     {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"],
                                      elementRef: !!owner});
             const whose = (e) => { const o = e && e.closest(`[${owner}]`); return o ? o.getAttribute(owner) : null; };
             return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                            nodes: v.nodes.map(n => Object.assign({target: n.target.join(" "),
                                                                                   html: n.html.slice(0, 160)},
                                                                                  owner ? {owner: whose(n.element)}
                                                                                        : {}))}));
           }""", [context, AXE_TAGS, owner])



def axe_by_owner(page, context: str, owner: str) -> dict[str | None, list[dict]]:
    """:func:`run_axe` over ``context`` with ``owner``, grouped by whose nodes they are: {the ``owner`` attribute's
    value (None: no element with it): the violations with nodes there, each with only those nodes}."""
    out: dict[str | None, list[dict]] = {}
    for v in run_axe(page, context, owner=owner):
        for who in dict.fromkeys(n["owner"] for n in v["nodes"]):
            out.setdefault(who, []).append({**v, "nodes": [n for n in v["nodes"] if n["owner"] == who]})
    return out

def _print_layout(path: str, width: int, m: dict) -> int:
    """Print what is too wide (an error), and what only fits because it wraps or scrolls (to shorten)."""
    over = [i for i in m["items"] if i["over"]]
    small = [w for w in m["widgets"] if width >= 1280 and w["minFont"] is not None and w["minFont"] < MIN_LABEL_PX]
    soft = [i for i in m["items"] if not i["over"] and (i.get("wraps") or i.get("scrolls"))]
    if over or small or soft:
        print(f"{path} at {width} px (column {m['column']} px):")

    def line(i, what):
        tags = f" [{', '.join(i['tags'])}]" if i["tags"] else ""
        origin = f"code `{i['input']}`" if i["input"] else f"output `{i['text']}`"
        print(f"  cell {i['cell']}{tags} {i['kind']} {what}: {origin}")

    for i in over:
        line(i, f"{i['width']} px, TOO WIDE")
    for i in soft:
        line(i, f"{i['natural']} px, {'wraps' if i.get('wraps') else 'scrolls sideways'}")
    for w in small:
        print(f"  cell {w['cell']} widget {w['kind']}: smallest label {w['minFont']} px (< {MIN_LABEL_PX} px)")
    return len(over) + len(small)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="*", help="pages relative to the html folder (default: every page)")
    ap.add_argument("--html", type=Path, default=ROOT / "_build" / "html", help="the built book's html folder")
    ap.add_argument("--width", type=int, action="append", help="window widths (default: 1280 and 390)")
    ap.add_argument("--axe", action="store_true", help="run axe-core instead of the layout check")
    ap.add_argument("--json", type=Path, help="also write the full results to this JSON file")
    ap.add_argument("--current-js", action="store_true",
                    help="show the widgets with the package's current JS, not the JS the notebooks stored")
    args = ap.parse_args(argv)
    html = args.html.resolve()
    pages = args.pages or book_pages(html)
    if not pages:
        ap.error(f"no built book in {html}: build it first (jupyter-book build . --path-output /tmp/book)")
    widths = args.width or ([1280] if args.axe else list(WIDTHS))
    from playwright.sync_api import sync_playwright

    results, bad = {}, 0
    totals = Counter()
    with serve(html) as base, sync_playwright() as p:
        browser = launch(p)
        for path in pages:
            for width in widths:
                ctx, page = open_page(browser, base + path, width, current_js=args.current_js)
                if args.axe:
                    v = run_axe(page)
                    results[f"{path}@{width}"] = v
                    for x in v:
                        totals[(x["impact"], x["id"])] += len(x["nodes"])
                        bad += x["impact"] in ("critical", "serious")
                    if v:
                        print(f"{path}: " + ", ".join(f"{x['id']} ({x['impact']}) x{len(x['nodes'])}" for x in v))
                else:
                    m = measure(page)
                    results[f"{path}@{width}"] = m
                    n = _print_layout(path, width, m)
                    totals[width] += sum(i["over"] for i in m["items"])
                    totals[(width, "soft")] += sum(bool(i.get("wraps") or i.get("scrolls")) and not i["over"]
                                                   for i in m["items"])
                    bad += n
                ctx.close()
        browser.close()
    if args.axe:
        print("\naxe-core violations (nodes) per rule, every page:")
        for (impact, rule), n in sorted(totals.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
            print(f"  {impact:9s} {rule:32s} {n}")
        if not totals:
            print("  none")
    else:
        for width in widths:
            print(f"{totals[width]} outputs or widgets wider than the column at {width} px; "
                  f"{totals[(width, 'soft')]} more fit only because they wrap or scroll sideways")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
