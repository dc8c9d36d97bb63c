"""Benchmark: the LSTM of chapter 4 (seqviz.lstm), training speed and PTB word-level perplexity.

    .venv/bin/python bench/bench_lstm.py --quick            # throughput + the `default` preset, shortened: ~2 min
    .venv/bin/python bench/bench_lstm.py                    # throughput + the `default` preset (the chapter's LSTM)
    .venv/bin/python bench/bench_lstm.py --full             # also the `full` preset (1 x 200, dropout, 5 epochs)
    .venv/bin/python bench/bench_lstm.py --presets full     # only the `full` preset

Figures go to bench/results/lstm.json (date, CPU, cores, torch version), merged with its last contents.

1. Training throughput (tokens/s) of one LSTMLM run two ways on the same batches: impl="scratch" (the LSTMCell
   loop the chapter explains, one line per equation) and impl="fused" (torch.nn.LSTM on the same parameters, what
   the notebook and the presets train with). What the notebook trains is the fused path: 1.00x by construction; the
   scratch/fused ratio says what the readable loop costs.
2. PTB test perplexity (full 10k vocabulary, stateful truncated BPTT, stateful evaluation, every word and one </s>
   per sentence predicted), beside KN5 141.2 and the published LSTM "small" of Zaremba et al. (2014), 114.5 (2 x 200,
   no dropout, 13 epochs of SGD); target here <= 120 for `full`.

What the recorded runs showed (and what was tried): bench/README.md, section bench_lstm.py.
"""
from __future__ import annotations

import argparse
import time

import torch
from _results import machine, read_results, write_results

import seqviz
from seqviz.data import Batch, Vocab, lm_batches, load_corpus, sentence_stream
from seqviz.lstm import LSTMLM, LSTMLMConfig
from seqviz.train import Constant, StepDecay, TrainConfig, Trainer, evaluate, lm_step

PUBLISHED = [("KN 5-gram (Mikolov et al. 2011)", 141.2), ("RNN LM (Mikolov & Zweig 2012)", 124.7),
             ("LSTM, non-regularized small (Zaremba et al. 2014)", 114.5),
             ("LSTM medium, dropout (Zaremba et al. 2014)", 82.7)]

# name -> (model config, training settings); the schedule owns the learning rate
PRESETS = {
    # the chapter's model (128 units, tied), one pass over PTB
    "default": (LSTMLMConfig.chapter, dict(epochs=1, lr=3e-3, schedule=Constant(), batch_size=32, bptt=35)),
    # the Elman `full` preset of bench_rnn.py with the LSTM as its recurrence: 1 x 200, tied, dropout 0.2, trained
    # exactly as it (5 epochs, two at the full rate, then halving: 3e-3, 3e-3, 1.5e-3, 7.5e-4, 3.75e-4)
    "full": (LSTMLMConfig.full, dict(epochs=5, lr=3e-3, schedule=StepDecay(gamma=0.5, every=1, start=2),
                                     batch_size=32, bptt=35)),
    # Zaremba et al.'s "small" sizes (2 x 200) with dropout and tying, trained the same way. Measured 2026-11-23:
    # 141.8 (valid 249.0 / 184.2 / 163.6 / 154.0 / 149.8 by epoch): the second layer slows learning so much that five
    # epochs of this schedule leave it behind the one-layer Elman network (Zaremba et al. trained 13 epochs)
    "zaremba_small": (LSTMLMConfig.zaremba_small, dict(epochs=5, lr=3e-3, schedule=StepDecay(gamma=0.5, every=1,
                                                                                            start=2),
                                                       batch_size=32, bptt=35)),
}


def throughput(V: int, d: int, steps: int, batch_size: int = 32, bptt: int = 35) -> dict:
    """Training tokens/s of the same LSTMLM with impl='scratch' and impl='fused' on identical random batches."""
    g = torch.Generator().manual_seed(0)
    batches = [Batch(torch.randint(V, (batch_size, bptt), generator=g),
                     torch.randint(V, (batch_size, bptt), generator=g)) for _ in range(steps + 3)]
    out = {}
    for impl in ("scratch", "fused"):
        seqviz.set_seed(0)
        model = LSTMLM(LSTMLMConfig(V, d_emb=d, d_h=d, impl=impl))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        step, carry = lm_step(stateful=True), None
        for k, batch in enumerate(batches):
            if k == 3:  # warm-up done
                t0 = time.perf_counter()
            loss, _, carry = step(model, batch, carry)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            carry = tuple(c.detach() for c in carry)
        out[impl] = steps * batch_size * bptt / (time.perf_counter() - t0)
    return out


def print_throughput(steps: int) -> list[dict]:
    print("1. Training throughput, LSTMLM (tied, 1 layer), batch 32 x 35 tokens, AdamW")
    print(f"   {'vocabulary':>10} {'d':>5} {'scratch tok/s':>14} {'fused tok/s':>12} {'scratch/fused time':>19}")
    out = []
    for V, d in ((10_000, 128), (2_004, 128), (88, 128)):
        r = throughput(V, d, steps)
        out.append({"vocab_size": V, "d": d, "scratch_tok_s": r["scratch"], "fused_tok_s": r["fused"],
                    "scratch_over_fused_time": r["fused"] / r["scratch"]})
        print(f"   {V:>10,} {d:>5} {r['scratch']:>14,.0f} {r['fused']:>12,.0f} {r['fused'] / r['scratch']:>18.2f}x")
    print("   The notebook and the presets train with impl='fused' (the default): 1.00x by construction; the scratch\n"
          "   loop is proven equal in values and gradients in tests/test_lstm.py.\n")
    return out


def train_ptb(preset: str, vocab: Vocab, ptb, max_steps: int | None = None) -> dict:
    make_config, tr = PRESETS[preset]
    skip = vocab.bos_id
    train = lm_batches(sentence_stream(ptb.sentences("train"), vocab), tr["batch_size"], tr["bptt"], skip)
    valid = lm_batches(sentence_stream(ptb.sentences("valid"), vocab), 10, tr["bptt"], skip)
    test = lm_batches(sentence_stream(ptb.sentences("test"), vocab), 10, tr["bptt"], skip)
    seqviz.set_seed(0)
    model = LSTMLM(make_config(len(vocab)))
    config = TrainConfig(epochs=tr["epochs"], max_steps=max_steps, lr=tr["lr"], schedule=tr["schedule"], clip=1.0,
                         progress=False)

    def report(trainer, event, info):
        if event == "epoch":
            print(f"   [{preset}] epoch {info['epoch']}: train loss {info['loss']:.3f}, "
                  f"lr {trainer.history.lr[-1]:.2e}", flush=True)

    t0 = time.perf_counter()
    hist = Trainer(model, config, train, valid, step=lm_step(stateful=True), callbacks=[report]).fit()
    seconds = time.perf_counter() - t0
    res = evaluate(model, test, step=lm_step(stateful=True))
    return {"preset": preset, "config": model.config, "epochs": tr["epochs"], "steps": hist.steps,
            "schedule": repr(tr["schedule"]), "seconds": seconds, "tokens_per_s": hist.tokens_per_second,
            "valid_ppl": hist.valid_perplexity, "test_ppl": res["perplexity"], "test_targets": res["targets"],
            "params": sum(p.numel() for p in model.parameters())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="also train the larger `full` preset")
    ap.add_argument("--presets", default=None, help="comma-separated presets to train, and nothing else")
    ap.add_argument("--quick", action="store_true", help="short runs: 20 timed steps, 200 training steps")
    ap.add_argument("--steps", type=int, default=40, help="timed training steps per implementation")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: seqviz.configure_threads)")
    args = ap.parse_args()
    threads = seqviz.configure_threads(args.threads)
    print(f"torch {torch.__version__}, {threads} thread(s)\n")
    only = args.presets.split(",") if args.presets else None
    if only and not set(only) <= set(PRESETS):
        ap.error(f"--presets must name presets from {sorted(PRESETS)}, got {args.presets!r}")
    figures = {k: v for k, v in (read_results("lstm") or {}).items() if k != "machine"}
    figures["published"] = {name: ppl for name, ppl in PUBLISHED}
    if not only:
        figures["throughput"] = print_throughput(20 if args.quick else args.steps)
    ptb = load_corpus("ptb")
    vocab = Vocab.build(ptb.sentences("train"))
    presets = only or ["default"] + (["full"] if args.full else [])
    max_steps = 200 if args.quick else None
    print(f"2. PTB word-level test perplexity (vocabulary {len(vocab):,}, stateful TBPTT, stateful evaluation)"
          + (" -- QUICK: 200 training steps only, not the preset's figure" if args.quick else ""))
    rows = []
    for preset in presets:
        r = train_ptb(preset, vocab, ptb, max_steps)
        c = r["config"]
        name = f"seqviz LSTMLM `{preset}`" + (" (quick, 200 steps)" if args.quick else "")
        rows.append((name, r["test_ppl"],
                     f"{c.num_layers} x {c.d_h}, tied, dropout {c.dropout}, {r['steps']} steps, "
                     f"{r['params']:,} params, {r['seconds'] / 60:.1f} min at {r['tokens_per_s']:,.0f} tok/s; "
                     f"valid PP " + " ".join(f"{v:.1f}" for v in r["valid_ppl"])
                     + f"; {r['test_targets']:,} test targets"))
    # a --quick run's perplexity is not a preset's figure: keep it out of "rows" (the ladder the appendix draws)
    key = "quick_rows" if args.quick else "rows"
    by_name = {r["name"]: r for r in figures.get(key, [])}
    stamp = {"measured": machine()["date"], "command": machine()["command"]}  # parts merge: say which run made a row
    by_name.update({name: {"name": name, "test": ppl, "note": note, **stamp} for name, ppl, note in rows})
    figures[key] = list(by_name.values())
    for other in ("ngram", "window", "rnn"):                    # chapters 1-3, as their benches last measured them
        for r in (read_results(other) or {}).get("rows", []):
            if isinstance(r.get("test"), (int, float)):
                rows.append((str(r.get("name")), r["test"], f"bench/results/{other}.json"))
    for name, ppl in PUBLISHED:
        rows.append((name, ppl, "published"))
    for name, ppl, note in rows:
        print(f"   {name:<50} {ppl:>7.1f}   {note}")
    write_results("lstm", figures)


if __name__ == "__main__":
    main()
