"""The chapter recaps: the perplexity ladder so far, one rung per chapter, read from the benchmarks' recorded results.

The benchmarks (``bench/bench_*.py`` in the repository) write their figures to the package's recorded results
(``seqviz/recorded/NAME.json``), which :mod:`seqviz.results` reads back wherever the package is installed. A chapter's
recap shows the same figures as the book's Measured appendix, so no measured number in a chapter is typed by hand.

"Which model is better" depends on what each was given, so the recap's ladder is drawn at equal cost: perplexity
against the training minutes on one CPU thread (:func:`training_curves`, :func:`plot_compute`), one curve per run
from its per-epoch validation figures, its test perplexity at the end; and every rung of the table says its budget.
"""
from __future__ import annotations

import math
import os
import re

from seqviz.results import all_results, fmt, html_table, ladder, plot_rungs

__all__ = ["show_recap", "chapter_rungs", "training_curves", "plot_compute", "CHAPTERS", "FAMILY",
           "RECAP_COLUMNS"]

#: the benches that put a chapter's model on the PTB perplexity ladder, in lecture order, with the chapter they measure
CHAPTERS = {"ngram": "1 n-gram", "window": "2 fixed window", "rnn": "3 RNN", "lstm": "4 LSTM",
            "transformer": "7 transformer"}
#: what a chapter's own models are called in its bench's rows (benches also print baselines, e.g. KN5 in window.json)
FAMILY = {"ngram": ("gram",), "window": ("window",), "rnn": ("rnn", "elman"), "lstm": ("lstm", "gru"),
          "transformer": ("transformer",)}
#: the columns of a recap's table
RECAP_COLUMNS = ["chapter", "model", "perplexity", "budget", "published", "measured"]
#: one colour per chapter in the compute-matched plot (Okabe-Ito)
COLORS = {"ngram": "#000000", "window": "#009E73", "rnn": "#E69F00", "lstm": "#D55E00", "transformer": "#0072B2"}


def _rows(fig: dict) -> list[dict]:
    return [r for r in (fig or {}).get("rows", []) if isinstance(r, dict)]


def _name(row: dict) -> str:
    return str(row.get("name", row.get("model", "?")))


def _number(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def train_minutes(row: dict) -> float | None:
    """The minutes a results row says its model trained for (one thread): ``train_minutes`` (CPU time),
    ``minutes`` (wall), ``fit_s`` (an n-gram's fit), or "N min" in its ``note``; None if it says none."""
    for key, scale in (("train_minutes", 1.0), ("minutes", 1.0), ("train_seconds", 1 / 60), ("fit_s", 1 / 60)):
        if _number(row.get(key)) is not None:
            return _number(row[key]) * scale
    m = re.search(r"([\d.]+) min\b", str(row.get("note", "")))
    return float(m.group(1)) if m else None


def _curve(row: dict) -> list[tuple[float, float | None, float | None]]:
    """(minutes, validation perplexity, test perplexity) after each epoch of one row, as recorded: a ``curve`` list,
    or the ``valid PP`` figures of its note (epochs of equal length), or one point."""
    minutes, test = train_minutes(row), _number(row.get("test"))
    if isinstance(row.get("curve"), list):
        return [(c["train_minutes"], _number(c.get("valid")), _number(c.get("test"))) for c in row["curve"]]
    m = re.search(r"valid PP ((?:[\d.]+ ?)+)", str(row.get("note", "")))
    if m and minutes is not None:
        valid = [float(v) for v in m.group(1).split()]
        return [(minutes * (i + 1) / len(valid), v, test if i == len(valid) - 1 else None)
                for i, v in enumerate(valid)]
    return [] if minutes is None else [(minutes, _number(row.get("valid")), test)]


def training_curves(results: dict[str, dict], upto: str | None = None) -> list[dict]:
    """Every PTB run of the chapters up to the bench ``upto``, at equal cost: [{"bench", "model", "points":
    [(minutes, valid, test)]}] for each row of a chapter's own models (:data:`FAMILY`) with a test perplexity and a
    training time, plus chapter 1's Kneser-Ney 5-gram as a point."""
    names = _upto(upto)
    out = []
    for n in names:
        for r in _rows(results.get(n)):
            name = _name(r)
            if _number(r.get("test")) is None or not any(w in name.lower() for w in FAMILY[n]):
                continue
            if n == "ngram" and "kn 5" not in name.lower():
                continue                                               # chapter 1's point: the KN 5-gram
            points = _curve(r)
            if points:
                out.append({"bench": n, "model": name, "points": points})
    return out


def plot_compute(curves: list[dict], ax=None):
    """Perplexity against training minutes (log-log): each run's validation perplexity after every epoch as a line,
    its test perplexity at the end as a star, one colour per chapter. Returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.2))
    labelled = set()
    for c in curves:
        color = COLORS.get(c["bench"], "#777777")
        label = None if c["bench"] in labelled else f"ch. {CHAPTERS[c['bench']]}"
        labelled.add(c["bench"])
        xs = [p[0] for p in c["points"] if p[1] is not None]
        ys = [p[1] for p in c["points"] if p[1] is not None]
        if xs:
            ax.plot(xs, ys, "o-", color=color, ms=3, lw=1.2, alpha=0.8, label=label)
            label = None
        tests = [(p[0], p[2]) for p in c["points"] if p[2] is not None]
        if tests:
            x, t = tests[-1]
            ax.plot([x], [t], "*", color=color, ms=11, mec="white", mew=0.5, label=label)
    kn = [p[2] for c in curves if c["bench"] == "ngram" for p in c["points"] if p[2] is not None]
    if kn:                                                            # the n-gram's test perplexity, for reference
        ax.axhline(kn[0], color=COLORS["ngram"], lw=0.8, ls=":", alpha=0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training minutes on one CPU thread (log scale)")
    ax.set_ylabel("PTB perplexity (log scale)")
    lo, hi = ax.get_ylim()
    ticks = [t for t in (60, 80, 100, 120, 140, 160, 200, 250, 300, 400, 600, 1000) if lo <= t <= hi]
    ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.yaxis.set_minor_formatter(plt.NullFormatter())
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.1, 0.0), title_fontsize=8,
              title="lines: validation after each epoch\nstars: test at the end")
    return ax


def _upto(upto: str | None) -> list[str]:
    names = list(CHAPTERS)
    if upto is not None:
        if upto not in CHAPTERS:
            raise ValueError(f"upto must be one of {names}, got {upto!r}")
        names = names[: names.index(upto) + 1]
    return names


def _budget(fig: dict, model: str) -> str | None:
    row = next((r for r in _rows(fig) if _name(r) == model), None)
    minutes = None if row is None else train_minutes(row)
    if minutes is None:
        return None
    return f"{minutes * 60:.0f} s" if minutes < 1 else f"{minutes:.0f} min"


def chapter_rungs(results: dict[str, dict], upto: str | None = None) -> list[dict]:
    """One row per chapter of the PTB ladder up to the bench ``upto`` (all of them by default): the best measured test
    perplexity of the chapter's own models (:data:`FAMILY`; a bench's baselines are left out), the model that reached
    it and its training budget (minutes on one thread), beside the published figures that bench prints (each figure
    once, at its first chapter). A chapter whose results file is absent (or has no PTB rows) gets perplexity None and
    the command that measures it."""
    names = _upto(upto)
    rungs = ladder({n: results[n] for n in names if n in results})
    out, cited = [], set()
    for n in names:
        ours = [r for r in rungs if r["bench"] == n and r["source"] == "ours" and r["corpus"].startswith("PTB")
                and any(word in r["model"].lower() for word in FAMILY[n])]  # the chapter's models, not its baselines
        pub = [r for r in rungs if r["bench"] == n and r["source"] == "published"
               and round(r["perplexity"], 1) not in cited]
        cited.update(round(r["perplexity"], 1) for r in pub)  # a figure several benches print is listed once
        best = min(ours, key=lambda r: r["perplexity"]) if ours else None
        out.append({"chapter": CHAPTERS[n],
                    "model": best["model"] if best else f"not measured: python bench/bench_{n}.py",
                    "perplexity": best["perplexity"] if best else None,
                    "budget": _budget(results.get(n), best["model"]) if best else None,
                    "published": "; ".join(f"{r['model']}: {fmt(r['perplexity'])}" for r in pub) or None,
                    "measured": ((results.get(n) or {}).get("machine") or {}).get("date", "")[:10] or None})
    return out


def show_recap(upto: str | None = None) -> list[dict]:
    """Draw the PTB ladder up to the chapter whose bench is ``upto`` ("ngram", "window", "rnn", "lstm",
    "transformer"; None: all) at equal cost (:func:`plot_compute`), and tabulate it, one rung per chapter with its
    budget and the published figures beside ours, from the recorded results. Returns the rows."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    results = all_results()
    rungs = chapter_rungs(results, upto)
    curves = training_curves(results, upto)
    if len({c["bench"] for c in curves}) > 1:                          # a ladder to compare: at equal cost
        ax = plot_compute(curves)
        ax.set_title("The PTB ladder at equal cost, measured by bench/ (see the Measured appendix)", fontsize=10)
        ax.figure.tight_layout()
        plt.show()
    elif any(r["perplexity"] is not None for r in rungs):              # one rung: its bar
        shown = [{**r, "label": f"ch. {r['chapter']}: {r['model']}"} for r in rungs if r["perplexity"] is not None]
        ax = plot_rungs(shown, label="label")
        ax.set_xlabel("PTB test perplexity (lower is better), measured by bench/ (see the Measured appendix)")
        ax.figure.tight_layout()
        plt.show()
    display(HTML(html_table(rungs, RECAP_COLUMNS)))
    return rungs
