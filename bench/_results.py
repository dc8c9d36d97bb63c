"""Where the benchmarks put their figures: ``bench/results/NAME.json``, with the machine they were measured on.

Every ``bench/bench_NAME.py`` prints its figures and also hands them to :func:`write_results`, which writes
``bench/results/NAME.json``; the files of the reference run are committed, and the book's Measured appendix
(``book/measured.ipynb``) and the chapter recaps render them with the readers below, so no measured number on a page is
typed by hand. What a file holds, besides ``machine``: any JSON, rendered generically (a list of flat dicts is a table,
a dict of scalars a two-column table). Two keys have a meaning:

- ``rows``: the bench's main table, one dict per model or setting;
- ``published``: ``{label: value}``, figures from the literature to print beside ours. A file with ``published`` and
  rows carrying a numeric ``test`` column holds test perplexities (on the corpus named by ``corpus``, PTB if absent):
  the appendix draws those rows and the published figures as the perplexity ladder.
"""
from __future__ import annotations

import datetime
import html
import json
import math
import os
import platform
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _load() -> float | None:
    """The 1-minute load average (None where the OS has none): timings taken on a busy machine are pessimistic."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


#: the load when the bench started (this module is imported at its start), recorded beside the load at the end
_LOAD_AT_START = _load()


def machine() -> dict:
    """Date, CPU model, core count, torch version, threads and the command run: what a figure depends on."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    command = " ".join(["python", f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]]) if sys.argv and sys.argv[0] else ""
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "cpu": cpu,
            "cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "command": command,  # e.g. a --quick run, so the appendix says which figures it shows
            "load": [_LOAD_AT_START, _load()]}  # 1-min load average at the start and the end of the run


def write_results(name: str, figures: dict) -> Path:
    """Write ``{"machine": machine(), **figures}`` to bench/results/NAME.json and return the path."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **figures}, indent=1, default=float) + "\n")
    print(f"figures written to {path.relative_to(RESULTS.parent.parent)}")
    return path


# ---- reading them back (the book's Measured appendix, the chapter recaps) ------------------------------------------
#: the benches in lecture order; a results file not listed here comes after them, by name
ORDER = ("ngram", "window", "rnn", "lstm", "attention", "transformer", "summarize", "widgets", "book")


def expected(root: Path = RESULTS) -> list[str]:
    """Names of the results files the benches in ``root``'s parent folder write (bench_NAME.py -> NAME)."""
    return sorted((p.stem[len("bench_"):] for p in root.parent.glob("bench_*.py")), key=_rank)


def _rank(name: str) -> tuple:
    return (ORDER.index(name), "") if name in ORDER else (len(ORDER), name)


def read_results(name: str, root: Path = RESULTS) -> dict | None:
    """The figures in ``root/NAME.json``, or None when that bench has not been run here."""
    path = Path(root) / f"{name}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e}): run `python bench/bench_{name}.py` again to rewrite it") from e


def all_results(root: Path = RESULTS) -> dict[str, dict]:
    """Every results file in ``root``, in lecture order: {name: figures}."""
    names = sorted((p.stem for p in Path(root).glob("*.json")), key=_rank)
    return {n: read_results(n, root) for n in names}


def missing(root: Path = RESULTS) -> list[str]:
    """Benches whose results file is absent, each as the command that writes it."""
    have = {p.stem for p in Path(root).glob("*.json")}
    return [f"python bench/bench_{n}.py" for n in expected(root) if n not in have]


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


def html_table(rows, columns=None, caption: str | None = None) -> str:
    """An HTML table of a list of flat dicts (columns: the union of their keys, in first-seen order) or of a dict of
    scalars (two columns). Every cell is escaped text; numbers are right-aligned."""
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
            cells.append(f"<td{style}>{html.escape(fmt(v))}</td>")
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


# ---- the chapter recaps: one rung per chapter -----------------------------------------------------------------------
#: the benches that put a chapter's model on the PTB perplexity ladder, in lecture order, with the chapter they measure
CHAPTERS = {"ngram": "1 n-gram", "window": "2 fixed window", "rnn": "3 RNN", "lstm": "4 LSTM",
            "transformer": "6 transformer"}
#: what a chapter's own models are called in its bench's rows (benches also print baselines, e.g. KN5 in window.json)
FAMILY = {"ngram": ("gram",), "window": ("window",), "rnn": ("rnn", "elman"), "lstm": ("lstm", "gru"),
          "transformer": ("transformer",)}


def chapter_rungs(results: dict[str, dict], upto: str | None = None) -> list[dict]:
    """One row per chapter of the PTB ladder up to the bench ``upto`` (all of them by default): the best measured test
    perplexity of the chapter's own models (:data:`FAMILY`; a bench's baselines are left out) and the model that reached
    it, beside the published figures that bench prints (each figure once, at its first chapter). A chapter whose
    results file is absent (or has no PTB rows) gets perplexity None and the command that measures it."""
    names = list(CHAPTERS)
    if upto is not None:
        if upto not in CHAPTERS:
            raise ValueError(f"upto must be one of {names}, got {upto!r}")
        names = names[: names.index(upto) + 1]
    rungs = ladder({n: results[n] for n in names if n in results})
    out, cited = [], set()
    for n in names:
        ours = [r for r in rungs if r["bench"] == n and r["source"] == "ours" and r["corpus"].startswith("PTB")
                and any(word in r["model"].lower() for word in FAMILY[n])]  # the chapter's models, not its baselines
        pub = [r for r in rungs if r["bench"] == n and r["source"] == "published"
               and round(r["perplexity"], 1) not in cited]
        cited.update(round(r["perplexity"], 1) for r in pub)  # a figure several benches print is listed once
        best = min(ours, key=lambda r: r["perplexity"]) if ours else None
        out.append({"chapter": CHAPTERS[n], "model": best["model"] if best else f"not measured: python bench/bench_{n}.py",
                    "perplexity": best["perplexity"] if best else None,
                    "published": "; ".join(f"{r['model']}: {fmt(r['perplexity'])}" for r in pub) or None,
                    "measured": ((results.get(n) or {}).get("machine") or {}).get("date", "")[:10] or None})
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


def show_recap(upto: str | None = None, root: Path = RESULTS) -> list[dict]:
    """A chapter's recap: the PTB ladder so far (one bar and one table row per chapter, from bench/results) with the
    published figures; says which chapters have no results file yet. Returns the rows."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    rungs = chapter_rungs(all_results(root), upto)
    shown = [{**r, "label": f"ch. {r['chapter']}: {r['model']}"} for r in rungs if r["perplexity"] is not None]
    if shown:
        ax = plot_rungs(shown, label="label")
        ax.set_xlabel("PTB test perplexity (lower is better), measured by bench/ (see the Measured appendix)")
        ax.figure.tight_layout()
        plt.show()
    display(HTML(html_table(rungs, ["chapter", "model", "perplexity", "published", "measured"])))
    return rungs
