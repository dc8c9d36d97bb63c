"""Benchmark: the book as a class meets it: each chapter notebook's run time, and each built page's weight.

    .venv/bin/python bench/bench_book.py                    # run every notebook of _toc.yml, weigh _build/html
    .venv/bin/python bench/bench_book.py --no-run           # page weights only (after `make book`; run times kept)
    .venv/bin/python bench/bench_book.py --notebooks notebooks/03_rnn.ipynb
    .venv/bin/python bench/bench_book.py --inplace          # re-execute the chapters themselves, timing each

Run time: wall and CPU seconds of ``jupyter nbconvert --execute`` on a temporary copy (the notebook in the repository
is not touched; ``--inplace`` executes the notebook itself and keeps its outputs), kernel start and imports included,
as a student pressing "Run all" meets it. CPU seconds are the children's user + system time, so on a loaded machine
the wall time grows and the CPU time much less. Page weight:
the HTML file (which holds the widget state and the plots' text inline), the images it loads from ``_images``, and the
widget state alone; the vendored JavaScript that every page shares is counted once, separately. The design's budget is
2 MB a page.
"""
from __future__ import annotations

import argparse
import re
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import machine, read_results, write_results

ROOT = Path(__file__).resolve().parents[1]
PAGE_BUDGET_KB = 2048
WIDGET_STATE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)
IMG = re.compile(r'<img[^>]+src="([^"]+)"')
PINNED_THREADS = re.compile(r"torch\.set_num_threads\((\d+)\)")


def toc_files() -> list[str]:
    """The files of _toc.yml in reading order (root first), without suffix."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    out = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                out.append(node["file"])
            for k, v in node.items():
                if k != "file":
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    return out


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_notebook(path: Path, timeout: int, inplace: bool = False) -> dict:
    """Execute a copy of the notebook (or, with ``inplace``, the notebook itself, storing its new outputs) in its own
    folder (so relative paths work); wall and CPU seconds."""
    jupyter = Path(sys.executable).with_name("jupyter")
    with tempfile.TemporaryDirectory() as tmp:
        out = path if inplace else Path(tmp) / path.name
        cmd = [str(jupyter), "nbconvert", "--to", "notebook", "--execute", f"--ExecutePreprocessor.timeout={timeout}",
               "--output", str(out), str(path)]
        cpu0, t0 = cpu_children(), time.perf_counter()
        proc = subprocess.run(cmd, cwd=path.parent, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - t0, cpu_children() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"{path} failed to run:\n{proc.stderr[-3000:]}")
    code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    # the threads the notebook's own kernel computes with: chapters 2-8 pin them in their first code cell, so this
    # harness's torch thread count (in the machine line) is not theirs
    pinned = PINNED_THREADS.search("\n".join("".join(c["source"]) for c in code))
    return {"notebook": str(path.relative_to(ROOT)), "code cells": len(code), "wall s": wall, "CPU s": cpu,
            "torch threads": int(pinned.group(1)) if pinned else "default (one per core)"}


def page_weight(html_root: Path, name: str) -> dict | None:
    page = html_root / f"{name}.html"
    if not page.is_file():
        return None
    text = page.read_text(errors="replace")
    images = 0
    for src in set(IMG.findall(text)):
        f = (page.parent / src).resolve()
        if f.is_file() and html_root.resolve() in f.parents:
            images += f.stat().st_size
    state = sum(len(m.encode()) for m in WIDGET_STATE.findall(text))
    total = page.stat().st_size + images
    return {"page": name, "html KB": page.stat().st_size / 1024, "images KB": images / 1024,
            "widget state KB": state / 1024, "total KB": total / 1024, "within 2 MB": total / 1024 <= PAGE_BUDGET_KB}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-run", "--quick", action="store_true",
                    help="skip running the notebooks: page weights only (`make bench BENCH_ARGS=--quick`)")
    ap.add_argument("--notebooks", nargs="+", help="notebooks to run (default: every .ipynb in _toc.yml)")
    ap.add_argument("--html", default=str(ROOT / "_build" / "html"), help="the built book (default _build/html)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    ap.add_argument("--inplace", action="store_true",
                    help="execute the repository's notebooks themselves and keep their outputs (what the book shows): "
                         "one run both re-executes the chapters and times them")
    args = ap.parse_args()

    files = toc_files()
    figures: dict = {}
    if not args.no_run:
        notebooks = [Path(p).resolve() for p in args.notebooks] if args.notebooks else \
            [ROOT / f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").is_file() and f.startswith("notebooks/")]
        rows = []
        for nb in notebooks:
            rows.append(run_notebook(nb, args.timeout, args.inplace))
            r = rows[-1]
            print(f"{r['notebook']:40s} {r['wall s']:7.1f} s wall {r['CPU s']:7.1f} s CPU  ({r['code cells']} cells, "
                  f"torch threads: {r['torch threads']})")
        stamp = machine()                   # each row says which run timed it
        figures["rows"] = [{**r, "measured": stamp["date"], "load": stamp.get("load")} for r in rows]
    else:                                   # page weights only: the recorded run times stay, with their own dates
        old = read_results("book") or {}
        figures["rows"] = [{**r, "measured": r.get("measured") or old.get("machine", {}).get("date")}
                           for r in old.get("rows", [])]
    html = Path(args.html)
    if (html / "index.html").is_file():
        pages = [w for f in files if (w := page_weight(html, f))]
        for p in pages:
            print(f"{p['page']:40s} {p['total KB']:8.0f} KB (widget state {p['widget state KB']:.0f} KB)")
        figures["pages"] = pages
        vendor = html / "vendor"
        if vendor.is_dir():
            figures["shared"] = {"vendored JS/fonts KB (loaded once, cached)":
                                 sum(f.stat().st_size for f in vendor.rglob("*") if f.is_file()) / 1024}
    else:
        print(f"no built book at {html}: run `make book` for the page weights", file=sys.stderr)
    if not figures.get("rows") and not figures.get("pages"):
        raise SystemExit("nothing measured: run the notebooks (drop --no-run) or build the book first")
    write_results("book", figures)


if __name__ == "__main__":
    main()
