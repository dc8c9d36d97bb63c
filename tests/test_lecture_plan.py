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


# ---- the plan is one a lecturer can deliver --------------------------------------------------------------------------
#: prose a lecture delivers per minute, beside its code, figures and questions (a lecturer speaks 120-150 words a
#: minute, but half the time goes to the board, the code and the class)
WORDS_PER_MINUTE = 60
#: one code cell shown and discussed takes about two minutes of a lecture
MINUTES_PER_CODE_CELL = 2
HIDDEN = {"remove-cell", "remove-input", "hide-cell", "hide-input"}
SECTION = re.compile(r"^## (\d+\.\d+) |^## (Summary)\b|^## (Exercises)\b", re.M)


def section_load(path: Path) -> dict[str, tuple[int, int]]:
    """{section number (or "Summary"): (words of prose, code cells a reader sees)} of a chapter, from its first
    numbered heading to its Exercises (answers in dropdowns and hidden cells are not lecture)."""
    load, sec = {}, None
    for cell in json.loads(path.read_text())["cells"][1:]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for line in src.split("\n"):
                m = SECTION.match(line)
                if m:
                    sec = m.group(1) or m.group(2) or m.group(3)
                if sec and sec != "Exercises":
                    w, c = load.get(sec, (0, 0))
                    load[sec] = (w + len(re.findall(r"[A-Za-z]+", line)), c)
        elif sec and sec != "Exercises" and not HIDDEN & set(cell["metadata"].get("tags", [])):
            w, c = load.get(sec, (0, 0))
            load[sec] = (w, c + 1)
    return load


def test_section_load_counts_prose_and_visible_code():
    cells = [{"cell_type": "markdown", "source": ["# 9. X"], "metadata": {}},
             {"cell_type": "markdown", "source": ["## 9.1 One\n", "two words"], "metadata": {}},
             {"cell_type": "code", "source": ["x = 1"], "metadata": {}},
             {"cell_type": "code", "source": ["assert x"], "metadata": {"tags": ["remove-cell"]}},
             {"cell_type": "markdown", "source": ["## Summary\n", "- a b c"], "metadata": {}},
             {"cell_type": "markdown", "source": ["## Exercises\n", "many words not counted"], "metadata": {}},
             {"cell_type": "code", "source": ["y = 2"], "metadata": {}}]
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.ipynb"
        p.write_text(json.dumps({"cells": cells}))
        assert section_load(p) == {"9.1": (3, 1), "Summary": (4, 0)}  # words, not numbers


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_each_section_fits_its_minutes(path):
    """The plan's minutes are the time the section's prose and code take to teach: at most WORDS_PER_MINUTE words of
    prose a minute and one visible code cell per MINUTES_PER_CODE_CELL minutes."""
    _, rows = plan(_markdown(path)[0])
    load = section_load(path)
    table = [f"{n or t}: {m} min, {load.get(n or t, (0, 0))[0]} words, {load.get(n or t, (0, 0))[1]} code cells"
             for n, t, m in rows]
    over = [line for (n, t, m), line in zip(rows, table)
            if load.get(n or t, (0, 0))[0] > WORDS_PER_MINUTE * m
            or load.get(n or t, (0, 0))[1] > m / MINUTES_PER_CODE_CELL]
    assert not over, (f"{path.name}: sections that do not fit their minutes (at most {WORDS_PER_MINUTE} words a "
                      f"minute and one code cell per {MINUTES_PER_CODE_CELL} minutes): {over}; the whole plan: "
                      f"{table}")
