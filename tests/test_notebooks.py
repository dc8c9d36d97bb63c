"""The stored notebooks are what the book shows (``execute_notebooks: off``): check what nbval does not.

nbval re-executes every notebook and compares text outputs, but not widget state. The book embeds each widget's
ES module from the state stored in the notebook, so a notebook executed before a widget's JS changed would ship the
old JS. These tests fail until such a notebook is re-executed.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _toc_notebooks(sections: bool = True) -> list[Path]:
    """The notebooks of _toc.yml in reading order; a chapter's sections (pages nested under it) follow it."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        for ch in part["chapters"]:
            files += [ch["file"]] + ([s["file"] for s in ch.get("sections", [])] if sections else [])
    return [ROOT / f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").exists()]


NOTEBOOKS = _toc_notebooks()


def test_the_toc_has_the_chapters():
    assert "modern_block.ipynb" in [p.name for p in NOTEBOOKS]  # sections nested under a chapter would be checked too
    names = [p.name for p in _toc_notebooks(sections=False)]
    chapters = [n for n in names if n[:2].isdigit()]
    assert chapters[:3] == ["01_ngrams.ipynb", "02_fixed_window.ipynb", "03_rnn.ipynb"]
    assert names[:len(chapters)] == sorted(chapters)  # chapters first, in lecture order


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_widgets_carry_the_current_js(path):
    nb = json.loads(path.read_text())
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    stale = []
    for model_id, model in state.items():
        s = model.get("state", {})
        cls_path = s.get("_anywidget_id")
        if not cls_path or "_esm" not in s:
            continue
        module, _, name = cls_path.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        for trait in ("_esm", "_css"):       # the page draws with both: new JS on old CSS can draw wrong
            current = getattr(cls, trait, None)
            if current is None or trait not in s:
                continue
            # a str, a path, or anywidget's FileContents (whose str() is the file's text)
            current = Path(current).read_text() if isinstance(current, Path) else str(current)
            if s[trait] != current:
                stale.append(f"{name} {trait}")
    assert not stale, (f"{path.name} stores widgets whose JS or CSS is older than the package's ({sorted(set(stale))}): "
                       f"re-execute it (jupyter nbconvert --to notebook --execute --inplace {path.name})")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_was_executed_in_order(path):
    nb = json.loads(path.read_text())
    counts = [c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert None not in counts, f"{path.name} has code cells that were never run: execute the whole notebook"
    assert counts == sorted(counts), f"{path.name} was run out of order: restart the kernel and run all cells"
    errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name} stores an error output: fix the cell and re-execute"
