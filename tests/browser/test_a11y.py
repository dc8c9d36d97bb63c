"""axe-core (pinned in package.json, injected from node_modules, offline) finds no critical and no serious WCAG 2.0/2.1
A or AA violation (tags wcag2a, wcag2aa, wcag21a, wcag21aa) on any page of the built book, nor on any of the package's
widgets after a reader has changed its main control by keyboard (issue 33). axe cannot see inside a canvas: the
widgets' text alternatives and keyboard use are tested in test_keyboard.py. Every page is audited in
test_pages.py, on the one load of it that the other still-page checks share."""
from __future__ import annotations

import pytest

from gallery import MAIN_CONTROL, widgets
from svbrowser import layout, reading_pages, show_gallery

PAGES = reading_pages()
BLOCKING = ("critical", "serious")


def blocking(violations: list[dict]) -> list[str]:
    return [f"{v['id']} ({v['impact']}, {len(v['nodes'])}x): {v['help']}; first: {v['nodes'][0]['target']} "
            f"{v['nodes'][0]['html']}" for v in violations if v["impact"] in BLOCKING]


def test_axe_is_the_pinned_one_and_runs_offline(open_page):
    import json

    pinned = json.loads((layout.ROOT / "package.json").read_text())
    deps = {**pinned.get("dependencies", {}), **pinned.get("devDependencies", {})}
    installed = json.loads((layout.AXE.parent / "package.json").read_text())["version"]
    assert deps.get("axe-core", "").lstrip("^~=") == installed, (deps.get("axe-core"), installed)
    page, log = open_page("book/intro.html")
    layout.run_axe(page)
    assert page.evaluate("() => axe.version") == installed and log.external == []


def test_axe_finds_a_planted_violation(open_page):
    """The audit is live: an image without alt text and low-contrast text are found."""
    page, _ = open_page("book/notation.html")
    page.evaluate("""() => { const a = document.querySelector('article');
        a.insertAdjacentHTML('afterbegin', '<img src="data:," id="sv-planted"><p id="sv-grey" style="color:#bbb">faint</p>'); }""")
    found = {v["id"] for v in layout.run_axe(page)}
    assert {"image-alt", "color-contrast"} <= found


DARK_PAGES = [p for p in ("book/measured.html", "book/visual_tools.html", "notebooks/05_attention.html",
                           "notebooks/08_summarization.html") if p in PAGES]


@pytest.mark.parametrize("path", DARK_PAGES or ["(book not built: run `make book`)"])
def test_dark_mode_pages_with_tables_and_widgets(open_page, path):
    """The theme follows a dark system setting; its outputs keep a light background, so whatever the theme colours
    for the dark page (table captions, headings) must not end up light on light."""
    page, _ = open_page(path, color_scheme="dark")
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    problems = blocking(layout.run_axe(page))
    assert not problems, f"{path} (dark):\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("width, scheme", [(1280, "light"), (390, "light"), (1280, "dark")])
def test_no_critical_or_serious_violation_in_any_widget_after_a_change(open_page, width, scheme):
    """At both widths, and in the theme's dark mode (a reader whose system is dark gets it: default_mode auto)."""
    page, log = open_page("book/notation.html", width=width, color_scheme=scheme)
    assert page.evaluate("() => document.documentElement.dataset.theme") == scheme
    made = widgets()
    show_gallery(page, made)
    roots = page.locator(".seqviz")
    for k, name in enumerate(made):
        selector, keys, attr = MAIN_CONTROL[name]
        root = roots.nth(k)
        before = root.get_attribute(f"data-{attr_name(attr)}")
        root.locator(selector).first.focus()
        for key in keys:
            page.keyboard.press(key)
        page.wait_for_timeout(50)
        assert root.get_attribute(f"data-{attr_name(attr)}") != before, f"{name}: {keys} changed nothing"
    # one audit of every changed widget (a change to one widget leaves the others as they were), each violation's
    # nodes named by the widget they are in
    problems = [f"{list(made)[k]}: {p}" for k, found in violations_by_widget(page).items() for p in blocking(found)]
    assert not problems, "\n".join(problems)
    assert log.errors == []


def violations_by_widget(page) -> dict[int, list[dict]]:
    """axe-core's violations in the page's seqviz widgets, one audit for them all: {widget's index among the page's
    .seqviz roots: its violations, each with only the nodes inside that widget}."""
    page.evaluate("() => document.querySelectorAll('.seqviz').forEach((e, k) => e.setAttribute('data-audit', k))")
    return {int(k): vs for k, vs in sorted(layout.axe_by_owner(page, ".seqviz", "data-audit").items(),
                                           key=lambda kv: int(kv[0]))}


def attr_name(camel: str) -> str:
    """dataset name -> attribute name (dModel -> d-model)."""
    return "".join("-" + c.lower() if c.isupper() else c for c in camel)
