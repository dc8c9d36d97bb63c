"""The chapter recaps: the perplexity ladder so far, read from the benchmarks' recorded results.

The benchmarks (``bench/bench_*.py`` in the repository) write their figures to ``bench/results/NAME.json``, and the
book's Measured appendix renders those files; a chapter's recap shows the same figures, one rung per chapter, so no
measured number in a chapter is typed by hand. The reader lives with the benchmarks (``bench/_results.py``), which
are part of the repository, not of the installed package: :func:`show_recap` finds them from the working directory
(a notebook run inside a clone) or ``SEQVIZ_ROOT``, and says where to look when it cannot (e.g. a notebook opened
alone on Colab).
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def find_bench(start: str | os.PathLike | None = None) -> Path | None:
    """The repository's ``bench`` folder: ``$SEQVIZ_ROOT/bench``, else the first ``bench/_results.py`` found in
    ``start`` (default: the working directory) or one of its parents; None when there is none."""
    root = os.environ.get("SEQVIZ_ROOT")
    candidates = [Path(root)] if root else []
    here = Path(start if start is not None else Path.cwd()).resolve()
    candidates += [here, *here.parents]
    for p in candidates:
        if (p / "bench" / "_results.py").is_file():
            return p / "bench"
    return None


def show_recap(upto: str | None = None, start: str | os.PathLike | None = None) -> list[dict] | None:
    """Draw and tabulate the PTB perplexity ladder up to the chapter whose bench is ``upto`` ("ngram", "window",
    "rnn", "lstm", "transformer"; None: all), one rung per chapter with the published figures beside ours. Returns
    the rows, or None (after saying why) where the repository's benchmarks are not found."""
    bench = find_bench(start)
    if bench is None:
        print("The recorded benchmark results are not here: this notebook runs outside a clone of the seqviz "
              "repository. Set SEQVIZ_ROOT to a clone, or read them in the book's Measured appendix.")
        return None
    spec = importlib.util.spec_from_file_location("_seqviz_bench_results", bench / "_results.py")
    results = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(results)
    return results.show_recap(upto, root=bench / "results")
