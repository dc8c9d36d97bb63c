"""Exercise solutions stay hidden on the page until the reader clicks (issue: answers visible without a click).

A solution is a code cell tagged ``hide-cell`` (input and output folded away) and a conceptual answer is prose in
a ``{dropdown}``; both must be closed when the page loads and open on a click. The pages checked are every built page
with an "Exercises" heading (chapters and appendices alike), found in the HTML, not listed by hand; the test below
checks that finding against the sources in ``_toc.yml``, so a page whose source has exercises cannot slip out. The
two tests that click the solutions open are in test_pages.py, on the page load its other tests share.
"""
from __future__ import annotations

import json
import re
import sys

import pytest

from svbrowser import BOOK, ROOT, book_pages

# "Exercises" (or "Exercise"), possibly numbered ("3.10 Exercises"), as a heading of the built page or of its source
HTML_HEADING = re.compile(r"<h[1-6][^>]*>\s*(?:<[^>]+>\s*)*(?:[\d.]+\s+)?Exercises?\b", re.I)
SOURCE_HEADING = re.compile(r"^#{1,6}\s+(?:[\d.]+\s+)?Exercises?\b", re.I | re.M)


def has_exercises(page: str) -> bool:
    return bool(HTML_HEADING.search((BOOK / page).read_text(errors="replace")))


EXERCISE_PAGES = [p for p in book_pages() if has_exercises(p)]


def toc_sources() -> dict[str, str]:
    """{page path in the built book: its source text (markdown cells only for a notebook)} for every _toc.yml file."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_book import toc_files  # the one reader of _toc.yml's files, in reading order

    names = toc_files()
    out = {}
    for name in names:
        name = re.sub(r"\.(md|ipynb)$", "", name)
        if (ROOT / f"{name}.ipynb").is_file():
            nb = json.loads((ROOT / f"{name}.ipynb").read_text())
            out[f"{name}.html"] = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        elif (ROOT / f"{name}.md").is_file():
            out[f"{name}.html"] = (ROOT / f"{name}.md").read_text()
    return out


def test_every_page_whose_source_has_exercises_is_checked():
    if not EXERCISE_PAGES:
        pytest.fail(f"no built page with an Exercises heading under {BOOK}: run `make book`", pytrace=False)
    with_exercises = sorted(page for page, text in toc_sources().items() if SOURCE_HEADING.search(text))
    assert with_exercises, "no source in _toc.yml has an Exercises heading: the pattern no longer matches the book"
    missed = [p for p in with_exercises if p not in EXERCISE_PAGES]
    assert not missed, f"pages with exercises in their source but not found in the built HTML: {missed}"
