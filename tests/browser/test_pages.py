"""Every page a reader reads, loaded once per window width and held to everything a still page must do:

- it loads offline: no console error, no failed request, no request off loopback, every embedded widget rendered,
  the math typeset by the vendored MathJax (what test_book_pages.py checks for the slide decks and the root page);
- every output and widget fits its column at 1,280 and 390 px, and each widget's claim of its smallest font is what it
  drew (issue 33; the rules and the gallery's widgets: test_layout.py);
- displayed equations and printed outputs read whole at both widths (issue 39; the rules: test_reading.py);
- axe-core finds no critical or serious WCAG 2.1 A/AA violation (issue 33; the rules: test_a11y.py).

On the same loads, what other files once checked on a page of their own: the visual tools page loads its libraries
from the book and the widgets' icon fonts load from the book (test_book_pages.py), a wide equation scrolls by keyboard
and a printed table keeps its columns at 390 px and chapter 3's tab labels show whole (test_reading.py), exercise
solutions stay folded until clicked (test_solutions_hidden.py), every chapter's stored questions are drawn and answer
(test_quiz_browser.py); their rules and helpers stay in those files.

One loaded page serves all of a page's tests (the module-scoped ``shared_page`` fixture of conftest.py): a chapter page
costs about 3.5 s of CPU to load and draw, and loading each page once per width instead of once per test saves about
100 loads a run (issue 40, item 7). pytest runs one page's tests together, in the order they are written here, so the
tests that only read the page come first. The tests that change the page come last: the icon-font test makes the
Font Awesome faces load (they stay loaded, as on a page a reader has scrolled through); the equation test scrolls
(1.3) and focuses it, the two solutions tests open a solution and a dropdown, and each of these three puts back what
it changed and asserts it did; the quiz test answers every question and leaves them answered, so it is the last on
its pages. A page's log holds everything since the page loaded: a test that checks it checks what the load did, or
only what came during its own run (from the log's length at its start).
A test that needs a page as it loaded and then changes it for good opens its own page elsewhere."""
from __future__ import annotations

import json

import pytest

from svbrowser import ROOT, WIDGET_VIEWS, layout, reading_pages
from test_a11y import blocking
from test_layout import font_problems, too_wide
from test_quiz_browser import CHAPTER_PAGES, stored_quizzes
from test_reading import EQUATIONS, PRINTED, TAB_LABELS, TEACHER_FORCING_ROWS
from test_solutions_hidden import EXERCISE_PAGES

PAGES = reading_pages()
WIDTHS = (1280, 390)
NOT_BUILT = "(book not built: run `make book`)"
#: every page at both widths, grouped by page (pytest runs one page's tests together, then loads the next)
EVERY = [(p, w) for p in PAGES for w in WIDTHS] or [(NOT_BUILT, WIDTHS[0])]
WIDE = [(p, w) for p, w in EVERY if w == WIDTHS[0]]
VISUAL_TOOLS = "book/visual_tools.html"


def on(*params):
    """Parametrize a test with the shared pages ``params`` ((path, width) pairs, the same values as EVERY's, so that
    pytest runs it on the page the tests above loaded)."""
    return pytest.mark.parametrize("shared_page", list(params) or [(NOT_BUILT, WIDTHS[0])], indirect=True, ids=key)


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


def _stored_widget_views(notebook: str) -> int:
    """How many widget views the notebook's stored outputs hold (each one a seqviz widget on the page)."""
    cells = json.loads((ROOT / notebook).read_text())["cells"]
    return sum("application/vnd.jupyter.widget-view+json" in out.get("data", {})
               for cell in cells for out in cell.get("outputs", []))


# --- the tests below read one page each; they too leave the page as it loaded

@on((VISUAL_TOOLS, WIDTHS[0]))
def test_visual_tools_page_loads_its_libraries_from_the_book_itself(shared_page):
    page, log = shared_page  # the requests, external requests and errors since the page loaded (nothing clicked yet)
    paths = {r.split("?")[0].split("/", 3)[-1] for r in log.requests if r.startswith("http")}
    for needed in ("vendor/require.js", "vendor/seqviz-offline.js", "vendor/html-manager/embed-amd.js",
                   "vendor/anywidget/index.js", "vendor/mathjax/tex-mml-chtml.js"):
        assert needed in paths, f"{needed} was not loaded from the book (requests: {sorted(paths)})"
    # every widget the notebook stored renders as a seqviz widget (heatmaps, gates, positions, BeamTree, AttentionSteps)
    assert page.locator(".seqviz").count() == _stored_widget_views("book/visual_tools.ipynb") >= 7
    assert page.locator("mjx-container").count() >= 10
    assert log.external == [] and log.errors == []


@on(("notebooks/05_attention.html", 390))
def test_a_printed_table_keeps_its_columns_at_390px(shared_page):
    """Chapter 5's scheduled-sampling table wrapped into "teacher forcing 0.722 / 0.778 0.836 0.779"."""
    page, _ = shared_page
    rows = page.evaluate(TEACHER_FORCING_ROWS)
    assert rows is not None, "chapter 5's scheduled-sampling table was not found"
    assert rows["rows"] == 1, f"its 'teacher forcing' line takes {rows['rows']} rows at 390 px"
    assert rows["scrolls"] and rows["tab"] == 0, rows


@on(*[("notebooks/03_rnn.html", w) for w in WIDTHS])
def test_chapter_3s_tab_labels_show_whole(shared_page):
    page, _ = shared_page
    tabs = page.evaluate(TAB_LABELS)
    assert len(tabs) >= 5 and any(t["label"] == "the company" for t in tabs), tabs
    assert [t["label"] for t in tabs if t["cut"] or t["out"]] == [], tabs


# --- the tests below change the page: each puts back what it changed and asserts it did, but for the icon fonts,
# which stay loaded (as on a page a reader has scrolled through), and the quiz test's answers (the last on its pages)

@on(("notebooks/04_lstm.html", WIDTHS[0]), (VISUAL_TOOLS, WIDTHS[0]))
def test_the_widgets_icon_fonts_load_from_the_book(shared_page):
    """The html-manager's widget modules (@jupyter-widgets/base, controls) find their Font Awesome files relative to
    their own AMD address. Before: that address was the page's folder, so once a reader scrolled to where a glyph in
    that font showed, the page asked for notebooks/@jupyter-widgets/1551f4f60c37af51121f.woff2 and its fallbacks, six
    404s in the console (seen in CI on chapter 4's page, only under load, when the quiz test scrolled)."""
    page, log = shared_page
    faces = page.evaluate("""async () => {
        const faces = [...document.fonts].filter(f => f.family.replace(/"/g, "").startsWith("Font Awesome"));
        await Promise.allSettled(faces.map(f => f.load()));
        return faces.map(f => `${f.family} ${f.weight}: ${f.status}`);
    }""")
    assert len(faces) >= 3 and all(f.endswith(": loaded") for f in faces), faces
    page.wait_for_timeout(100)
    # the whole log, not only this test's part of it: an earlier test on the page may have made a face load already
    assert log.failed == [] and log.errors == [], log.failed + log.errors


@on(("notebooks/01_ngrams.html", 390))
def test_a_wide_equation_scrolls_from_its_start_by_keyboard(shared_page):
    """Chapter 1's (1.3) at 390 px: its start is in view (the issue found only ")^{1/T} = softmax(...)"), and Tab
    reaches its box, whose arrow keys scroll it to the rest."""
    page, _ = shared_page
    at = page.evaluate("() => [window.scrollX, window.scrollY]")
    box = page.evaluate_handle("""() => Array.from(document.querySelectorAll('div.math'))
        .find((d) => d.getAttribute('aria-label') === 'equation (1.3), scrolls sideways')""").as_element()
    assert box is not None, "chapter 1's (1.3) is not a named scrolling box at 390 px"
    assert box.evaluate("d => d.scrollLeft") == 0 and box.evaluate("d => d.scrollWidth > d.clientWidth + 50")
    box.focus()
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "equation (1.3), scrolls sideways"
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("d => d.scrollLeft > 0", arg=box, timeout=3000)
    # put the page back as it loaded: the box scrolled to its start, nothing focused, the window where it was
    page.evaluate("([d, x, y]) => { d.scrollTo({left: 0, behavior: 'instant'}); d.blur();"
                  " window.scrollTo({left: x, top: y, behavior: 'instant'}); }", [box, *at])
    assert page.evaluate("([d]) => [d.scrollLeft, document.activeElement === document.body, window.scrollX,"
                         " window.scrollY]", [box]) == [0, True, *at]


@on(*[(p, WIDTHS[0]) for p in EXERCISE_PAGES])
def test_solutions_are_folded_until_clicked(shared_page, request):
    page, _ = shared_page
    path = request.node.callspec.params["shared_page"][0]
    solutions = page.locator("div.cell").filter(has_text="Solution")
    shown = [i for i in range(solutions.count())
             if "tag_hide-cell" not in (solutions.nth(i).get_attribute("class") or "")
             and solutions.nth(i).locator(".cell_input").first.is_visible()]
    assert not shown, f"{path}: {len(shown)} solution cell(s) show their code without a click (tag them hide-cell)"
    hidden = page.locator("div.cell.tag_hide-cell")
    assert hidden.count() > 0, f"{path} has exercises but no folded solution cell (they need hidden, executed solutions)"
    for i in range(hidden.count()):
        cell = hidden.nth(i)
        body = cell.locator(".cell_input, .cell_output")
        assert body.count() and not any(body.nth(k).is_visible() for k in range(body.count())), (
            f"{path}: hide-cell cell {i} is visible before any click")
    first = hidden.first
    first.locator("summary").first.click()
    assert first.locator(".cell_input").first.is_visible(), f"{path}: clicking did not unfold the solution"
    first.locator("summary").first.click()  # folded again, as the page loaded
    assert not first.locator(".cell_input").first.is_visible(), f"{path}: a second click did not fold the solution"


@on(*[(p, WIDTHS[0]) for p in EXERCISE_PAGES])
def test_answers_in_dropdowns_are_closed(shared_page, request):
    page, _ = shared_page
    path = request.node.callspec.params["shared_page"][0]
    drops = page.locator("details.sd-dropdown")
    for i in range(drops.count()):
        assert drops.nth(i).get_attribute("open") is None, f"{path}: dropdown {i} is open before any click"
    if drops.count():
        drops.first.locator("summary").first.click()
        assert drops.first.get_attribute("open") is not None
        drops.first.locator("summary").first.click()  # closed again, as the page loaded
        assert drops.first.get_attribute("open") is None, f"{path}: a second click did not close dropdown 0"


@on(*[(p, WIDTHS[0]) for p in CHAPTER_PAGES])
def test_every_chapters_questions_are_drawn_and_answer(shared_page, request):
    """The chapter's stored questions render in the static book (no kernel), and picking each one's right answers
    says Correct. It leaves them answered: the last test on its page."""
    page, log = shared_page  # its widgets drawn (open_in waited for them)
    path = request.node.callspec.params["shared_page"][0]
    errors_before = len(log.errors)  # what the load logged is test_page_loads_offline_without_errors' to check
    roots = page.locator(".seqviz.sv-quiz")
    stored = stored_quizzes(path)
    assert 2 <= roots.count() == len(stored) <= 4, f"{path}: {roots.count()} questions drawn, {len(stored)} stored"
    for k, s in enumerate(stored):
        root = roots.nth(k)
        assert root.locator("legend .sv-quiz-question").inner_text() == s["question"].replace("`", "")
        for i, c in enumerate(s["choices"]):
            if c["correct"]:
                root.locator("input").nth(i).check()
        root.locator("button", has_text="Check").click()
        assert root.locator(".sv-quiz-status").inner_text() == "✓ Correct.", f"{path}: question {k}"
    assert log.errors[errors_before:] == []
