"""Helpers for the built-book browser tests (fixtures in conftest.py): the book in _build/html is served on
127.0.0.1 and driven through Playwright with Debian's chromium.

Never `playwright install`: the browser is /usr/bin/chromium (`apt-get install chromium`). If the book is not built the
tests FAIL (not skip) and say to run `make book`. Set SEQVIZ_BOOK_HTML to test a book built elsewhere.

No console error is allowed on any page, and no failed request: the faults a stock Jupyter Book 1 page has (sphinx-thebe's
script twice, the theme mode, the favicon) are fixed where they are made (scripts/sphinx_book_a11y.py, _config.yml).
The page measurements (layout, fonts, axe-core) are scripts/check_layout.py's, shared with the command line.

A page shows the widget JS its notebook stored when it last ran. SEQVIZ_CURRENT_JS=1 serves every page with the
package's current widget modules instead (scripts/check_layout.py --current-js): the book as it will be once its
notebooks run again, to test a change to static/*.js before re-executing them. The widget tests that render their own
widgets (gallery.py) always use the current JS.
"""
from __future__ import annotations

import base64
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = Path(os.environ.get("SEQVIZ_BOOK_HTML", ROOT / "_build" / "html")).resolve()
CURRENT_JS = os.environ.get("SEQVIZ_CURRENT_JS", "") not in ("", "0")

_spec = importlib.util.spec_from_file_location("check_layout", ROOT / "scripts" / "check_layout.py")
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)
CHROMIUM, CHROMIUM_ARGS = layout.CHROMIUM, layout.CHROMIUM_ARGS
WIDGET_VIEWS, wait_until_rendered = layout.WIDGET_VIEWS, layout.wait_until_rendered

XSS = "<img src=x onerror=alert(1)>"


def book_pages(*, slides: bool = True, redirect: bool = True) -> list[str]:
    """Every HTML page of the built book (paths relative to its root), search and index pages excluded; by default
    with the slide decks and the root index.html (the pages that must load offline)."""
    return layout.book_pages(BOOK, slides=slides, redirect=redirect)


def reading_pages() -> list[str]:
    """The pages a reader reads: every page but the slide decks and the root redirect."""
    return layout.book_pages(BOOK)


def require_book() -> Path:
    if not (BOOK / "index.html").is_file():
        pytest.fail(f"the built book is missing ({BOOK}/index.html not found): run `make book` first "
                    f"(or set SEQVIZ_BOOK_HTML to a built book's html folder)", pytrace=False)
    return BOOK


@dataclass
class PageLog:
    """What one page did: console errors, requests leaving loopback, failed requests (a 4xx/5xx answer or none),
    dialogs."""

    errors: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def is_loopback(url: str) -> bool:
    u = urlparse(url)
    if u.scheme in ("data", "blob", "about", "javascript"):
        return True
    return u.hostname in ("127.0.0.1", "localhost", "::1")


def block_external(ctx, external: list) -> None:
    """Let a browser context's loopback requests through; abort every other one and record its URL in ``external``
    (the book and the widgets must work with no network)."""
    def route(r):
        if is_loopback(r.request.url):
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)


def embedded_models(page) -> dict[str, dict]:
    """{model_id: {"state": ..., "buffers": {name: bytes}}} of the seqviz widgets embedded in the page."""
    raw = page.evaluate(
        """() => JSON.parse(document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]')
                 .textContent).state""")
    out = {}
    for mid, m in raw.items():
        st = m["state"]
        if not str(st.get("_anywidget_id", "")).startswith("seqviz.widgets."):
            continue
        bufs = {b["path"][0]: base64.b64decode(b["data"]) for b in m.get("buffers", [])}
        out[mid] = {"state": st, "buffers": bufs, "kind": st["_anywidget_id"].rsplit(".", 1)[1]}
    return out


# Renders a widget's ES module (state._esm) into `el` with a minimal model that behaves like the kernel-backed one:
# get/set/on/off/save_changes, and `set` fires "change:<name>". This is how a trait set from Python reaches the view,
# so tests can check the view listens. Returns a handle id (window.__svMocks[id] = {model, el, mod, cleanup, ...}).
_MOUNT = """async (state, el) => {
  const listeners = {};
  const model = {
    get: (k) => state[k],
    set: (k, v) => { state[k] = v; (listeners["change:" + k] || []).slice().forEach((f) => f()); },
    on: (ev, f) => { (listeners[ev] = listeners[ev] || []).push(f); },
    off: (ev, f) => { listeners[ev] = (listeners[ev] || []).filter((g) => g !== f); },
    save_changes: () => {}, send: () => {}, widget_manager: null,
  };
  const url = URL.createObjectURL(new Blob([state._esm], { type: "text/javascript" }));
  const mod = await import(url);
  window.__svMocks = window.__svMocks || [];
  const id = window.__svMocks.length;
  const cleanup = await mod.default.render({ model, el });
  window.__svMocks.push({ model, el, mod, cleanup, listeners });
  return id;
}"""

# Renders a widget embedded in the page (its saved state, with `overrides`) into a fresh element at the top of the body.
MOCK_RENDER = """async ({modelId, overrides}) => {
  const s = JSON.parse(document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]').textContent);
  const m = s.state[modelId];
  const state = Object.assign({}, m.state);
  for (const b of (m.buffers || [])) {
    const bin = atob(b.data);
    const u8 = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    state[b.path[0]] = new DataView(u8.buffer);
  }
  Object.assign(state, overrides || {});
  const el = document.createElement("div");
  el.id = "sv-mock-" + (window.__svMocks || []).length;
  document.body.prepend(el);
  return await (""" + _MOUNT + """)(state, el);
}"""

# Replaces the page's article with widgets made in Python (their states, bytes as {"__b64": ...}), each in the markup
# of a notebook cell's widget output, rendered with the package's current JS and CSS: the test's own widgets, laid
# out in the book's real column. Returns the handles, in order.
GALLERY = """async ({specs, css}) => {
  const art = document.querySelector("article.bd-article");
  art.replaceChildren();
  const style = document.createElement("style");
  style.textContent = css;
  document.head.appendChild(style);
  const out = [];
  for (const spec of specs) {
    const state = {};
    for (const [k, v] of Object.entries(spec.state)) {
      if (v && typeof v === "object" && "__b64" in v) {
        const bin = atob(v.__b64);
        const u8 = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
        state[k] = new DataView(u8.buffer);
      } else state[k] = v;
    }
    const cell = document.createElement("div");
    cell.className = "cell docutils container";
    cell.dataset.gallery = spec.name;
    const output = document.createElement("div");
    output.className = "cell_output docutils container";
    const sub = document.createElement("div");
    sub.className = "widget-subarea";
    const el = document.createElement("div");
    sub.appendChild(el); output.appendChild(sub); cell.appendChild(output); art.appendChild(cell);
    out.push(await (""" + _MOUNT + """)(state, el));
  }
  await new Promise((r) => setTimeout(r, 50));
  return out;
}"""


def widget_state(widget) -> dict:
    """A widget's synced traits as JSON, bytes as {"__b64": base64} (what the page's saved state holds)."""
    out = {}
    for k, v in widget.get_state().items():
        if isinstance(v, (bytes, bytearray, memoryview)):
            v = {"__b64": base64.b64encode(bytes(v)).decode("ascii")}
        out[k] = v
    return out


def show_gallery(page, widgets: dict) -> dict[str, int]:
    """Render `widgets` ({name: widget}) into the page's text column with the package's current JS; {name: handle}."""
    from seqviz.widgets._common import CSS

    specs = [{"name": n, "state": widget_state(w)} for n, w in widgets.items()]
    handles = page.evaluate(GALLERY, {"specs": specs, "css": CSS.read_text(encoding="utf-8")})
    return dict(zip(widgets, handles))
