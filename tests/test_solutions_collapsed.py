"""Solutions are folded where students run the notebooks (JupyterLab, Notebook 7, Colab), not only in the book.

The built book folds a solution by its ``hide-cell`` tag and an answer by its ``{dropdown}``; the notebook front ends
read ``jupyter.source_hidden`` / ``outputs_hidden`` cell metadata instead. ``scripts/hide_solutions.py`` writes that
metadata from the tags; these tests check every notebook of the book carries it (the live-JupyterLab browser test
checks that JupyterLab honours it).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import hide_solutions  # noqa: E402

NOTEBOOKS = hide_solutions.book_notebooks()
EXERCISES = re.compile(r"^#{1,6}\s+(?:[\d.]+\s+)?Exercises?\b", re.I | re.M)


def _code(src, tags=(), **jupyter):
    meta = {"tags": list(tags)} if tags else {}
    if jupyter:
        meta["jupyter"] = jupyter
    return {"cell_type": "code", "metadata": meta, "source": src, "outputs": [], "execution_count": 1}


def _md(src, **jupyter):
    return {"cell_type": "markdown", "metadata": {"jupyter": jupyter} if jupyter else {}, "source": src}


def test_the_flags_follow_the_tags():
    nb = {"cells": [_code("x = 1"), _code("# Solution 1", ["hide-cell"]), _code("plot()", ["hide-input"]),
                    _code("log()", ["hide-output", "nbval-ignore-output"]),
                    _md("```{dropdown} Answer 1\nBecause.\n```"), _md(":::{dropdown} Answer 2\nSo.\n:::"),
                    _md("## 4.2 The LSTM"), _code("y = 2", source_hidden=True)]}          # a stale flag
    assert hide_solutions.fold(nb) == 6
    flags = [c["metadata"].get("jupyter", {}) for c in nb["cells"]]
    assert flags == [{}, {"source_hidden": True, "outputs_hidden": True}, {"source_hidden": True},
                     {"outputs_hidden": True}, {"source_hidden": True}, {"source_hidden": True}, {}, {}]
    assert hide_solutions.problems(nb) == [] and hide_solutions.fold(nb) == 0           # idempotent


def test_a_missing_flag_is_reported_with_the_cell():
    nb = {"cells": [_md("intro"), _code("# Solution 2: the mask\nmask = ...", ["hide-cell"])]}
    (line,) = hide_solutions.problems(nb)
    assert line.startswith("cell 1 (code, '# Solution 2: the mask')") and "source_hidden=True" in line


def test_other_jupyter_metadata_is_kept():
    nb = {"cells": [_code("z", ["hide-cell"], collapsed=True)]}
    hide_solutions.fold(nb)
    assert nb["cells"][0]["metadata"]["jupyter"] == {"collapsed": True, "source_hidden": True,
                                                     "outputs_hidden": True}


def test_the_book_has_notebooks_with_exercises():
    with_exercises = [p for p in NOTEBOOKS if EXERCISES.search(
        "\n".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"] if c["cell_type"] == "markdown"))]
    assert len(NOTEBOOKS) >= 7 and len(with_exercises) >= 7, (NOTEBOOKS, with_exercises)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_solution_is_folded_in_lab_and_colab(path):
    nb = json.loads(path.read_text())
    bad = hide_solutions.problems(nb)
    assert not bad, f"{path.name}: run `python scripts/hide_solutions.py`:\n" + "\n".join(bad)
    md = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    if EXERCISES.search(md):                                          # exercises need folded, executed solutions
        folded = [c for c in nb["cells"] if c["cell_type"] == "code"
                  and c["metadata"].get("jupyter", {}).get("source_hidden")]
        assert folded, f"{path.name} has exercises but no folded solution cell"
        assert all(c.get("execution_count") for c in folded), f"{path.name}: a folded solution was never run"
