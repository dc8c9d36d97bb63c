"""Every page a reader reads, loaded once per window width and held to everything a still page must do:

- it loads offline: no console error, no failed request, no request off loopback, every embedded widget rendered,
  the math typeset by the vendored MathJax (what test_book_pages.py checks for the slide decks and the root page);
- every output and widget fits its column at 1,280 and 390 px, and each widget's claim of its smallest font is what it
  drew (issue 33; the rules and the gallery's widgets: test_layout.py);
- displayed equations and printed outputs read whole at both widths (issue 39; the rules: test_reading.py);
- axe-core finds no critical or serious WCAG 2.1 A/AA violation (issue 33; the rules: test_a11y.py).

These tests only read the page, so one loaded page serves them all (the module-scoped ``shared_page`` fixture of
conftest.py): a chapter page costs about 2.5 s of CPU to load and draw, and loading each page once instead of once per
test saves about 80 loads a run (issue 40, item 7). A test that clicks or types opens its own page elsewhere."""
from __future__ import annotations

import pytest

from svbrowser import WIDGET_VIEWS, layout, reading_pages
from test_a11y import blocking
from test_layout import font_problems, too_wide
from test_reading import EQUATIONS, PRINTED

PAGES = reading_pages()
WIDTHS = (1280, 390)
NOT_BUILT = "(book not built: run `make book`)"
#: every page at both widths, grouped by page (pytest runs one page's tests together, then loads the next)
EVERY = [(p, w) for p in PAGES for w in WIDTHS] or [(NOT_BUILT, WIDTHS[0])]
WIDE = [(p, w) for p, w in EVERY if w == WIDTHS[0]]


def key(param) -> str:
    return f"{param[0]}-{param[1]}"


def load_problems(page, log, path: str) -> list[str]:
    """What went wrong while ``path`` loaded: requests off loopback, console errors, failed requests, dialogs, math
    left untypeset, widget outputs without saved state or not rendered (one line each)."""
    problems = [f"{path} made requests outside 127.0.0.1: {u}" for u in log.external]
    problems += [f"{path} logged: {e}" for e in log.errors]
    problems += [f"{path}: request failed: {f}" for f in log.failed]
    problems += [f"{path}: dialog {d!r}" for d in log.dialogs]
    if page.locator(".math").count():  # math was typeset (no raw TeX left, no MathJax error boxes)
        if page.locator("mjx-container").count() == 0:
            problems.append(f"{path}: MathJax did not typeset")
        if page.locator("mjx-merror").count():
            problems.append(f"{path}: {page.locator('mjx-merror').count()} MathJax error boxes")
    views = page.evaluate(WIDGET_VIEWS)  # each widget output has its state saved with the page and is rendered
    if views["with_state"] != views["total"]:
        problems.append(f"{path}: {views['total'] - views['with_state']} of {views['total']} widget outputs have no "
                        f"saved widget state, so they are blank in the book; re-execute the notebook so its widget "
                        f"state is stored")
    rendered = page.evaluate("() => Array.from(document.querySelectorAll('.widget-subarea'))"
                             ".filter(s => s.children.length > 0).length")
    if rendered < views["total"]:
        problems.append(f"{path}: {rendered} of {views['total']} widget outputs rendered")
    return problems


@pytest.mark.parametrize("shared_page", EVERY, indirect=True, ids=key)
def test_page_loads_offline_without_errors(shared_page, request):
    page, log = shared_page
    path = request.node.callspec.params["shared_page"][0]
    problems = load_problems(page, log, path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("shared_page", EVERY, indirect=True, ids=key)
def test_every_output_and_widget_fits_its_column(shared_page, request):
    page, log = shared_page
    path, width = request.node.callspec.params["shared_page"]
    assert log.errors == [], log.errors
    m = layout.measure(page)
    assert m["viewport"] == width
    problems = too_wide(m) + (font_problems(m) if width >= 1280 else [])
    page_width = page.evaluate("() => document.documentElement.scrollWidth")
    if page_width > width:  # the prose too (a long inline literal): the page itself must not scroll sideways
        problems.append(f"the page is {page_width} px wide in a {width} px window")
    assert not problems, f"{path} at {width} px (column {m['column']} px):\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("shared_page", EVERY, indirect=True, ids=key)
def test_equations_and_printed_outputs_are_whole(shared_page, request):
    page, _ = shared_page
    path, width = request.node.callspec.params["shared_page"]
    eq, printed = page.evaluate(EQUATIONS), page.evaluate(PRINTED)
    problems = eq["faults"] + printed["faults"]
    assert not problems, f"{path} at {width} px:\n  " + "\n  ".join(problems)
    if path.endswith("01_ngrams.html"):  # the widest equations of the book: at 390 px they scroll, they are there
        assert eq["count"] >= 10 and (eq["scrolling"] >= 5 if width == 390 else eq["scrolling"] >= 0), eq


@pytest.mark.parametrize("shared_page", WIDE, indirect=True, ids=key)
def test_no_critical_or_serious_violation_on_any_page(shared_page, request):
    page, log = shared_page
    path = request.node.callspec.params["shared_page"][0]
    problems = blocking(layout.run_axe(page))
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)
    assert log.errors == []
