"""Benchmark: chapter 7's headline generator on BBC news against the lead and random-sentence baselines.

    .venv/bin/python bench/bench_summarize.py                    # the default preset
    .venv/bin/python bench/bench_summarize.py --presets default full
    .venv/bin/python bench/bench_summarize.py --quick            # a smoke run (steps / 10, 30 test articles): NOT
                                                                 # the protocol, written to summarize_dev.json

Protocol: ``load_corpus("bbc")`` (train 1,656 / test 226 articles); references are the test headlines. ROUGE-1/2/L
F-measure x 100 (``seqviz.metrics.rouge``, equal to Google's rouge-score with its defaults, no stemmer), mean over
the test articles. Baselines: ``lead-k`` (the body's first k words, k = the mean training headline length in words,
rounded) and ``random sentence`` (one sentence of the body, uniformly, seed 0). Models: the package's small
transformer LM (``PretrainConfig``: 2 layers, width 128, 4 heads, context 128, BPE vocabulary of ~2,100) trained on
the δ-joined pairs x_1..x_m δ y_1..y_n </s> (article cut to its first 103 tokens, headline to 24), either from
scratch or fine-tuned from the committed checkpoint pretrained on the training bodies (``load_pretrained``), with the
loss on the summary tokens only or on every token. Headlines are decoded greedily (``full`` also with beam 4),
stopping at </s> or 24 tokens. One thread. Training time is wall time and the process's CPU time (on one thread the
CPU time is what an idle machine would take); tokens/s counts the scored targets per wall second.

Presets:
- ``default``: 300 optimizer steps of 16 sequences for each of the four models (scratch / pretrained x summary / all).
- ``full``: 1000 steps, scratch and pretrained with the summary-only loss, greedy and beam 4.

What the recorded runs showed, and what would change them: bench/README.md, section bench_summarize.py.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import machine, read_results, write_results  # noqa: E402

from seqviz import set_seed  # noqa: E402
from seqviz.data import load_corpus  # noqa: E402
from seqviz.metrics import rouge_corpus  # noqa: E402
from seqviz.summarize import (PretrainConfig, evaluate_rouge, finetune, headline_length, lead_baseline,  # noqa: E402
                              load_pretrained, random_sentence_baseline)
from seqviz.transformer import TransformerLM  # noqa: E402

PRESETS = {
    "default": {"steps": 300, "models": [("scratch", "summary"), ("scratch", "all"), ("pretrained", "summary"),
                                         ("pretrained", "all")], "methods": ["greedy"]},
    "full": {"steps": 1000, "models": [("scratch", "summary"), ("pretrained", "summary")],
             "methods": ["greedy", "beam"]},
}
LR = {"scratch": 3e-3, "pretrained": 2e-3}   # a fresh model takes a larger step; fine-tuning a smaller one
BATCH = 16


def baselines(corpus, test) -> list[dict]:
    k = headline_length(corpus.train)
    refs = [a.headline for a in test]
    return [{"name": f"lead-{k}", "preset": "-", **rouge_corpus(refs, [lead_baseline(a.body, k) for a in test])},
            {"name": "random sentence", "preset": "-",
             **rouge_corpus(refs, random_sentence_baseline([a.body for a in test], seed=0))}]


def train_and_score(preset: str, init: str, loss_on: str, steps: int, methods, corpus, test) -> list[dict]:
    model, tok, _ = load_pretrained()
    if init == "scratch":
        set_seed(0)
        model = TransformerLM(PretrainConfig().model_config(len(tok)))   # same size and tokenizer, fresh weights
    wall, cpu = time.perf_counter(), time.process_time()
    hist = finetune(model, tok, corpus.train, steps, batch_size=BATCH, lr=LR[init], loss_on=loss_on, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rows = []
    for method in methods:
        t = time.perf_counter()
        scores, hyps = evaluate_rouge(model, tok, test, method)
        rows.append({"name": f"{init}, loss on {loss_on}", "preset": preset, "decoding": method, **scores,
                     "steps": steps, "train_s": round(wall, 1), "train_cpu_s": round(cpu, 1),
                     "tokens_per_s": round(hist.targets / wall), "final_loss": round(sum(hist.step_loss[-20:]) / 20, 3),
                     "decode_s": round(time.perf_counter() - t, 1), "example": hyps[0]})
        print(f"{preset:8s} {rows[-1]['name']:28s} {method:6s} R-1 {scores['rouge1']:5.1f} R-2 {scores['rouge2']:5.1f} "
              f"R-L {scores['rougeL']:5.1f}  train {wall:.0f} s wall / {cpu:.0f} s CPU", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--presets", nargs="+", choices=sorted(PRESETS), default=["default"])
    ap.add_argument("--quick", action="store_true", help="steps / 10 and 30 test articles: a smoke run only")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    corpus = load_corpus("bbc")
    test = corpus.test[:30] if args.quick else corpus.test
    rows = baselines(corpus, test)
    for r in rows:
        print(f"{'baseline':8s} {r['name']:28s} {'':6s} R-1 {r['rouge1']:5.1f} R-2 {r['rouge2']:5.1f} "
              f"R-L {r['rougeL']:5.1f}")
    for preset in args.presets:
        p = PRESETS[preset]
        steps = max(1, p["steps"] // 10) if args.quick else p["steps"]
        for init, loss_on in p["models"]:
            rows += train_and_score(preset, init, loss_on, steps, p["methods"], corpus, test)
    # rows of presets not run now are kept from the recorded file (each preset's run keeps its own machine block)
    name = "summarize_dev" if args.quick else "summarize"
    old = read_results(name) or {}
    recorded = old.get("runs") or {p: old["machine"] for p in old.get("presets", []) if "machine" in old}
    runs = {p: m for p, m in recorded.items() if p not in args.presets}
    runs.update({p: machine() for p in args.presets})
    rows += [r for r in old.get("rows", []) if r.get("preset") not in ("-", *args.presets)]
    lead = rows[0]
    models = [r for r in rows[2:]]
    best = max(models, key=lambda r: r["rougeL"])
    goal = {"lead_rougeL": lead["rougeL"], "best_model": f"{best['name']} ({best['preset']}, {best['decoding']})",
            "best_rougeL": best["rougeL"], "beats_lead": best["rougeL"] > lead["rougeL"],
            "margin_rougeL": round(best["rougeL"] - lead["rougeL"], 2)}
    print(f"goal: best model R-L {best['rougeL']:.1f} vs lead {lead['rougeL']:.1f} "
          f"({'beats' if goal['beats_lead'] else 'misses by'} {abs(goal['margin_rougeL']):.1f})")
    write_results(name, {"rows": rows, "goal": goal, "test_articles": len(test), "runs": runs,
                         "pretrained": {"checkpoint": "src/seqviz/checkpoints/bbc_lm.pt", **load_pretrained()[2]}})


if __name__ == "__main__":
    main()
