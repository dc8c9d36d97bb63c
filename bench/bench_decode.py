"""Benchmark: incremental decoding (seqviz.decode over RecurrentLM.step) against re-running the prefix.

    .venv/bin/python bench/bench_decode.py                 # 200 tokens, greedy and beam 4: ~1 min on one thread
    .venv/bin/python bench/bench_decode.py --tokens 100    # shorter

An RNN language model (d_emb = d_h = 128, a 10,000-word vocabulary, one layer, fused; untrained: speed does not depend
on the weights) generates 200 tokens from <s> two ways, with the same decoder loop:

- before: ``generate(model.next_token_logits, ...)``, the adapter over a score function of the whole context, as
  every model decoded before the stepper contract: token t re-runs the RNN and the output layer over all t tokens
  of the prefix, so n tokens cost O(n^2);
- after: ``generate(model, ...)``: ``RecurrentLM.step`` carries h_t, so each token is one RNN step and one output
  row, O(n) in all; beam search scores its 4 hypotheses as one batch of 4 rows.

Both produce the same tokens (checked). tokens/s counts generated positions (200 per run; a beam of 4 scores 4
hypotheses at each). Figures go to src/seqviz/recorded/decode.json.
"""
from __future__ import annotations

import argparse
import time

import torch
from _results import write_results

import seqviz
from seqviz.decode import beam_search, generate
from seqviz.rnn import RNNLM, RNNLMConfig


def timed(fn, repeats: int):
    """(best wall time over `repeats` runs, the last result)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=200, help="tokens to generate")
    ap.add_argument("--vocab", type=int, default=10_000, help="vocabulary size V")
    ap.add_argument("--d", type=int, default=128, help="d_emb = d_h")
    ap.add_argument("--beam", type=int, default=4, help="beam size")
    ap.add_argument("--repeats", type=int, default=3, help="runs per measurement (the best is kept)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: seqviz.configure_threads)")
    ap.add_argument("--quick", action="store_true", help="a smoke run (40 tokens, one repeat); writes no results")
    args = ap.parse_args()
    if args.quick:
        args.tokens, args.repeats = 40, 1
    threads = seqviz.configure_threads(args.threads)
    seqviz.set_seed(0)
    model = RNNLM(RNNLMConfig(args.vocab, d_emb=args.d, d_h=args.d)).eval()
    prompt, n = [2], args.tokens
    print(f"torch {torch.__version__}, {threads} thread(s); RNNLM V={args.vocab:,}, d={args.d}, {n} tokens from <s>\n")
    runs = {
        "greedy": lambda m: generate(m, prompt, n, greedy=True),
        f"beam {args.beam}": lambda m: beam_search(m, prompt, args.beam, n)[0][0],
    }
    rows = []
    print(f"   {'decoder':<8} {'before tok/s':>13} {'after tok/s':>12} {'speed-up':>9}   same tokens")
    for name, run in runs.items():
        t_before, before = timed(lambda: run(model.next_token_logits), max(1, args.repeats // 2))
        t_after, after = timed(lambda: run(model), args.repeats)
        if len(after) != n:
            raise RuntimeError(f"{name} generated {len(after)} tokens, expected {n}")
        row = {"decoder": name, "tokens": n, "before_tok_s": n / t_before, "after_tok_s": n / t_after,
               "speedup": t_before / t_after, "same_tokens": before == after}
        rows.append(row)
        print(f"   {name:<8} {row['before_tok_s']:>13,.0f} {row['after_tok_s']:>12,.0f} {row['speedup']:>8.1f}x   "
              f"{row['same_tokens']}")
    print("\n   before: the adapter over next_token_logits re-runs the whole prefix for every token (O(n^2));"
          "\n   after:  RecurrentLM.step carries the hidden state (O(n)); a beam's hypotheses are one batch.")
    if args.quick:
        return
    write_results("decode", {"rows": rows, "model": {"vocab_size": args.vocab, "d_emb": args.d, "d_h": args.d,
                                                     "num_layers": 1, "impl": "fused"},
                             "note": "tokens/s = generated positions per second; before = full-prefix re-run via "
                                     "the score-function adapter, after = incremental RecurrentLM.step"})


if __name__ == "__main__":
    main()
