"""Benchmark: the RNN language model of chapter 3 (seqviz.rnn), speed and PTB perplexity.

    .venv/bin/python bench/bench_rnn.py                   # throughput, KN 5-gram, `default` preset (1 epoch): ~5 min
    .venv/bin/python bench/bench_rnn.py --full            # also the `full` preset (d=200, 5 epochs): +~30-60 min
    .venv/bin/python bench/bench_rnn.py --presets full    # only the `full` preset (no throughput, no n-gram)
    .venv/bin/python bench/bench_rnn.py --quick           # throughput only, ~1 min

Times are for one thread of a 2-core machine shared with other work; two free cores are faster. Figures go to
src/seqviz/recorded/rnn.json, merged with its last contents (a run of one part keeps the other parts).

1. Training throughput (tokens/s) of one RNNLM run two ways, side by side on the same batches: impl="scratch"
   (the ElmanCell loop the chapter explains) and impl="fused" (torch.nn.RNN running on the same parameters, what the
   notebook trains with). The target is that the trained path is at most 1.5x slower than fused: it *is* fused.
2. Word-level perplexity on the whole PTB test set (full 10k vocabulary, stateful evaluation), with the book's
   convention: every word plus one </s> per sentence is predicted; <s> is context only (82,430 predictions, minus
   the few tokens the batch layout drops at the end). Printed beside the chapter-1 Kneser-Ney 5-gram and the
   published RNN LM figure, 124.7 (Mikolov & Zweig 2012).
"""
from __future__ import annotations

import argparse
import time

import torch
from _results import machine, read_results, write_results

import seqviz
from seqviz.data import Batch, Vocab, lm_batches, load_corpus, sentence_stream
from seqviz.rnn import RNNLM, RNNLMConfig
from seqviz.train import Constant, StepDecay, TrainConfig, Trainer, evaluate, lm_step

PUBLISHED = [("KN 5-gram (Mikolov et al. 2011)", 141.2), ("RNN LM (Mikolov & Zweig 2012)", 124.7),
             ("LSTM, non-regularized small (Zaremba et al. 2014)", 114.5)]

# name -> (model config, training settings); the schedule owns the learning rate (StepDecay: x0.5 after every epoch)
PRESETS = {
    "default": (RNNLMConfig, dict(epochs=1, lr=3e-3, schedule=Constant(), batch_size=32, bptt=35)),
    # 3 epochs halving from the 2nd reached 142.4 with valid still falling (204.1/166.5/150.6): two more epochs, the
    # first two at the full rate, then halving (3e-3, 3e-3, 1.5e-3, 7.5e-4, 3.75e-4)
    "full": (RNNLMConfig.full, dict(epochs=5, lr=3e-3, schedule=StepDecay(gamma=0.5, every=1, start=2),
                                    batch_size=32, bptt=35)),
}


def throughput(V: int, d: int, steps: int, batch_size: int = 32, bptt: int = 35) -> dict:
    """Training tokens/s of the same RNNLM with impl='scratch' and impl='fused' on identical random batches."""
    g = torch.Generator().manual_seed(0)
    batches = [Batch(torch.randint(V, (batch_size, bptt), generator=g),
                     torch.randint(V, (batch_size, bptt), generator=g)) for _ in range(steps + 3)]
    out = {}
    for impl in ("scratch", "fused"):
        seqviz.set_seed(0)
        model = RNNLM(RNNLMConfig(V, d_emb=d, d_h=d, impl=impl))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        step = lm_step(stateful=True)
        carry = None
        for k, batch in enumerate(batches):
            if k == 3:  # warm-up done
                t0 = time.perf_counter()
            loss, _, carry = step(model, batch, carry)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            carry = carry.detach()
        out[impl] = steps * batch_size * bptt / (time.perf_counter() - t0)
    return out


def train_ptb(preset: str, vocab: Vocab, ptb) -> dict:
    make_config, tr = PRESETS[preset]
    train_ids = sentence_stream(ptb.sentences("train"), vocab)
    valid_ids = sentence_stream(ptb.sentences("valid"), vocab)
    test_ids = sentence_stream(ptb.sentences("test"), vocab)
    skip = vocab.bos_id
    train = lm_batches(train_ids, tr["batch_size"], tr["bptt"], skip_target=skip)
    valid = lm_batches(valid_ids, 10, tr["bptt"], skip_target=skip)
    test = lm_batches(test_ids, 10, tr["bptt"], skip_target=skip)
    seqviz.set_seed(0)
    model = RNNLM(make_config(len(vocab)))
    config = TrainConfig(epochs=tr["epochs"], lr=tr["lr"], schedule=tr["schedule"], clip=1.0, progress=False)

    def report(trainer, event, info):
        if event == "epoch":
            print(f"   [{preset}] epoch {info['epoch']}: train loss {info['loss']:.3f}, "
                  f"lr {trainer.history.lr[-1]:.2e}", flush=True)

    t0 = time.perf_counter()
    hist = Trainer(model, config, train, valid, step=lm_step(stateful=True), callbacks=[report]).fit()
    seconds = time.perf_counter() - t0
    res = evaluate(model, test, step=lm_step(stateful=True))
    return {"preset": preset, "config": model.config, "epochs": tr["epochs"], "schedule": repr(tr["schedule"]),
            "lr_per_epoch": [hist.lr[min(k * len(train), len(hist.lr) - 1)] for k in range(tr["epochs"])],
            "seconds": seconds,
            "tokens_per_s": hist.tokens_per_second, "valid_ppl": hist.valid_perplexity,
            "test_ppl": res["perplexity"], "test_targets": res["targets"],
            "params": sum(p.numel() for p in model.parameters())}


def kneser_ney_5gram(ptb) -> float:
    from seqviz.ngram import NGramConfig, NGramLM

    return NGramLM(NGramConfig.full()).fit(ptb.sentences("train")).perplexity(ptb.sentences("test"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="also train the larger `full` preset")
    ap.add_argument("--presets", default=None, help="comma-separated presets to train, and nothing else")
    ap.add_argument("--quick", action="store_true", help="throughput only")
    ap.add_argument("--steps", type=int, default=40, help="timed training steps per implementation")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: seqviz.configure_threads)")
    args = ap.parse_args()
    threads = seqviz.configure_threads(args.threads)
    print(f"torch {torch.__version__}, {threads} thread(s)\n")
    only = args.presets.split(",") if args.presets else None
    if only and not set(only) <= set(PRESETS):
        ap.error(f"--presets must name presets from {sorted(PRESETS)}, got {args.presets!r}")
    # figures merge into src/seqviz/recorded/rnn.json, so a run of one part keeps the other parts' last figures
    figures = {k: v for k, v in (read_results("rnn") or {}).items() if k != "machine"}
    figures["published"] = {name: ppl for name, ppl in PUBLISHED}
    if not only:
        figures["throughput"] = print_throughput(args.steps)
    if args.quick:
        write_results("rnn", figures)
        return
    ptb = load_corpus("ptb")
    vocab = Vocab.build(ptb.sentences("train"))
    presets = only or ["default"] + (["full"] if args.full else [])
    print(f"2. PTB word-level test perplexity (vocabulary {len(vocab):,}, stateful TBPTT, stateful evaluation)")
    rows = []
    if not only:
        t0 = time.perf_counter()
        kn = kneser_ney_5gram(ptb)
        rows.append(("seqviz KN 5-gram (chapter 1)", kn, f"fit + score {time.perf_counter() - t0:.0f} s"))
    for preset in presets:
        r = train_ptb(preset, vocab, ptb)
        c = r["config"]
        rows.append((f"seqviz RNNLM `{preset}`", r["test_ppl"],
                     f"d={c.d_h}, tied, dropout {c.dropout}, {r['epochs']} epoch(s), lr "
                     + "/".join(f"{lr:.1e}" for lr in r["lr_per_epoch"]) + f", {r['params']:,} params, "
                     f"{r['seconds'] / 60:.1f} min at {r['tokens_per_s']:,.0f} tok/s; valid PP "
                     + " ".join(f"{v:.1f}" for v in r["valid_ppl"]) + f"; {r['test_targets']:,} test targets"))
    by_name = {r["name"]: r for r in figures.get("rows", [])}
    stamp = {"measured": machine()["date"], "command": machine()["command"]}  # parts merge: say which run made a row
    by_name.update({name: {"name": name, "test": ppl, "note": note, **stamp} for name, ppl, note in rows})
    figures["rows"] = list(by_name.values())
    for name, ppl in PUBLISHED:
        rows.append((name, ppl, "published"))
    for name, ppl, note in rows:
        print(f"   {name:<50} {ppl:>7.1f}   {note}")
    write_results("rnn", figures)


def print_throughput(steps: int) -> list[dict]:
    print("1. Training throughput, RNNLM (tied, 1 layer), batch 32 x 35 tokens, AdamW")
    print(f"   {'vocabulary':>10} {'d':>5} {'scratch tok/s':>14} {'fused tok/s':>12} {'scratch/fused time':>19}")
    out = []
    for V, d in ((10_000, 128), (2_004, 128), (2_004, 32)):
        r = throughput(V, d, steps)
        out.append({"vocab_size": V, "d": d, "scratch_tok_s": r["scratch"], "fused_tok_s": r["fused"],
                    "scratch_over_fused_time": r["fused"] / r["scratch"]})
        print(f"   {V:>10,} {d:>5} {r['scratch']:>14,.0f} {r['fused']:>12,.0f} {r['fused'] / r['scratch']:>18.2f}x")
    print("   The notebook and the presets train with impl='fused' (the default), so the trained path is the fused "
          "one:\n   1.00x by construction; the scratch loop is proven equal in tests/test_rnn.py.\n")
    return out


if __name__ == "__main__":
    main()
