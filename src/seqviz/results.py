"""The benchmarks' recorded figures, read back as tables: ``seqviz/recorded/NAME.json``, shipped with the package.

Every ``bench/bench_NAME.py`` of the repository writes its figures to ``src/seqviz/recorded/NAME.json`` (with the
machine they were measured on: ``bench/_results.py``, the writing side, which stays with the benchmarks). The files are
package data, so a chapter run anywhere (a clone, a wheel installed on Colab) reads the same figures as the built
book: ``from seqviz import results; results.read_results("attention")``. The book's Measured appendix and the chapter
recaps (:mod:`seqviz.recap`) render them with the readers here, so no measured number on a page is typed by hand.
Every reader takes ``root`` to read another folder.

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
import re
from pathlib import Path

__all__ = ["results_dir", "BENCHES", "ORDER", "read_results", "all_results", "missing", "fmt", "html_table",
           "machine_line", "sections", "ladder", "plot_rungs"]


# ---- where the results are -----------------------------------------------------------------------------------------
def results_dir() -> Path:
    """The folder of the recorded results: ``recorded/`` inside the installed package."""
    return Path(__file__).resolve().parent / "recorded"


def _root(root) -> Path:
    return Path(root) if root is not None else results_dir()


# ---- reading them ---------------------------------------------------------------------------------------------------
#: every bench of the repository (``bench/bench_NAME.py`` writes ``NAME.json``), in lecture order
BENCHES = ("ngram", "window", "rnn", "lstm", "attention", "transformer", "translator", "summarize", "smollm", "decode",
           "widgets", "live", "book")
#: the order the Measured appendix lists results files in; a file not listed comes after them, by name
ORDER = BENCHES


def _rank(name: str) -> tuple:
    return (ORDER.index(name), "") if name in ORDER else (len(ORDER), name)


def read_results(name: str, root: str | os.PathLike | None = None) -> dict | None:
    """The figures in ``NAME.json`` of the recorded results (or of ``root``); None when that file does not exist (a
    bench that has not been run); a clear error for a name that is no bench."""
    if root is None and name not in BENCHES:
        raise ValueError(f"no bench is called {name!r}: the recorded results are {', '.join(BENCHES)}")
    path = _root(root) / f"{name}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e}): run `python bench/bench_{name}.py` again to rewrite "
                         "it") from e


def all_results(root: str | os.PathLike | None = None) -> dict[str, dict]:
    """Every results file in the recorded results (or ``root``), in lecture order: {name: figures}."""
    root = _root(root)
    names = sorted((p.stem for p in root.glob("*.json")), key=_rank)
    return {n: read_results(n, root) for n in names}


def missing(root: str | os.PathLike | None = None) -> list[str]:
    """Benches whose results file is absent, each as the command (in a clone of the repository) that writes it."""
    have = {p.stem for p in _root(root).glob("*.json")}
    return [f"python bench/bench_{n}.py" for n in BENCHES if n not in have]


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
    """One cell as HTML: the text escaped, at most :data:`CELL_MAX` characters; Markdown code spans (a preset's name as a
    bench writes it, e.g. the text `full` in backticks) become ``<code>``, so no raw backtick reaches the page."""
    text = fmt(v)
    if len(text) > CELL_MAX:
        text = f"{text[:CELL_MAX]} … ({len(text) - CELL_MAX:,} more characters in the results file)"
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text)).replace("`", "")


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
    out.append("<thead><tr>" + "".join(f"<th>{_cell(str(c))}</th>" for c in columns) + "</tr></thead><tbody>")
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c)
            num = isinstance(v, (int, float)) and not isinstance(v, bool)
            style = ' style="text-align:right"' if num else ""
            cells.append(f"<td{style}>{_cell(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def machine_line(figures: dict) -> str:
    """'measured DATE on CPU (N cores, torch V, T threads) by the command COMMAND': what a file's figures depend
    on (for the Measured appendix; a chapter shows no machine line)."""
    m = figures.get("machine") or {}
    line = (f"measured {m.get('date', '?')} on {m.get('cpu', '?')} ({m.get('cores', '?')} cores, torch "
            f"{m.get('torch', '?')}, {m.get('threads', '?')} threads, {m.get('cpu_capability', '?')})")
    line += f" by the command {m['command']}" if m.get("command") else ""
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
