"""Benchmark: seqviz.ngram against NLTK's nltk.lm on Penn Treebank (fit time, scoring time, perplexity, memory).

    .venv/bin/python bench/bench_ngram.py            # full: PTB train, whole test set (NLTK on a prefix), ~10 min
    .venv/bin/python bench/bench_ngram.py --quick    # 5,000 training sentences, short NLTK prefixes, ~1 min

Every model runs in its own fresh process, so time and memory are not shared. Perplexity follows the book's
convention for both libraries: every word plus one </s> per sentence is predicted, from n-1 <s> of padding
(82,430 predictions on PTB test). NLTK is fitted the way its documentation shows (padded_everygram_pipeline)
and then scored with ``logscore`` on exactly those predictions. NLTK's Kneser-Ney scores a few sentences per
second at best, so it is scored on a prefix of the test set and its whole-test time is extrapolated in proportion
to the number of predictions; the table says which rows are extrapolated. Peak memory is the growth of the
process's peak resident set (VmHWM, reset just before fitting) over its size before fitting. A full run (not
--quick) writes its table to src/seqviz/recorded/ngram.json for the book's Measured appendix.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import time

from _results import write_results

JOBS = {  # name -> (library, smoothing, n)
    "seqviz KN 3-gram": ("seqviz", "kn", 3),
    "seqviz KN 5-gram": ("seqviz", "kn", 5),
    "seqviz Laplace 3-gram": ("seqviz", "laplace", 3),
    "seqviz ScratchKN 3-gram": ("scratch", "kn", 3),  # the dict version the chapter shows: same numbers, slower
    "NLTK Laplace 3-gram": ("nltk", "laplace", 3),
    "NLTK KN 3-gram": ("nltk", "kn", 3),
    "NLTK KN 5-gram": ("nltk", "kn", 5),
}


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # Linux >= 4.0: reset VmHWM to the current RSS
        return True
    except OSError:
        return False


def run_job(name: str, quick: bool, prefix: int) -> dict:
    """Fit one model on PTB train and score PTB test; returns the measurements."""
    import numpy as np

    from seqviz.data import load_corpus

    library, smoothing, n = JOBS[name]
    ptb = load_corpus("ptb")
    train, test = ptb.sentences("train"), ptb.sentences("test")
    if quick:
        train = train[:5000]
    n_pred = sum(len(s) + 1 for s in test)
    gc.collect()
    reset = _reset_peak()
    before = _rss_mb("VmRSS")
    out = {"name": name, "train_sentences": len(train), "test_predictions": n_pred}

    if library in ("seqviz", "scratch"):
        from seqviz.ngram import NGramLM, ScratchKN

        t0 = time.perf_counter()
        lm = (NGramLM if library == "seqviz" else ScratchKN)(n=n, smoothing=smoothing).fit(train)
        out["fit_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        lp = lm.logprobs(test)
        out["score_s"] = time.perf_counter() - t0
        out["scored_predictions"] = len(lp)
        out["ppl"] = float(np.exp(-lp.mean()))
        k = sum(len(s) + 1 for s in test[:prefix])
        out["ppl_prefix"] = float(np.exp(-lp[:k].mean()))
        out["table_mb"] = lm.nbytes / 2**20 if library == "seqviz" else None
    else:
        from nltk.lm import KneserNeyInterpolated, Laplace
        from nltk.lm.preprocessing import padded_everygram_pipeline

        t0 = time.perf_counter()
        model = KneserNeyInterpolated(n) if smoothing == "kn" else Laplace(n)
        model.fit(*padded_everygram_pipeline(n, train))
        out["fit_s"] = time.perf_counter() - t0
        scored = test if smoothing == "laplace" else test[:prefix]  # Laplace is fast enough for all of it
        t0 = time.perf_counter()
        lp = []
        for s in scored:
            p = ["<s>"] * (n - 1) + s + ["</s>"]
            for i in range(n - 1, len(p)):
                lp.append(model.logscore(p[i], p[i - n + 1:i]) * math.log(2))  # NLTK logs are base 2
        out["score_s"] = time.perf_counter() - t0
        out["scored_predictions"] = len(lp)
        k = sum(len(s) + 1 for s in test[:prefix])
        out["ppl_prefix"] = float(np.exp(-np.mean(lp[:k])))
        out["ppl"] = float(np.exp(-np.mean(lp))) if len(lp) == n_pred else None
    out["peak_mb"] = (_rss_mb("VmHWM") if reset else _ru_maxrss_mb()) - before
    return out


def _ru_maxrss_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5,000 training sentences and short NLTK prefixes")
    ap.add_argument("--prefix", type=int, default=None,
                    help="test sentences NLTK's Kneser-Ney scores (default 20, or 5 with --quick)")
    ap.add_argument("--no-nltk", action="store_true", help="only seqviz")
    ap.add_argument("--job", help=argparse.SUPPRESS)  # internal: run one job in this process, print JSON
    args = ap.parse_args()
    prefix = args.prefix or (5 if args.quick else 20)
    if args.job:
        print(json.dumps(run_job(args.job, args.quick, prefix)))
        return

    env = dict(os.environ, OMP_NUM_THREADS="2", MKL_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    rows = []
    for name, (library, _, _) in JOBS.items():
        if args.no_nltk and library == "nltk":
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, __file__, "--job", name, "--prefix", str(prefix)] + (["--quick"] if args.quick else [])
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if res.returncode != 0:
            raise SystemExit(f"{name} failed:\n{res.stderr}")
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))

    N = rows[0]["test_predictions"]
    print(f"\nPTB, {rows[0]['train_sentences']:,} training sentences{' (--quick)' if args.quick else ''}; "
          f"test = {N:,} predictions (every word + one </s> per sentence).")
    print(f"NLTK Kneser-Ney is scored on the first {prefix} test sentences; '*' marks times extrapolated to "
          "the whole test set in proportion to predictions.\n")
    head = (f"{'model':<24} {'fit s':>8} {'score s':>10} {'fit+score s':>12} {'PPL test':>9} "
            f"{'PPL prefix':>11} {'peak MB':>8}")
    print(head)
    print("-" * len(head))
    for r in rows:
        full = r["scored_predictions"] == N
        score = r["score_s"] * N / r["scored_predictions"]
        star = " " if full else "*"
        ppl = f"{r['ppl']:.1f}" if r["ppl"] is not None else "-"
        r["total_s"] = r["fit_s"] + score
        print(f"{r['name']:<24} {r['fit_s']:>8.2f} {score:>9.1f}{star} {r['total_s']:>11.1f}{star} {ppl:>9} "
              f"{r['ppl_prefix']:>11.1f} {r['peak_mb']:>8.0f}")
    by = {r["name"]: r for r in rows}
    for n in (3, 5):
        ours, theirs = by.get(f"seqviz KN {n}-gram"), by.get(f"NLTK KN {n}-gram")
        if ours and theirs:
            print(f"\nKN {n}-gram end to end (fit + whole test): seqviz {ours['total_s']:.1f} s, NLTK "
                  f"~{theirs['total_s'] / 3600:.2f} h (extrapolated): {theirs['total_s'] / ours['total_s']:,.0f}x; "
                  f"peak memory {ours['peak_mb']:.0f} MB vs {theirs['peak_mb']:.0f} MB.")
    scratch, kn3 = by.get("seqviz ScratchKN 3-gram"), by.get("seqviz KN 3-gram")
    if scratch and kn3:
        print(f"\nScratchKN (dicts, one query at a time) vs NGramLM (ranked ids), KN 3-gram: perplexity "
              f"{scratch['ppl']:.4f} vs {kn3['ppl']:.4f}; fit + score {scratch['total_s']:.1f} s vs "
              f"{kn3['total_s']:.1f} s ({scratch['total_s'] / kn3['total_s']:.0f}x).")
    kn5 = by.get("seqviz KN 5-gram")
    if kn5 and not args.quick:
        print(f"seqviz modified KN 5-gram PTB test perplexity {kn5['ppl']:.1f} "
              f"(published: 141.2, Mikolov et al. 2011; target <= 148); fit + score {kn5['total_s']:.1f} s "
              f"(target <= 30 s); tables {kn5['table_mb']:.0f} MB.")
    if not args.quick:
        write_results("ngram", {
            "rows": [{"model": r["name"], "fit_s": r["fit_s"], "score_s": r["score_s"] * N / r["scored_predictions"],
                      "extrapolated": r["scored_predictions"] != N, "test": r["ppl"], "ppl_prefix": r["ppl_prefix"],
                      "peak_mb": r["peak_mb"]} for r in rows],
            "published": {"KN 5-gram (Mikolov et al. 2011)": 141.2}, "corpus": "PTB", "test_predictions": N,
            "nltk_prefix_sentences": prefix,
            "note": "test = PTB test perplexity over every word + one </s> per sentence (None: scored on a prefix "
                    "only); score_s of extrapolated rows is scaled to the whole test set"})
    print("\nPPL prefix: both libraries on the same prefix. NLTK's KN uses one discount (0.1) and no discount at "
          "the unigram level; ours is modified KN (three discounts per order, Chen & Goodman 1999).")


if __name__ == "__main__":
    main()
