"""Check your understanding: a short multiple-choice question inside a chapter, each choice with its explanation.

The question is answered in the browser (no kernel): the reader picks a choice (or several, when more than one is
right), presses "Check", and reads why each picked choice is right or wrong, as the Hugging Face course's quizzes do.
It works in JupyterLab, in the static HTML book and offline, like every seqviz widget; it is a ``<fieldset>`` of
native radio buttons or checkboxes, so it is keyboard-usable and named for screen readers.

Why a seqviz widget and not ``jupyterquiz``: jupyterquiz (PyPI, "interactive quizzes for Jupyter and Jupyter
Book") renders through a ``Javascript`` output, loads MathJax 3 from a CDN in JupyterLab 4 (so not offline) and
shuffles the answers by default (so a notebook's outputs change run to run, which nbval compares). This widget is
served like the book's other widgets (the same offline vendoring, headless-browser tests, axe rules and print path).

Text is plain: a pair of backticks marks code (```h_t```), nothing else is interpreted (never HTML); write
subscripts and Greek letters as Unicode (hₜ, σ).
"""
from __future__ import annotations

from dataclasses import dataclass

import anywidget
import traitlets

from ._common import CSS, Described, esm

__all__ = ["Quiz", "Choice", "MAX_CHOICES"]

MAX_CHOICES = 6


@dataclass(frozen=True)
class Choice:
    """One answer: its text, whether it is right, and why (shown to a reader who picks it)."""
    text: str
    correct: bool
    why: str


def _choice(c, i: int) -> Choice:
    if isinstance(c, Choice):
        pass
    elif isinstance(c, (tuple, list)) and len(c) == 3:
        c = Choice(*c)
    else:
        raise TypeError(f"choice {i} is {c!r}; give each choice as Choice(text, correct, why) or a (text, correct, "
                        f"why) tuple")
    if not isinstance(c.text, str) or not c.text.strip():
        raise ValueError(f"choice {i} has no text; write the answer the reader picks")
    if not isinstance(c.correct, bool):
        raise TypeError(f"choice {i} ({c.text!r}): correct must be True or False, got {c.correct!r}")
    if not isinstance(c.why, str) or not c.why.strip():
        raise ValueError(f"choice {i} ({c.text!r}) has no explanation; say why it is {'right' if c.correct else 'wrong'}"
                         f" (the reader who picks it reads it)")
    if c.text.count("`") % 2 or c.why.count("`") % 2:
        raise ValueError(f"choice {i} ({c.text!r}) has an unmatched backtick; code is written between a pair of "
                         f"backticks")
    return c


class Quiz(Described, anywidget.AnyWidget):
    """``Quiz(question, [Choice(text, correct, why), ...])``: 2 to 6 choices, at least one right. With one right
    choice the reader picks one (radio buttons); with several, every right one ("select all that apply")."""

    _esm = esm("quiz.js")  # the shared prelude + quiz.js
    _css = CSS

    question = traitlets.Unicode("").tag(sync=True)
    choices = traitlets.List(traitlets.Dict()).tag(sync=True)  # [{"text", "correct", "why"}]
    multiple = traitlets.Bool(False).tag(sync=True)
    title = traitlets.Unicode("Check your understanding").tag(sync=True)

    def __init__(self, question: str, choices, *, title: str = "Check your understanding", **kwargs):
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the quiz has no question; pass the question's text first")
        if question.count("`") % 2:
            raise ValueError("the question has an unmatched backtick; code is written between a pair of backticks")
        if isinstance(choices, (str, bytes)) or not hasattr(choices, "__iter__"):
            raise TypeError(f"choices must be a list of Choice(text, correct, why), got {type(choices).__name__}")
        cs = [_choice(c, i) for i, c in enumerate(choices)]
        if not 2 <= len(cs) <= MAX_CHOICES:
            raise ValueError(f"a quiz has 2 to {MAX_CHOICES} choices, got {len(cs)}")
        texts = [c.text.strip() for c in cs]
        dup = sorted({t for t in texts if texts.count(t) > 1})
        if dup:
            raise ValueError(f"two choices read the same: {dup[0]!r}; every choice must differ")
        right = sum(c.correct for c in cs)
        if right == 0:
            raise ValueError("no choice is marked correct; mark the right answer with correct=True")
        super().__init__(question=question.strip(), multiple=right > 1, title=title,
                         choices=[{"text": c.text.strip(), "correct": c.correct, "why": c.why.strip()} for c in cs],
                         **kwargs)

    def grade(self, picked) -> bool:
        """Whether picking the choices at these indices (one int, or several) answers the question: the rule the
        browser applies, for tests and for a lecturer's own use."""
        n = len(self.choices)
        if picked is None or isinstance(picked, (str, bytes)) or not (isinstance(picked, int) or
                                                                     hasattr(picked, "__iter__")):
            raise ValueError(f"pick a choice by its index or a list of indices; choices are numbered 0 to {n - 1}, "
                             f"got {picked!r}")
        picked = {picked} if isinstance(picked, int) else set(picked)
        bad = [p for p in picked if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < n]
        if bad:
            raise ValueError(f"choice {bad[0]!r} does not exist; choices are numbered 0 to {len(self.choices) - 1}")
        return picked == {i for i, c in enumerate(self.choices) if c["correct"]}

    def to_markdown(self, number: str = "") -> tuple[str, str]:
        """(the question with its lettered choices, its answer with every choice's explanation) as Markdown: what
        print shows, the question where the widget stood and the answer at the chapter's end."""
        letters = "abcdef"
        q = [f"**{(number + ' ') if number else ''}{self.question}**", ""]
        q += [f"{letters[i]}. {c['text']}" for i, c in enumerate(self.choices)]
        right = ", ".join(letters[i] for i, c in enumerate(self.choices) if c["correct"])
        a = [f"**{(number + ': ') if number else ''}{right}.**", ""]
        a += [f"{letters[i]}. {'Right' if c['correct'] else 'Wrong'}: {c['why']}" for i, c in enumerate(self.choices)]
        return "\n".join(q), "\n".join(a)
