"""The lesson in front, the proof behind (issue 32): what a reader sees of a chapter holds no benchmark plumbing,
machine line, project history or wall of asserts. Checks run in cells tagged remove-input / remove-cell (nbval still
executes them), with at most one visible check line ("✓ ...") per section.

Two views are scanned: the notebooks (what a student opens in Jupyter; fast, here) and the built HTML book (what a
reader of the book sees; skipped where the book is not built, run in CI after `make book`).
"""
from __future__ import annotations

import html as html_lib
import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted((ROOT / "book").glob("*.ipynb"))
HIDDEN_INPUT = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
#: what a reader must never meet in a cell's visible source: plumbing, machine lines, asserts
FORBIDDEN = {"sys.path": re.compile(r"\bsys\.path\b"), "_results": re.compile(r"(?<![\w.])_results\b"),
             "find_bench": re.compile(r"\bfind_bench\b"), "load average": re.compile(r"load average"),
             "assert ": re.compile(r"^\s*assert ", re.M), "SEQVIZ_ROOT": re.compile(r"SEQVIZ_ROOT")}
#: nor in a visible output
FORBIDDEN_OUT = {"load average": re.compile(r"load average"), "find_bench": re.compile(r"\bfind_bench\b"),
                 "sys.path": re.compile(r"\bsys\.path\b")}
CHECK_LINE = re.compile(r"^✓ ", re.M)
SECTION = re.compile(r"^##+ ", re.M)


def _cells(path: Path):
    return json.loads(path.read_text())["cells"]


def _text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return "".join(output.get("text", ""))
    return "".join(output.get("data", {}).get("text/plain", ""))


def scan_notebook(cells: list[dict]) -> list[str]:
    """Every place a reader would meet plumbing or a check wall, as 'cell N: what'."""
    found, checks_in_section = [], 0
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            if SECTION.search(src):
                checks_in_section = 0
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "remove-cell" in tags:
            continue
        if not tags & HIDDEN_INPUT:
            found += [f"cell {i}: {name} in its source" for name, rx in FORBIDDEN.items() if rx.search(src)]
        if "remove-output" in tags:
            continue
        out = "".join(_text(o) for o in cell.get("outputs", []))
        found += [f"cell {i}: {name} in its output" for name, rx in FORBIDDEN_OUT.items() if rx.search(out)]
        if src.lstrip().startswith(("# Solution", "# Exercise")):
            continue                                  # an exercise's own verdict, not a check of the page
        n = len(CHECK_LINE.findall(out))
        checks_in_section += n
        if n and checks_in_section > 1:
            found.append(f"cell {i}: a second visible check line in one section")
    return found


def test_the_scan_finds_what_it_names():
    cells = [{"cell_type": "markdown", "source": ["## 1.1 A"], "metadata": {}},
             {"cell_type": "code", "source": ["import sys\nsys.path.insert(0, 'bench')"], "metadata": {},
              "outputs": []},
             {"cell_type": "code", "source": ["assert x"], "metadata": {"tags": ["remove-input"]},
              "outputs": [{"output_type": "stream", "text": "✓ one\n"}]},
             {"cell_type": "code", "source": ["assert y"], "metadata": {"tags": ["remove-input"]},
              "outputs": [{"output_type": "stream", "text": "✓ two\n"}]},
             {"cell_type": "code", "source": ["x = 1\n  assert x"], "metadata": {}, "outputs": []},
             {"cell_type": "code", "source": ["assert z"], "metadata": {"tags": ["remove-cell"]},
              "outputs": [{"output_type": "stream", "text": "✓ hidden\n"}]},
             {"cell_type": "code", "source": ["print(machine)"], "metadata": {},
              "outputs": [{"output_type": "stream", "text": "load average 2.1\n"}]},
             {"cell_type": "markdown", "source": ["## 1.2 B"], "metadata": {}},
             {"cell_type": "code", "source": ["pass"], "metadata": {"tags": ["remove-input"]},
              "outputs": [{"output_type": "stream", "text": "✓ three\n"}]}]
    assert scan_notebook(cells) == ["cell 1: sys.path in its source", "cell 3: a second visible check line in one "
                                    "section", "cell 4: assert  in its source", "cell 6: load average in its output"]


@pytest.mark.parametrize("path", PAGES, ids=[p.stem for p in PAGES])
def test_a_reader_sees_the_lesson_not_the_proof(path):
    found = scan_notebook(_cells(path))
    assert not found, (f"{path.relative_to(ROOT)}: move checks into cells tagged remove-input (keep one '✓ ...' line "
                       f"per section) or remove-cell, and plumbing out of the page: {found}")


# ---- the built book ----------------------------------------------------------------------------------------------------
BOOK = Path(os.environ.get("SEQVIZ_BOOK_HTML", ROOT / "_build" / "html"))
BUILT = sorted((BOOK / "notebooks").glob("*.html")) + sorted((BOOK / "book").glob("*.html"))
INPUT_AREA = re.compile(r'<div class="cell_input[^"]*"[^>]*>(.*?)</div>\s*</div>', re.S)


def visible_inputs(page_html: str) -> list[str]:
    """The text of every code cell's input area a reader of the built page sees (folded ones included: a click shows
    them; removed ones are not in the page)."""
    out = []
    for m in INPUT_AREA.finditer(page_html):
        text = re.sub(r"<[^>]+>", "", m.group(1))
        out.append(html_lib.unescape(text))
    return out


@pytest.mark.skipif(not BUILT, reason="the book is not built here (make book)")
@pytest.mark.parametrize("page", BUILT, ids=[str(p.relative_to(BOOK)) for p in BUILT] or None)
def test_the_built_page_shows_no_plumbing_or_asserts(page):
    inputs = visible_inputs(page.read_text())
    bad = [(name, src[:120]) for src in inputs for name, rx in FORBIDDEN.items() if rx.search(src)
           and not src.lstrip().startswith(("# Solution", "# Exercise"))]
    assert not bad, f"{page.relative_to(BOOK)}: a reader sees {bad}"
