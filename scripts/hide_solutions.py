"""Fold exercise solutions where students run the notebooks, as the built book folds them.

The book hides a solution by its cell tag (``hide-cell``: input and output folded; ``hide-input``, ``hide-output``)
and a conceptual answer by a ``{dropdown}`` in a markdown cell. Those reach only the built HTML. JupyterLab,
Notebook 7 and Colab read the cell metadata ``jupyter.source_hidden`` / ``jupyter.outputs_hidden`` instead, so this
script writes that metadata to match the tags: a cell tagged ``hide-cell`` gets both, ``hide-input`` the first,
``hide-output`` the second, and a markdown cell that opens with a ``{dropdown}`` (an answer) gets
``source_hidden``. Cells without such a tag lose any stale flag. Only metadata changes: sources, outputs and
execution counts are untouched, so nothing needs re-executing.

    python scripts/hide_solutions.py              # every notebook in _toc.yml, rewritten in place
    python scripts/hide_solutions.py --check      # exit 1 and list the cells that are not folded as tagged

``tests/test_solutions_collapsed.py`` runs the check on every notebook of the book.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DROPDOWN = re.compile(r"^\s*(`{3,}|:{3,})\{dropdown\}")


def wanted(cell: dict) -> dict[str, bool]:
    """The ``jupyter`` metadata flags ``cell`` should carry: {"source_hidden": bool, "outputs_hidden": bool}."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    if cell["cell_type"] == "markdown":
        return {"source_hidden": bool(DROPDOWN.match("".join(cell["source"]))), "outputs_hidden": False}
    if cell["cell_type"] != "code":
        return {"source_hidden": False, "outputs_hidden": False}
    return {"source_hidden": bool(tags & {"hide-cell", "hide-input"}),
            "outputs_hidden": bool(tags & {"hide-cell", "hide-output"})}


def current(cell: dict) -> dict[str, bool]:
    flags = cell.get("metadata", {}).get("jupyter", {})
    return {"source_hidden": bool(flags.get("source_hidden", False)),
            "outputs_hidden": bool(flags.get("outputs_hidden", False))}


def fold(nb: dict) -> int:
    """Set every cell's flags to :func:`wanted`; returns how many cells changed."""
    changed = 0
    for cell in nb["cells"]:
        want = wanted(cell)
        if current(cell) == want:
            continue
        changed += 1
        meta = cell.setdefault("metadata", {})
        flags = {k: v for k, v in meta.get("jupyter", {}).items() if k not in want}
        flags.update({k: True for k, v in want.items() if v})
        if flags:
            meta["jupyter"] = flags
        else:
            meta.pop("jupyter", None)
    return changed


def problems(nb: dict) -> list[str]:
    """One line per cell whose flags differ from :func:`wanted` (cell index and what it should be)."""
    out = []
    for i, cell in enumerate(nb["cells"]):
        want, have = wanted(cell), current(cell)
        if want != have:
            what = ", ".join(f"{k}={v}" for k, v in want.items() if have[k] != v)
            first = "".join(cell["source"]).strip().splitlines()[:1]
            out.append(f"cell {i} ({cell['cell_type']}, {first[0][:50] if first else 'empty'!r}): needs {what}")
    return out


def book_notebooks() -> list[Path]:
    """The notebooks of the book, from _toc.yml (in reading order)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_book import toc_files

    return [ROOT / f"{re.sub(r'[.](md|ipynb)$', '', f)}.ipynb" for f in toc_files()
            if (ROOT / f"{re.sub(r'[.](md|ipynb)$', '', f)}.ipynb").is_file()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in _toc.yml")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a cell is not folded as tagged")
    args = ap.parse_args(argv)
    bad = 0
    for path in args.notebooks or book_notebooks():
        raw = path.read_text(encoding="utf-8")
        nb = json.loads(raw)
        if args.check:
            for line in problems(nb):
                print(f"{path.relative_to(ROOT) if path.is_absolute() else path}: {line}")
                bad += 1
            continue
        if fold(nb):
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"folded solutions in {path}")
    if bad:
        print(f"{bad} cell(s) not folded as tagged: run `python scripts/hide_solutions.py`", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
