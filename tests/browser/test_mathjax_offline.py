"""MathJax as the book serves it: without its speech/explorer parts (a11y/, sre/) and the SVG output, which only its
context menu would load (scripts/vendor_js.py leaves them out and switches those menu items off). Checked in the real
browser: the items are greyed out, clicking them loads nothing, a choice saved on an earlier visit cannot make the
page request them, and math is still typeset with no console error."""
from __future__ import annotations

import json

from svbrowser import BOOK, wait_until_rendered

PAGE = "book/visual_tools.html"
TRIMMED = ("vendor/mathjax/a11y/", "vendor/mathjax/sre/", "vendor/mathjax/ui/", "vendor/mathjax/output/svg")
MENU_ITEMS_OFF = [["Accessibility", "Activate"], ["Accessibility", "Collapsible"], ["Accessibility", "AutoCollapse"],
                  ["Settings", "Renderer", "SVG"]]


def trimmed_requests(log) -> list[str]:
    return [u for u in log.requests if any(t in u for t in TRIMMED)]


def menu_settings(page) -> dict:
    return page.evaluate("() => MathJax.startup.document.menu.settings")


def test_the_vendored_mathjax_has_no_speech_module_and_configures_its_menu():
    versions = json.loads((BOOK / "vendor" / "versions.json").read_text())
    assert versions["mode"] == "offline", "the book was built without node_modules (CDN mode): run `npm ci`"
    mj = BOOK / "vendor" / "mathjax"
    for part in ("a11y", "sre", "ui", "output/svg.js"):
        assert not (mj / part).exists(), f"{part} is vendored again; no page uses it"
    assert (mj / "tex-mml-chtml.js").read_text()[:200].startswith("/* Added by seqviz's scripts/vendor_js.py")
    assert sum(f.stat().st_size for f in mj.rglob("*") if f.is_file()) < 3.5e6


def test_menu_items_that_would_load_trimmed_parts_are_off_and_load_nothing(open_page):
    page, log = open_page(PAGE)
    assert page.locator("mjx-container").count() >= 10
    disabled = page.evaluate("""paths => paths.map(p => {
        const m = MathJax.startup.document.menu.menu;
        const item = m.findID(...p);
        return item ? item.disabled : "missing"; })""", MENU_ITEMS_OFF)
    assert disabled == [True] * len(MENU_ITEMS_OFF), dict(zip(map("/".join, MENU_ITEMS_OFF), disabled))
    # the reader's way in: right-click a formula, Accessibility > Activate (the explorer, which needs speech)
    formula = page.locator("mjx-container").first
    formula.scroll_into_view_if_needed()
    formula.click(button="right")
    page.locator(".CtxtMenu_MenuItem", has_text="Accessibility").first.hover()
    activate = page.locator(".CtxtMenu_MenuItem", has_text="Activate").first
    activate.wait_for(state="visible")
    assert activate.get_attribute("aria-disabled") == "true"
    activate.click(force=True)
    page.wait_for_timeout(800)
    page.keyboard.press("Escape")
    s = menu_settings(page)
    assert (s["explorer"], s["collapsible"], s["renderer"]) == (False, False, "CHTML")
    assert s["assistiveMml"] is True  # hidden MathML for screen readers stays on
    assert trimmed_requests(log) == []
    assert log.errors == [] and log.external == []


def test_a_saved_explorer_or_svg_choice_cannot_make_the_page_load_them(open_page):
    page, log = open_page(PAGE)
    page.evaluate("""() => localStorage.setItem("MathJax-Menu-Settings",
        JSON.stringify({explorer: true, collapsible: true, autocollapse: true, renderer: "SVG", zoom: "Click"}))""")
    page.reload(wait_until="load")
    wait_until_rendered(page)
    page.wait_for_timeout(500)
    s = menu_settings(page)
    assert (s["explorer"], s["collapsible"], s["renderer"], s["zoom"]) == (False, False, "CHTML", "Click")
    saved = json.loads(page.evaluate("() => localStorage.getItem('MathJax-Menu-Settings')"))
    assert saved == {"zoom": "Click"}  # the reader's other choices are kept
    assert page.locator("mjx-container").count() >= 10 and page.locator("mjx-merror").count() == 0
    assert trimmed_requests(log) == []
    assert log.errors == [] and log.external == []
