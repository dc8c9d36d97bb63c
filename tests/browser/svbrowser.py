"""Helpers for the built-book browser tests (fixtures in conftest.py): the book in _build/html is served on
127.0.0.1 and driven through Playwright with Debian's chromium.

Never `playwright install`: the browser is /usr/bin/chromium (`apt-get install chromium`). If the book is not built the
tests FAIL (not skip) and say to run `make book`. Set SEQVIZ_BOOK_HTML to test a book built elsewhere.

Console allow-list (anything else logged as an error fails the page):
- page error "Identifier 'THEBE_JS_URL' has already been declared": sphinx-thebe's inline script runs twice on every
  stock Jupyter Book 1 page;
- "Got invalid theme mode: . Resetting to auto.": pydata-sphinx-theme with a fresh browser profile;
- a 404 for /favicon.ico: Chromium asks for a favicon and the book sets none.
"""
from __future__ import annotations

import base64
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = Path(os.environ.get("SEQVIZ_BOOK_HTML", ROOT / "_build" / "html")).resolve()
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
NOT_PAGES = {"search.html", "genindex.html", "py-modindex.html"}
NOT_PAGE_DIRS = {"_static", "_sources", "_images", "vendor", "_downloads", "jupyter_execute"}

ALLOWED_PAGE_ERRORS = [re.compile(r"Identifier 'THEBE_JS_URL' has already been declared")]
ALLOWED_CONSOLE_ERRORS = [re.compile(r"^Got invalid theme mode: \. Resetting to auto\.$")]
ALLOWED_404 = {"/favicon.ico"}

XSS = "<img src=x onerror=alert(1)>"


def book_pages() -> list[str]:
    """Every HTML page of the built book (paths relative to its root), search and index pages excluded."""
    if not (BOOK / "index.html").is_file():
        return []
    out = []
    for f in sorted(BOOK.rglob("*.html")):
        rel = f.relative_to(BOOK)
        if rel.parts[0] in NOT_PAGE_DIRS or rel.name in NOT_PAGES:
            continue
        out.append(rel.as_posix())
    return out


def require_book() -> Path:
    if not (BOOK / "index.html").is_file():
        pytest.fail(f"the built book is missing ({BOOK}/index.html not found): run `make book` first "
                    f"(or set SEQVIZ_BOOK_HTML to a built book's html folder)", pytrace=False)
    return BOOK


@dataclass
class PageLog:
    """What one page did: console errors outside the allow-list, requests leaving loopback, dialogs."""

    errors: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def is_loopback(url: str) -> bool:
    u = urlparse(url)
    if u.scheme in ("data", "blob", "about", "javascript"):
        return True
    return u.hostname in ("127.0.0.1", "localhost", "::1")


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
    page.wait_for_timeout(100)  # let the coalesced (microtask) redraws settle


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


# Renders a widget's own ES module (taken from the page's embedded state) into a fresh element with a minimal model
# that behaves like the kernel-backed one: get/set/on/off/save_changes, and `set` fires "change:<name>". This is how
# a trait set from Python reaches the view, so tests can check the view listens. Returns a handle id.
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
  const el = document.createElement("div");
  window.__svMocks = window.__svMocks || [];
  const id = window.__svMocks.length;
  el.id = "sv-mock-" + id;
  document.body.prepend(el);
  const cleanup = await mod.default.render({ model, el });
  window.__svMocks.push({ model, el, mod, cleanup, listeners });
  return id;
}"""
