"""The benchmarks' recorded figures, read back: ``bench/results/NAME.json`` of the repository, as tables.

Every ``bench/bench_NAME.py`` of the repository writes its figures to ``bench/results/NAME.json`` (with the machine
they were measured on: ``bench/_results.py``, the writing side, which stays with the benchmarks). The book's Measured
appendix (``book/measured.ipynb``) and the chapter recaps (:mod:`seqviz.recap`) render those files with the readers
here, so no measured number on a page is typed by hand.

**Where the files are.** They belong to the repository, not to the installed package: :func:`results_dir` is
``$SEQVIZ_ROOT/bench/results`` when ``SEQVIZ_ROOT`` names a clone, else the first ``bench/results`` folder found in
the working directory or one of its parents (a notebook run in ``notebooks/`` or ``book/`` of a clone). Every reader
takes ``root`` to read another folder.

What a file holds, besides ``machine``: any JSON, rendered generically (a list of flat dicts is a table, a dict of
scalars a two-column table). Two keys have a meaning:

- ``rows``: the bench's main table, one dict per model or setting;
- ``published``: ``{label: value}``, figures from the literature to print beside ours. A file with ``published`` and
  rows carrying a numeric ``test`` column holds test perplexities (on the corpus named by ``corpus``, PTB if absent):
  :func:`ladder` draws those rows and the published figures as the perplexity ladder.
"""
from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path

__all__ = ["find_bench", "results_dir", "ORDER", "expected", "read_results", "all_results", "missing", "fmt",
           "html_table", "machine_line", "sections", "ladder", "plot_rungs"]


# ---- where the results are -----------------------------------------------------------------------------------------
def find_bench(start: str | os.PathLike | None = None) -> Path | None:
    """The repository's ``bench`` folder, the one holding ``results/``: ``$SEQVIZ_ROOT/bench`` when ``SEQVIZ_ROOT``
    is set and has one, else the first ``bench/results`` found in ``start`` (default: the working directory) or one
    of its parents; None when there is none (e.g. a notebook opened alone on Colab)."""
    root = os.environ.get("SEQVIZ_ROOT")
    candidates = [Path(root)] if root else []
    here = Path(start if start is not None else Path.cwd()).resolve()
    candidates += [here, *here.parents]
    for p in candidates:
        if (p / "bench" / "results").is_dir():
            return p / "bench"
    return None


def results_dir(start: str | os.PathLike | None = None) -> Path:
    """``bench/results`` of the repository (see :func:`find_bench`); a clear error where there is none."""
    bench = find_bench(start)
    if bench is None:
        raise FileNotFoundError("no bench/results folder here or above the working directory: run this inside a "
                                "clone of the seqviz repository, set SEQVIZ_ROOT to one, or pass root=")
    return bench / "results"


def _root(root) -> Path:
    return Path(root) if root is not None else results_dir()


# ---- reading them ---------------------------------------------------------------------------------------------------
#: the benches in lecture order; a results file not listed here comes after them, by name
ORDER = ("ngram", "window", "rnn", "lstm", "attention", "transformer", "translator", "summarize", "widgets", "book")


def _rank(name: str) -> tuple:
    return (ORDER.index(name), "") if name in ORDER else (len(ORDER), name)


def expected(root: str | os.PathLike | None = None) -> list[str]:
    """Names of the results files the benches in ``root``'s parent folder write (bench_NAME.py -> NAME)."""
    return sorted((p.stem[len("bench_"):] for p in _root(root).parent.glob("bench_*.py")), key=_rank)


def read_results(name: str, root: str | os.PathLike | None = None) -> dict | None:
    """The figures in ``root/NAME.json`` (default root: :func:`results_dir`), or None when that bench has not been
    run here."""
    path = _root(root) / f"{name}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e}): run `python bench/bench_{name}.py` again to rewrite "
                         "it") from e


def all_results(root: str | os.PathLike | None = None) -> dict[str, dict]:
    """Every results file in ``root``, in lecture order: {name: figures}."""
    root = _root(root)
    names = sorted((p.stem for p in root.glob("*.json")), key=_rank)
    return {n: read_results(n, root) for n in names}


def missing(root: str | os.PathLike | None = None) -> list[str]:
    """Benches whose results file is absent, each as the command that writes it."""
    root = _root(root)
    have = {p.stem for p in root.glob("*.json")}
    return [f"python bench/bench_{n}.py" for n in expected(root) if n not in have]


# ---- rendering them -------------------------------------------------------------------------------------------------
def fmt(v) -> str:
    """One cell as text: thousands separators, one decimal from 10 up, three significant digits below, '-' for NaN."""
    if isinstance(v, bool) or v is None:
        return "-" if v is None else str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.3g}"
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt(x) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k}: {fmt(x)}" for k, x in v.items())
    return str(v)


#: the most characters a cell of :func:`html_table` shows; a longer value (a stored beam search, a curve) is cut
#: there and says how much of it is left in the results file, so one record cannot swell a page
CELL_MAX = 400


def _cell(v) -> str:
    text = fmt(v)
    if len(text) <= CELL_MAX:
        return text
    return f"{text[:CELL_MAX]} … ({len(text) - CELL_MAX:,} more characters in the results file)"


def html_table(rows, columns=None, caption: str | None = None) -> str:
    """An HTML table of a list of flat dicts (columns: the union of their keys, in first-seen order) or of a dict of
    scalars (two columns). Every cell is escaped text, at most :data:`CELL_MAX` characters of it; numbers are
    right-aligned."""
    if isinstance(rows, dict):
        rows = [{"": k, "value": v} for k, v in rows.items()]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TypeError(f"html_table needs a list of dicts or a dict, got {type(rows).__name__}")
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    out = ['<table class="table sv-measured">']
    if caption:
        out.append(f"<caption>{html.escape(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in columns) + "</tr></thead><tbody>")
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c)
            num = isinstance(v, (int, float)) and not isinstance(v, bool)
            style = ' style="text-align:right"' if num else ""
            cells.append(f"<td{style}>{html.escape(_cell(v))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def machine_line(figures: dict) -> str:
    """'measured DATE on CPU (N cores, torch V, T threads) by `COMMAND`': what a file's figures depend on."""
    m = figures.get("machine") or {}
    line = (f"measured {m.get('date', '?')} on {m.get('cpu', '?')} ({m.get('cores', '?')} cores, torch "
            f"{m.get('torch', '?')}, {m.get('threads', '?')} threads, {m.get('cpu_capability', '?')})")
    line += f" by `{m['command']}`" if m.get("command") else ""
    load = [x for x in (m.get("load") or []) if x is not None]
    if load:
        busy = max(load) > 0.5 * (m.get("cores") or 1)
        line += (f"; load average {load[0]:g} at the start, {load[-1]:g} at the end"
                 + (" (a busy machine: its timings are pessimistic; perplexities and scores are not affected)"
                    if busy else ""))
    return line


def sections(figures: dict) -> list[tuple[str, str]]:
    """A results file as (title, HTML) pieces: ``rows`` first, then every other key; ``machine`` is left out."""
    keys = (["rows"] if "rows" in figures else []) + [k for k in figures if k not in ("machine", "rows")]
    out = []
    for k in keys:
        v = figures[k]
        if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
            out.append((k, html_table(v)))
        elif isinstance(v, dict) and v and all(isinstance(r, list) for r in v.values()):
            for sub, rows in v.items():  # {setting: [rows]}
                out.extend(sections({f"{k}: {sub}": rows}))
        elif isinstance(v, dict) and v and all(isinstance(r, dict) for r in v.values()):
            out.append((k, html_table([{"": name, **r} for name, r in v.items()])))
        elif isinstance(v, dict):
            out.append((k, html_table(v)))
        else:
            out.append((k, f"<p>{html.escape(fmt(v))}</p>"))
    return out


def ladder(results: dict[str, dict]) -> list[dict]:
    """The perplexity ladder: every row with a numeric ``test`` of a file that has ``published`` figures, then those
    published figures, in lecture order: [{"bench", "model", "corpus", "perplexity", "source"}] (source: "ours" or
    "published")."""
    out = []
    for name, fig in results.items():
        pub = fig.get("published")
        if not isinstance(pub, dict):
            continue
        corpus = fig.get("corpus", "PTB test")
        for r in fig.get("rows", []):
            t = r.get("test") if isinstance(r, dict) else None
            if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
                model = r.get("name", r.get("model", "?"))
                out.append({"bench": name, "model": str(model), "corpus": corpus, "perplexity": float(t),
                            "source": "ours"})
        for label, v in pub.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.append({"bench": name, "model": label, "corpus": corpus, "perplexity": float(v),
                            "source": "published"})
    return out


def plot_rungs(rungs: list[dict], ax=None, label: str = "model"):
    """A horizontal bar per rung with a numeric ``perplexity`` (``label`` names it; a ``source`` of "published" is
    grey, ours blue); rungs without a figure are left out. Returns the axes."""
    import matplotlib.pyplot as plt

    rungs = [r for r in rungs if isinstance(r.get("perplexity"), (int, float))]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.38 * max(len(rungs), 1) + 1.2))
    colors = ["#bbbbbb" if r.get("source") == "published" else "#4c72b0" for r in rungs]
    ax.barh(range(len(rungs)), [r["perplexity"] for r in rungs], color=colors)
    for y, r in enumerate(rungs):
        ax.text(r["perplexity"], y, f" {r['perplexity']:.1f}", va="center", fontsize=9)
    ax.set_yticks(range(len(rungs)), [str(r[label]) for r in rungs], fontsize=9)
    ax.invert_yaxis()
    ax.margins(x=0.15)
    return ax
