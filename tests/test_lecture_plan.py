"""Every chapter is one lecture: objectives, a lecture plan with minutes for every section (<= 90 in all), a
Summary before the Exercises.

The plan is a table in the chapter's first markdown cell (book conventions: `| 4.2 | The LSTM | 15 |`, one row per
`## N.M` heading, titles verbatim, and a Summary row); its minutes must add up to the total it states.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ROW = re.compile(r"^\|\s*(\d+\.\d+)?\s*\|\s*([^|]+?)\s*\|\s*(\d+)\s*\|\s*$", re.M)
HEADING = re.compile(r"^## (\d+\.\d+) (.+?)\s*$", re.M)
TOTAL = re.compile(r"\*\*Lecture plan\*\* \((\d+) minutes")


def _markdown(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"]


def plan(first_cell: str) -> tuple[int | None, list[tuple[str, str, int]]]:
    """(stated total, [(section number or '', title, minutes)]) of a chapter's lecture plan."""
    total = TOTAL.search(first_cell)
    part = first_cell[total.start():] if total else ""
    return (int(total.group(1)) if total else None,
            [(m.group(1) or "", m.group(2), int(m.group(3))) for m in ROW.finditer(part)])


def test_the_parser_reads_a_plan():
    cell = ("# 9. X\n\nYou will:\n\n- a\n\n**Lecture plan** (12 minutes; the exercises are for after class):\n\n"
            "| § | section | min |\n|---|---|--:|\n| 9.1 | One | 5 |\n| 9.2 | Two: more | 4 |\n|  | Summary | 3 |\n")
    assert plan(cell) == (12, [("9.1", "One", 5), ("9.2", "Two: more", 4), ("", "Summary", 3)])
    assert plan("# 9. X\n\nno plan") == (None, [])


def test_there_are_chapters():
    assert len(CHAPTERS) >= 7


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_each_chapter_is_one_lecture(path):
    cells = _markdown(path)
    first, text = cells[0], "\n".join(cells)
    assert "You will" in first, f"{path.name}: the first cell states no learning objectives ('You will: ...')"
    total, rows = plan(first)
    assert total is not None, f"{path.name}: no '**Lecture plan** (N minutes...' in the first cell"
    headings = HEADING.findall(text)
    planned = [(n, t) for n, t, _ in rows if n]
    assert planned == headings, (f"{path.name}: the plan's sections {planned} are not the notebook's numbered "
                                 f"headings {headings} (same titles, same order)")
    assert any(t == "Summary" for n, t, _ in rows if not n), f"{path.name}: the plan has no Summary row"
    assert sum(m for *_, m in rows) == total, f"{path.name}: the minutes add up to {sum(m for *_, m in rows)}, " \
                                              f"not the stated {total}"
    assert total <= 90, f"{path.name}: {total} minutes is more than one lecture (90): split the chapter"
    assert all(m > 0 for *_, m in rows)
    summary, exercises = text.find("\n## Summary"), text.find("\n## Exercises")
    assert 0 < summary < exercises, f"{path.name}: needs a '## Summary' section before '## Exercises'"
