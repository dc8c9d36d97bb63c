"""Benchmark: the LSTM of chapter 4 (seqviz.lstm), training speed and PTB word-level perplexity.

    .venv/bin/python bench/bench_lstm.py --quick            # throughput + the `default` preset, shortened: ~2 min
    .venv/bin/python bench/bench_lstm.py                    # throughput + the `default` preset (the chapter's LSTM)
    .venv/bin/python bench/bench_lstm.py --full             # also the `full` preset (1 x 200, dropout, 5 epochs)
    .venv/bin/python bench/bench_lstm.py --presets full     # only the `full` preset
    .venv/bin/python bench/bench_lstm.py --char --agreement # chapter 4's shipped char LSTM and agreement, ~3 min

Figures go to src/seqviz/recorded/lstm.json (date, CPU, cores, torch version), merged with its last contents.

1. Training throughput (tokens/s) of one LSTMLM run two ways on the same batches: impl="scratch" (the LSTMCell
   loop the chapter explains, one line per equation) and impl="fused" (torch.nn.LSTM on the same parameters, what
   the notebook and the presets train with). What the notebook trains is the fused path: 1.00x by construction; the
   scratch/fused ratio says what the readable loop costs.
2. PTB test perplexity (full 10k vocabulary, stateful truncated BPTT, stateful evaluation, every word and one </s>
   per sentence predicted), beside KN5 141.2 and the published LSTM "small" of Zaremba et al. (2014), 114.5 (2 x 200,
   no dropout, 13 epochs of SGD); target here <= 120 for `full`.

3. --char: the shipped character LSTM of chapter 4 (seqviz.char_lstm, made by `make char-lstm`): its recipe, file,
   training time and load (from the checkpoint's record), bits per character on the whole validation and test plays
   re-measured here, and the share of real words in its samples. No training.
4. --agreement: chapter 4's agreement experiment (seqviz.agreement: Elman, GRU, LSTM language models, 4 passes over
   4,000 sentences) with --seeds seeds each: accuracy by attractors after every pass, and each LSTM's number unit
   (correlation, and accuracy with 2+ attractors when it, or a random unit, is silenced).

What the recorded runs showed (and what was tried): bench/README.md, section bench_lstm.py.
"""
from __future__ import annotations

import argparse
import math
import re
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


def _real_word_rate(text: str, words: set[str]) -> float:
    found = re.findall(r"[A-Za-z']+", text)
    return sum(w in words for w in found) / max(len(found), 1)


def char_checkpoint(seeds: int = 5) -> dict:
    """The shipped character LSTM: its record, held-out bits per character measured here, real words in samples."""
    from seqviz.char_lstm import CHECKPOINT_PATH, CHECKPOINT_SHA256, SLICE, char_loss, load_char_lstm
    from seqviz.decode import generate

    model, vocab, info = load_char_lstm()
    sh = load_corpus("shakespeare")
    c0 = time.process_time()
    valid, test = char_loss(model, vocab, sh.valid), char_loss(model, vocab, sh.test)
    eval_cpu = time.process_time() - c0
    words = set(re.findall(r"[A-Za-z']+", sh.train))
    prompt = vocab.encode(list("ROMEO.\n"))
    specials = [vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id]
    rates = {}
    for T in (0.5, 0.8, 1.0):
        texts = ["".join(vocab.decode(generate(model, prompt, 400, temperature=T, seed=s, suppress_ids=specials)))
                 for s in range(seeds)]
        rates[str(T)] = _real_word_rate(" ".join(texts), words)
    print(f"3. Shipped character LSTM ({CHECKPOINT_PATH.name}, {CHECKPOINT_PATH.stat().st_size / 1e6:.2f} MB): "
          f"{info['params']:,} parameters, made in {info['seconds'] / 60:.0f} min ({info['cpu_seconds'] / 60:.0f} CPU "
          f"min, {info['threads']} thread, load {info['load_start'][0]:.2f} -> {info['load_end'][0]:.2f})")
    print(f"   valid {valid / math.log(2):.3f}, test {test / math.log(2):.3f} bits/char here (recorded "
          f"{info['valid_bits']:.3f}, {info['test_bits']:.3f}); real words in samples: "
          + ", ".join(f"T={T} {r:.0%}" for T, r in rates.items()) + "\n")
    return {"file": CHECKPOINT_PATH.name, "bytes": CHECKPOINT_PATH.stat().st_size, "sha256": CHECKPOINT_SHA256,
            "made_by": "make char-lstm (python -m seqviz.char_lstm train, one thread)", "recipe": info["recipe"],
            "params": info["params"], "train_chars": info["train_chars"], "steps": info["steps"],
            "epoch_loss": info["epoch_loss"], "train_seconds": info["seconds"], "train_cpu_seconds": info["cpu_seconds"],
            "train_threads": info["threads"], "train_load": [info["load_start"], info["load_end"]],
            "train_torch": info["torch"], "recorded": {k: info[k] for k in ("valid_bits", "test_bits", "slice_nats")},
            "slice": list(SLICE), "valid_bits": valid / math.log(2), "test_bits": test / math.log(2),
            "eval_cpu_seconds": eval_cpu, "real_words": rates, "sample_seeds": seeds}


def agreement(seeds: int) -> dict:
    """Chapter 4's agreement experiment, ``seeds`` runs of each language model."""
    from seqviz.agreement import KINDS, ablated_correct, agreement_vocab, number_unit, train_agreement_lm
    from seqviz.data.tasks import agreement_examples

    train = agreement_examples(4000, max_phrases=4, seed=0, p_present=1.0)
    test = agreement_examples(2000, max_phrases=8, seed=1, p_present=1.0)
    hard = [e for e in test if e.phrases > 0 and e.attractors >= 2]
    vocab = agreement_vocab()
    setting = {"train": "4,000 sentences, <= 4 phrases, p_present=1", "test": "2,000 sentences, <= 8 phrases",
               "d": 64, "epochs": 4, "lr": 2e-2, "batch_size": 128, "optimizer": "AdamW, constant rate"}
    print(f"4. Agreement ({seeds} seeds per model): accuracy with 0 / 1 / 2 / 3 / 4+ attractors after 4 passes")
    rows = []
    for kind in KINDS:
        for seed in range(seeds):
            c0 = time.process_time()
            run = train_agreement_lm(kind, seed, train, test, vocab, d=64, epochs=4, lr=2e-2, batch_size=128)
            row = {"kind": kind, "seed": seed, "adjacent": run.adjacent, "by_attractors": run.accuracy(),
                   "none_vs_2plus_by_epoch": [run.accuracy((0, 2), e) for e in range(len(run.correct))],
                   "cpu_seconds": time.process_time() - c0}
            note = ""
            if kind == "LSTM":
                unit, r = number_unit(run.model, test, vocab)
                other = (unit + 1) % run.model.config.d_h
                acc = {what: ablated_correct(run.model, hard, vocab, u).float().mean().item()
                       for what, u in (("intact", None), ("unit_silenced", unit), ("other_silenced", other))}
                row["number_unit"] = {"unit": unit, "r": r, "other": other, **acc}
                note = (f" | number unit {unit} r={r:+.2f}: 2+ attractors {acc['intact']:.2f} -> "
                        f"{acc['unit_silenced']:.2f} silenced (unit {other}: {acc['other_silenced']:.2f})")
            rows.append(row)
            print(f"   {kind:>5} seed {seed}: " + " ".join(f"{a:.2f}" for a in row["by_attractors"])
                  + f"  ({row['cpu_seconds']:.1f} CPU s){note}", flush=True)
    summary = {}
    for kind in KINDS:
        two = [r["none_vs_2plus_by_epoch"][-1][1] for r in rows if r["kind"] == kind]
        summary[kind] = {"two_plus_mean": sum(two) / len(two), "two_plus_min": min(two), "two_plus_max": max(two),
                         "seeds_above_0.9": sum(a > 0.9 for a in two)}
        print(f"   {kind:>5}: 2+ attractors mean {summary[kind]['two_plus_mean']:.2f} (min {min(two):.2f}, max "
              f"{max(two):.2f}); {summary[kind]['seeds_above_0.9']} of {seeds} seeds above 0.9")
    print()
    return {"setting": setting, "seeds": seeds, "runs": rows, "summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="also train the larger `full` preset")
    ap.add_argument("--presets", default=None, help="comma-separated presets to train, and nothing else")
    ap.add_argument("--quick", action="store_true", help="short runs: 20 timed steps, 200 training steps")
    ap.add_argument("--steps", type=int, default=40, help="timed training steps per implementation")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: seqviz.configure_threads)")
    ap.add_argument("--char", action="store_true", help="only: score the shipped character LSTM (no training)")
    ap.add_argument("--agreement", action="store_true", help="only: chapter 4's agreement experiment")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per model for --agreement (and samples for --char)")
    args = ap.parse_args()
    threads = seqviz.configure_threads(args.threads)
    print(f"torch {torch.__version__}, {threads} thread(s)\n")
    if args.char or args.agreement:
        figures = {k: v for k, v in (read_results("lstm") or {}).items() if k != "machine"}
        stamp = {"measured": machine()["date"], "command": machine()["command"]}  # parts merge: say which run
        if args.char:
            figures["char_checkpoint"] = {**char_checkpoint(args.seeds), **stamp}
        if args.agreement:
            figures["agreement"] = {**agreement(args.seeds), **stamp}
        write_results("lstm", figures)
        return
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
                rows.append((str(r.get("name")), r["test"], f"src/seqviz/recorded/{other}.json"))
    for name, ppl in PUBLISHED:
        rows.append((name, ppl, "published"))
    for name, ppl, note in rows:
        print(f"   {name:<50} {ppl:>7.1f}   {note}")
    write_results("lstm", figures)


if __name__ == "__main__":
    main()
