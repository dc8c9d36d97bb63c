"""Benchmark: the fixed-window neural LM (seqviz.window) on Penn Treebank, beside the Kneser-Ney n-gram.

    .venv/bin/python bench/bench_window.py                   # notebook preset, then the full preset (~10 min idle)
    .venv/bin/python bench/bench_window.py --presets notebook # just the chapter's run (~40 s on an idle 2-core CPU)
    .venv/bin/python bench/bench_window.py --full-epochs 1    # a shorter full run

Both neural runs predict every token of the PTB streams (words plus one </s> per sentence, 82,430 test targets),
exactly the targets the n-gram model predicts, so the perplexities are comparable. "notebook" is the run of
notebooks/02_fixed_window.ipynb (keep the two in sync); "full" is WindowConfig.full over whole epochs with
early stopping (the best model by validation is tested). Columns: "size" is the number of parameters of a network
and the number of stored n-grams (all orders) of an n-gram model; "tok/s" is training targets per second of wall
time, evaluation excluded (for an n-gram model: training tokens counted per second).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace

import torch
from _results import machine, read_results, write_results

import seqviz
from seqviz.data import Vocab, load_corpus, window_data
from seqviz.ngram import NGramLM
from seqviz.train import TrainConfig, Trainer, evaluate
from seqviz.window import WindowConfig, WindowLM

PUBLISHED = {"KN 5-gram, Mikolov et al. 2011 (test)": 141.2}


def ptb_ids():
    ptb = load_corpus("ptb")
    tokens = {s: ptb.tokens(s, eos="</s>") for s in ("train", "valid", "test")}
    vocab = Vocab.build(tokens["train"])
    return ptb, vocab, {s: vocab.encode(t) for s, t in tokens.items()}


def run(name: str, model_cfg: WindowConfig, train_cfg: TrainConfig, batch_size: int, vocab, ids) -> dict:
    seqviz.set_seed(0)
    model = WindowLM(model_cfg)
    n, eos = model_cfg.context, vocab.eos_id
    train = window_data(ids["train"], n, pad_id=eos, batch_size=batch_size, shuffle=True)
    valid = window_data(ids["valid"], n, pad_id=eos, batch_size=2048)
    test = window_data(ids["test"], n, pad_id=eos, batch_size=2048)
    last, eval_s = [0.0], [0.0]

    def time_evals(trainer, event, info):  # evaluation time is left out of the throughput
        now = time.perf_counter()
        if event == "eval":
            eval_s[0] += now - last[0]
        last[0] = now

    with tempfile.TemporaryDirectory() as tmp:
        cfg = replace(train_cfg, checkpoint=os.path.join(tmp, "best.pt"))
        trainer = Trainer(model, cfg, train, valid, callbacks=[time_evals])
        t0 = time.perf_counter()
        hist = trainer.fit()
        wall = time.perf_counter() - t0
        trainer.load_checkpoint()  # test the best model by validation, as a reader would keep it
    res_test = evaluate(model, test)
    return {
        "name": name,
        "window": n,
        "d/d_h": f"{model_cfg.d_emb}/{model_cfg.d_h}",
        "size": model.num_parameters(),
        "steps": hist.steps,
        "epochs": hist.targets / len(ids["train"]),
        "tok/s": hist.targets / (wall - eval_s[0]),
        "valid": hist.valid_perplexity[-1],
        "best valid": hist.best["valid_perplexity"],
        "test": res_test["perplexity"],
        "minutes": wall / 60,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--presets", default="notebook,full", help="comma-separated: notebook, full")
    ap.add_argument("--full-epochs", type=int, default=3, help="epochs of the full preset (early stopping on)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: SEQVIZ_THREADS or torch's)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: the notebook preset only; writes no results")
    args = ap.parse_args()
    if args.quick:
        args.presets = "notebook"
    seqviz.configure_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}")

    ptb, vocab, ids = ptb_ids()
    print(f"PTB: V = {len(vocab):,}; targets train {len(ids['train']):,}, valid {len(ids['valid']):,}, "
          f"test {len(ids['test']):,}")

    rows = []
    for n in (4, 5):
        t0 = time.perf_counter()
        lm = NGramLM(n=n, smoothing="kn").fit(ptb.sentences("train"), vocab=vocab)
        fit_s = time.perf_counter() - t0
        rows.append({"name": f"KN {n}-gram (seqviz.ngram)", "window": n - 1, "d/d_h": "-",
                     "size": sum(lm.num_ngrams(m) for m in range(1, n + 1)), "steps": "-", "epochs": 1.0,
                     "tok/s": len(ids["train"]) / fit_s, "valid": lm.perplexity(ptb.sentences("valid")),
                     "best valid": float("nan"), "test": lm.perplexity(ptb.sentences("test")),
                     "minutes": fit_s / 60})

    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    for p in presets:
        if p == "notebook":  # the chapter's run: same numbers as notebooks/02_fixed_window.ipynb
            rows.append(run("window LM, notebook", WindowConfig.tiny(len(vocab)),
                            TrainConfig(max_steps=NOTEBOOK_STEPS, lr=NOTEBOOK_LR, schedule="cosine", progress=False),
                            NOTEBOOK_BATCH, vocab, ids))
        elif p == "full":
            rows.append(run(f"window LM, full ({args.full_epochs} ep.)", WindowConfig.full(len(vocab)),
                            TrainConfig(epochs=args.full_epochs, lr=5e-3, schedule="cosine", patience=1,
                                        progress=True), 512, vocab, ids))
        else:
            raise SystemExit(f"unknown preset {p!r}: choose notebook or full")
        print_table(rows)
    if not presets:
        print_table(rows)
    for k, v in PUBLISHED.items():
        print(f"published: {k}: {v}")
    if args.quick:
        return
    # presets not run now keep their recorded rows (a `--presets notebook` run must not drop the long `full` run)
    stamp = machine()                          # every row says which run made it (kept rows keep their own)
    rows = [{**r, "measured": stamp["date"], "command": stamp["command"]} for r in rows]
    made = {r["name"] for r in rows}
    rows += [r for r in (read_results("window") or {}).get("rows", []) if r["name"] not in made]
    write_results("window", {"rows": rows, "published": PUBLISHED})


NOTEBOOK_STEPS, NOTEBOOK_LR, NOTEBOOK_BATCH = 240, 2e-2, 512


def print_table(rows: list[dict]) -> None:
    cols = ["name", "window", "d/d_h", "size", "steps", "epochs", "tok/s", "valid", "best valid", "test", "minutes"]
    fmt = {"size": "{:,}", "epochs": "{:.2f}", "tok/s": "{:,.0f}", "valid": "{:.1f}", "best valid": "{:.1f}",
           "test": "{:.1f}", "minutes": "{:.1f}"}
    def cell(value, col):
        if isinstance(value, str):
            return value
        return "-" if value != value else fmt.get(col, "{}").format(value)  # NaN: not applicable

    cells = [[cell(r[c], c) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    print()
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))
    print(flush=True)


if __name__ == "__main__":
    main()
