"""Check-your-understanding questions (seqviz.widgets.Quiz) in a real Chromium, in the book's column: answered by
keyboard alone, each picked choice explained, right and wrong said in words, axe-clean in light and dark mode, whole
at 390 px (issue 40, item 2). That every chapter's stored questions are drawn in the built book and answer is tested
in test_pages.py, on the chapter page its other tests share (with CHAPTER_PAGES and stored_quizzes from here)."""
from __future__ import annotations

import json

import pytest

from seqviz.widgets import Choice, Quiz
from svbrowser import ROOT, layout, reading_pages, show_gallery

CHAPTER_PAGES = [p for p in reading_pages() if p.startswith("notebooks/")]


def quizzes() -> dict:
    return {
        "one": Quiz("What does the output gate `o` decide?",
                    [Choice("what the cell forgets", False, "That is the forget gate f (9.24)."),
                     Choice("what leaves the cell as h_t", True, "h_t = o ⊙ tanh(c_t) (9.28)."),
                     Choice("what enters the cell", False, "That is the add gate i (9.26).")]),
        "many": Quiz("Which of these sum to one over the vocabulary?",
                     [Choice("softmax(z)", True, "Softmax normalises by the sum of exponentials."),
                      Choice("the logits z", False, "Logits are unnormalised scores, any real numbers."),
                      Choice("softmax(z / T)", True, "Any temperature still normalises.")]),
    }


def tab_into(page, root) -> None:
    """Focus the first radio/checkbox of `root` the way a keyboard user gets there (Tab from before the widget)."""
    root.evaluate("e => { const b = document.createElement('button'); b.textContent = 'before'; b.id = 'sv-before';"
                  " e.parentElement.insertBefore(b, e); b.focus(); }")
    page.keyboard.press("Tab")


def show(page, log):
    """(page, log, {name: root}) with fresh quizzes() drawn in the page's column (show_gallery replaces what was
    there)."""
    made = quizzes()
    show_gallery(page, made)
    roots = page.locator(".seqviz.sv-quiz")
    return page, log, {n: roots.nth(k) for k, n in enumerate(made)}


@pytest.fixture
def shown(open_page):
    """shown(width, scheme): fresh quizzes in a page of their own, in the given width and colour scheme."""
    def _show(width=1280, scheme="light"):
        return show(*open_page("book/notation.html", width=width, color_scheme=scheme))
    return _show


# The three answering tests draw fresh quizzes in one page (notation.html at 1,280 px, light), loaded once for them.
IN_SHARED_PAGE = pytest.mark.parametrize("shared_page", [("book/notation.html", 1280)], ids=["1280"], indirect=True)


@IN_SHARED_PAGE
def test_a_wrong_then_a_right_answer_by_keyboard_alone(shared_page):
    """Before the widget a chapter had no question between its exercises; here a reader answers one by keyboard."""
    page, log, roots = show(*shared_page)
    root = roots["one"]
    tab_into(page, root)
    assert page.evaluate("() => document.activeElement.type") == "radio"
    page.keyboard.press("Space")                              # picks the first choice, a wrong one
    page.keyboard.press("Tab")                                # to the Check button
    assert page.evaluate("() => document.activeElement.textContent") == "Check"
    page.keyboard.press("Enter")
    status = root.locator(".sv-quiz-status")
    assert status.inner_text().startswith("✗ Not yet")
    whys = root.locator(".sv-quiz-why:visible")
    assert whys.count() == 1 and whys.first.inner_text().startswith("✗ Not quite: That is the forget gate")
    # a right answer: arrow to the second choice, check again; every choice now says why
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowDown")
    assert root.locator(".sv-quiz-why:visible").count() == 0     # a new pick clears the old verdict
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    assert status.inner_text() == "✓ Correct."
    texts = root.locator(".sv-quiz-why:visible").all_inner_texts()
    assert len(texts) == 3 and texts[1].startswith("✓ Right: h_t = o")
    # the code span is code, not backticks
    assert root.locator("legend code").inner_text() == "o"
    assert log.errors == []


@IN_SHARED_PAGE
def test_select_all_that_apply_needs_every_right_choice(shared_page):
    page, log, roots = show(*shared_page)
    root = roots["many"]
    assert root.locator("input[type=checkbox]").count() == 3
    root.locator("label", has_text="softmax(z)").first.click()
    root.locator("button", has_text="Check").click()
    assert root.locator(".sv-quiz-status").inner_text().startswith("✗ Not yet")
    root.locator("label", has_text="softmax(z / T)").click()
    root.locator("label", has_text="the logits z").click()     # every right choice and a wrong one: not yet
    root.locator("button", has_text="Check").click()
    assert root.locator(".sv-quiz-status").inner_text().startswith("✗ Not yet")
    root.locator("label", has_text="the logits z").click()
    root.locator("button", has_text="Check").click()
    assert root.locator(".sv-quiz-status").inner_text() == "✓ Correct."
    root.locator("button", has_text="Check").focus()
    assert log.errors == []


@IN_SHARED_PAGE
def test_checking_with_nothing_picked_asks_for_a_pick(shared_page):
    page, _, roots = show(*shared_page)
    roots["one"].locator("button", has_text="Check").click()
    assert roots["one"].locator(".sv-quiz-status").inner_text() == "Pick an answer first."


@pytest.mark.parametrize("width, scheme", [(1280, "light"), (390, "light"), (1280, "dark")])
def test_axe_clean_and_whole_after_an_answer(shown, width, scheme):
    page, log, roots = shown(width, scheme)
    for name, root in roots.items():
        root.locator("input").first.check()
        root.locator("button", has_text="Check").click()
        root.evaluate("(e, k) => e.setAttribute('data-audit', k)", name)
        bad = [v for v in layout.run_axe(page, f'.seqviz[data-audit="{name}"]') if v["impact"] in ("serious", "critical")]
        assert not bad, f"{name} at {width} px {scheme}: {bad}"
        over = root.evaluate("e => e.scrollWidth - e.clientWidth")
        assert over <= 1, f"{name} at {width} px is {over} px wider than its column"
    assert log.errors == []


def stored_quizzes(path: str) -> list[dict]:
    """The Quiz states a chapter's notebook stored, in page order."""
    nb = json.loads((ROOT / path.replace(".html", ".ipynb")).read_text(encoding="utf-8"))
    models = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            view = o.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            s = models.get(view["model_id"], {}).get("state", {}) if view else {}
            if s.get("_anywidget_id") == "seqviz.widgets.quiz.Quiz":
                out.append(s)
    return out
