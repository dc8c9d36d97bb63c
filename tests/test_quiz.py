"""The check-your-understanding widget (seqviz.widgets.Quiz): what it accepts, the rule that grades it, its print form,
and that every chapter asks two to four questions, each right answer explained (issue 40, item 2). The browser half is
tests/browser/test_quiz_browser.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqviz.widgets import Choice, Quiz

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def good(**kw):
    return Quiz("Which gate of the LSTM decides what leaves the cell?",
                [Choice("the forget gate f", False, "f decides what the cell keeps from c_{t-1} (9.24)."),
                 Choice("the output gate o", True, "h_t = o ⊙ tanh(c_t) (9.28): o decides what leaves."),
                 ("the add gate i", False, "i decides what of g enters the cell (9.26).")], **kw)


def test_a_quiz_keeps_its_choices_in_order_and_grades_by_the_right_ones():
    q = good()
    assert [c["text"] for c in q.choices] == ["the forget gate f", "the output gate o", "the add gate i"]
    assert not q.multiple
    assert q.grade(1) and not q.grade(0) and not q.grade([0, 1])


def test_several_right_choices_make_a_select_all_question():
    q = Quiz("Which are probabilities?", [("softmax(z)", True, "sums to one"), ("z", False, "logits are scores"),
                                          ("p^(1/T) renormalised", True, "renormalised: sums to one")])
    assert q.multiple
    assert q.grade([0, 2]) and not q.grade([0]) and not q.grade([0, 1, 2])


@pytest.mark.parametrize("args, says", [
    (("", [("a", True, "x"), ("b", False, "y")]), "no question"),
    (("Q?", [("a", True, "x")]), "2 to 6 choices"),
    (("Q?", [("a", False, "x"), ("b", False, "y")]), "no choice is marked correct"),
    (("Q?", [("a", True, "x"), ("a", False, "y")]), "two choices read the same"),
    (("Q?", [("a", True, ""), ("b", False, "y")]), "has no explanation"),
    (("Q?", [("a", 1, "x"), ("b", False, "y")]), "True or False"),
    (("Q?", [("a", True, "x"), "b"]), r"Choice\(text, correct, why\)"),
    (("Q?", "ab"), "list of Choice"),
    (("Is `x right?", [("a", True, "x"), ("b", False, "y")]), "unmatched backtick"),
    (("Q?", [("a", True, "x"), ("b", False, "y")] * 4), "2 to 6 choices"),
])
def test_a_malformed_quiz_says_what_is_wrong(args, says):
    with pytest.raises((ValueError, TypeError), match=says):
        Quiz(*args)


@pytest.mark.parametrize("picked", [3, None, True, [True], "1", [0, "b"]])
def test_grading_a_choice_that_does_not_exist_is_an_error(picked):
    """A bool is not an index (True once graded as choice 1) and None is no pick (it raised a bare TypeError)."""
    with pytest.raises(ValueError, match="numbered 0 to 2"):
        good().grade(picked)


def test_print_shows_the_question_its_lettered_choices_and_the_answer_with_every_reason():
    question, answer = good().to_markdown("Q1")
    assert "**Q1 Which gate" in question and "b. the output gate o" in question
    assert "o decides" not in question                           # the answer is not printed beside the question
    assert "**Q1: b.**" in answer and "a. Wrong: f decides" in answer and "b. Right: h_t = o" in answer


def _quizzes(path: Path) -> list[dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    models = state.get("state", {})
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            view = o.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            m = models.get(view["model_id"], {}) if view else {}
            if m.get("state", {}).get("_anywidget_id") == "seqviz.widgets.quiz.Quiz":
                out.append({"cell": cell, "state": m["state"]})
    return out


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_asks_two_to_four_questions_shown_without_their_code(path):
    quizzes = _quizzes(path)
    assert 2 <= len(quizzes) <= 4, f"{path.name} has {len(quizzes)} check-your-understanding questions (want 2-4)"
    for q in quizzes:
        tags = q["cell"].get("metadata", {}).get("tags", [])
        assert "remove-input" in tags, f"{path.name}: the quiz cell {q['state']['question'][:50]!r} shows its code " \
                                       f"in the book; tag it remove-input"
        for c in q["state"]["choices"]:
            assert len(c["why"].split()) >= 4, f"{path.name}: choice {c['text']!r} is explained in too few words"
