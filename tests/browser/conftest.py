"""Fixtures for the built-book browser tests; helpers, the allow-list and its reasons are in svbrowser.py."""
from __future__ import annotations

import functools
import http.server
import os
import threading

import pytest

from svbrowser import (CHROMIUM, CHROMIUM_ARGS, CURRENT_JS, PageLog, block_external, is_loopback, layout,
                       require_book, wait_until_rendered)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site() -> str:
    """Base URL of the built book served on 127.0.0.1 at a free port."""
    root = require_book()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install -y chromium` (never `playwright install`)",
                    pytrace=False)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)  # fresh profile
        yield b
        b.close()


def open_in(browser, site: str, contexts: list, path: str, width: int = 1300, height: int = 900,
            color_scheme: str = "light"):
    """Load a book page in a new browser context (appended to ``contexts``, which the caller closes) with every
    non-loopback request blocked and recorded; (page, log) once its widgets and math are drawn."""
    ctx = browser.new_context(viewport={"width": width, "height": height}, service_workers="block",
                              color_scheme=color_scheme)
    contexts.append(ctx)
    log = PageLog()
    block_external(ctx, log.external)
    ctx.add_init_script(layout.CANVAS_FONTS)  # each canvas records the smallest font it draws text with
    if CURRENT_JS:  # the pages as they will be once their notebooks run again (see svbrowser)
        layout.route_current_js(ctx)
    page = ctx.new_page()

    def on_console(msg):
        if msg.type == "error":
            url = (msg.location or {}).get("url", "")
            log.errors.append(f"console error: {msg.text} at {url}")
        elif msg.type == "warning" and "anywidget" in msg.text:
            log.errors.append(f"anywidget warning: {msg.text}")

    def on_page_error(err):
        log.errors.append(f"uncaught: {err}")

    def on_response(r):
        if r.status >= 400:
            log.failed.append(f"{r.status} {r.url}")

    def on_dialog(d):
        log.dialogs.append(d.message)
        d.dismiss()

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    page.on("dialog", on_dialog)
    page.on("request", lambda r: log.requests.append(r.url))
    page.on("response", on_response)
    page.on("requestfailed", lambda r: None if not is_loopback(r.url) else log.failed.append(
        f"{r.failure} {r.url}"))
    page.on("websocket", lambda ws: None if is_loopback(ws.url) else log.external.append(ws.url))
    page.goto(site + path, wait_until="load")
    wait_until_rendered(page)
    return page, log


@pytest.fixture
def open_page(browser, site):
    """open_page(path, width=1300, height=900, color_scheme="light") -> (page, log): a book page loaded for this
    test alone (see open_in)."""
    contexts = []
    yield functools.partial(open_in, browser, site, contexts)
    for ctx in contexts:
        ctx.close()


@pytest.fixture(scope="module")
def open_module_page(browser, site):
    """open_module_page(path, width=1300, height=900, color_scheme="light") -> (page, log): like open_page, for a
    page that several tests of one module use; it closes when the module's last test ends."""
    contexts = []
    yield functools.partial(open_in, browser, site, contexts)
    for ctx in contexts:
        ctx.close()


@pytest.fixture(scope="module")
def shared_page(request, browser, site):
    """(page, log) of the page ``request.param`` = (path, width), loaded once and shared by the tests of one module
    (parametrize them with ``indirect=True``; pytest 9 runs all of one page's tests together, in file order, even
    across parametrize lists, so each page loads once per module). Tests that only read the page come first; a test
    that clicks or types puts back what it changed and asserts it did, or is the last on its page (test_pages.py's
    docstring says which do what). Give every parameter of such a test through fixtures: a plain parameter in the same
    parametrize makes pytest load the page anew for each test (test_pages.py reads the path from
    ``request.node.callspec``). When the page's last test is done, its log must hold no console error, no failed
    request and no request off loopback: what a test that checked only its own part of the log, or came after the
    last check, would leave unseen."""
    path, width = request.param
    contexts = []
    page, log = open_in(browser, site, contexts, path, width=width)
    yield page, log
    left = [f"logged: {e}" for e in log.errors] + [f"request failed: {f}" for f in log.failed] + [
        f"request off loopback: {u}" for u in log.external]
    for ctx in contexts:
        ctx.close()
    assert not left, f"{path} at {width} px, by the end of its tests:\n" + "\n".join(left)


