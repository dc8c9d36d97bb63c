"""The chapter recaps: the perplexity ladder so far, one rung per chapter, read from the benchmarks' recorded results.

The benchmarks (``bench/bench_*.py`` in the repository) write their figures to ``bench/results/NAME.json``;
:mod:`seqviz.results` reads them back, from the repository's ``bench/results`` (found from ``SEQVIZ_ROOT`` or the
working directory upwards, :func:`find_bench`). A chapter's recap shows the same figures as the book's Measured
appendix, so no measured number in a chapter is typed by hand; where the results are not found (e.g. a notebook
opened alone on Colab), :func:`show_recap` says where to look.
"""
from __future__ import annotations

import os

from seqviz.results import all_results, find_bench, fmt, html_table, ladder, plot_rungs

__all__ = ["find_bench", "show_recap", "chapter_rungs", "CHAPTERS", "FAMILY", "RECAP_COLUMNS"]

#: the benches that put a chapter's model on the PTB perplexity ladder, in lecture order, with the chapter they measure
CHAPTERS = {"ngram": "1 n-gram", "window": "2 fixed window", "rnn": "3 RNN", "lstm": "4 LSTM",
            "transformer": "6 transformer"}
#: what a chapter's own models are called in its bench's rows (benches also print baselines, e.g. KN5 in window.json)
FAMILY = {"ngram": ("gram",), "window": ("window",), "rnn": ("rnn", "elman"), "lstm": ("lstm", "gru"),
          "transformer": ("transformer",)}
#: the columns of a recap's table
RECAP_COLUMNS = ["chapter", "model", "perplexity", "published", "measured"]


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
        out.append({"chapter": CHAPTERS[n],
                    "model": best["model"] if best else f"not measured: python bench/bench_{n}.py",
                    "perplexity": best["perplexity"] if best else None,
                    "published": "; ".join(f"{r['model']}: {fmt(r['perplexity'])}" for r in pub) or None,
                    "measured": ((results.get(n) or {}).get("machine") or {}).get("date", "")[:10] or None})
    return out


def show_recap(upto: str | None = None, start: str | os.PathLike | None = None) -> list[dict] | None:
    """Draw and tabulate the PTB perplexity ladder up to the chapter whose bench is ``upto`` ("ngram", "window",
    "rnn", "lstm", "transformer"; None: all), one rung per chapter with the published figures beside ours, from the
    repository's ``bench/results`` (:func:`find_bench` from ``start``, default the working directory). Returns the
    rows, or None (after saying why) where the repository's results are not found."""
    bench = find_bench(start)
    if bench is None:
        print("The recorded benchmark results are not here: this notebook runs outside a clone of the seqviz "
              "repository. Set SEQVIZ_ROOT to a clone, or read them in the book's Measured appendix.")
        return None
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    rungs = chapter_rungs(all_results(bench / "results"), upto)
    shown = [{**r, "label": f"ch. {r['chapter']}: {r['model']}"} for r in rungs if r["perplexity"] is not None]
    if shown:
        ax = plot_rungs(shown, label="label")
        ax.set_xlabel("PTB test perplexity (lower is better), measured by bench/ (see the Measured appendix)")
        ax.figure.tight_layout()
        plt.show()
    display(HTML(html_table(rungs, RECAP_COLUMNS)))
    return rungs
