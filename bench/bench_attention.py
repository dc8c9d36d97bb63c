"""Benchmark: attention's quadratic cost, seq2seq training throughput, and date-task exact match (chapter 5).

    .venv/bin/python bench/bench_attention.py --quick     # T up to 1024, throughput only: ~1 min
    .venv/bin/python bench/bench_attention.py             # T up to 2048, and trains the date models: minutes

1. ``seqviz.attention.attention`` (scores, softmax and weighted sum written out, the T x T weights materialised)
   against ``torch.nn.functional.scaled_dot_product_attention`` (a fused kernel) for T = 128 ... 2048, B = 1, 4
   heads, d_k = 64, float32, forward only: best wall time of a few runs, the ratio ours / SDPA, and memory as the
   PyTorch profiler sees it (the largest single allocation, and all bytes allocated during the call).
2. Seq2Seq training throughput on the date task (``tiny`` preset: bidirectional GRU encoder, GRU decoder), pairs per
   second, without attention and with dot, general and additive attention.
3. (full run only) exact match on 500 held-out dates after the chapter's training budget, with and without attention.
4. (``--translation``) German -> English on Debian's trans-de-en: BPE per language, seq2seq with and without
   attention (``--preset``, ``--epochs``), BLEU (sacrebleu) on the held-out test split for greedy and beam search.

Figures go to bench/results/attention.json.
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from _results import write_results
from torch.profiler import ProfilerActivity, profile

import seqviz
from seqviz.attention import Seq2Seq, attention, bleu, date_pairs, exact_match, translate, translation_pairs
from seqviz.train import TrainConfig, Trainer, WarmupCosine


def best_time(fn, repeats: int) -> float:
    fn()                                                         # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def memory_mb(fn) -> tuple[float, float]:
    """(largest single allocation, all bytes allocated) during one call, in MiB, from the profiler."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    sizes = [e.cpu_memory_usage for e in prof.events() if e.cpu_memory_usage > 0]
    return (max(sizes, default=0) / 2**20, sum(sizes) / 2**20)


def attention_vs_sdpa(lengths, repeats: int) -> list[dict]:
    rows = []
    for T in lengths:
        g = torch.Generator().manual_seed(T)
        q, k, v = (torch.randn(1, 4, T, 64, generator=g) for _ in range(3))      # (B, H, T, d_k)
        ours = lambda: attention(q, k, v)                                           # noqa: E731
        fused = lambda: F.scaled_dot_product_attention(q, k, v)                     # noqa: E731
        assert torch.allclose(ours()[0], fused(), atol=1e-5)
        t_ours, t_sdpa = best_time(ours, repeats), best_time(fused, repeats)
        (big_o, all_o), (big_s, all_s) = memory_mb(ours), memory_mb(fused)
        rows.append({"T": T, "ours_ms": 1e3 * t_ours, "sdpa_ms": 1e3 * t_sdpa, "ratio": t_ours / t_sdpa,
                     "ours_largest_alloc_mb": big_o, "sdpa_largest_alloc_mb": big_s,
                     "ours_alloc_total_mb": all_o, "sdpa_alloc_total_mb": all_s})
        r = rows[-1]
        print(f"T={T:>5}: ours {r['ours_ms']:8.2f} ms  SDPA {r['sdpa_ms']:8.2f} ms  ratio {r['ratio']:5.2f}  "
              f"largest allocation ours {big_o:7.1f} MiB, SDPA {big_s:6.1f} MiB")
    return rows


def throughput(task, steps: int) -> list[dict]:
    rows = []
    batches = list(task.train)[:steps]
    for attn in (None, "dot", "general", "additive"):
        seqviz.set_seed(0)
        model = Seq2Seq(task.config("tiny", attention=attn))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        t0, pairs = time.perf_counter(), 0
        for b in batches:
            _, loss = model(b.x, b.y, mask=b.mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
            pairs += b.x.shape[0]
        dt = time.perf_counter() - t0
        rows.append({"attention": attn or "none", "pairs_per_s": pairs / dt, "steps": len(batches)})
        print(f"seq2seq training, attention={attn or 'none':>8}: {pairs / dt:8.0f} pairs/s over {len(batches)} steps")
    return rows


def exact_match_table(task) -> list[dict]:
    rows = []
    for attn in (None, "general", "additive"):
        seqviz.set_seed(0)
        model = Seq2Seq(task.config("tiny", attention=attn))
        t0 = time.perf_counter()
        Trainer(model, TrainConfig(epochs=6, lr=1e-2, schedule=WarmupCosine(warmup=20), progress=False),
                task.train, task.valid).fit()
        ok = exact_match(model, task.test_src, task.test_tgt, task.src_vocab.pad_id)
        long = torch.tensor([len(s) >= 24 for s in task.test_src])
        rows.append({"attention": attn or "none", "exact_match": ok.float().mean().item(),
                     "exact_match_long": ok[long].float().mean().item(), "train_s": time.perf_counter() - t0})
        print(f"date task, attention={attn or 'none':>8}: exact match {rows[-1]['exact_match']:.3f} "
              f"(sources of 24+ characters: {rows[-1]['exact_match_long']:.3f}), {rows[-1]['train_s']:.0f} s")
    return rows


def translation_table(preset: str, epochs: int, merges: int, beam: int, device: str) -> list[dict]:
    from seqviz.data import load_corpus
    corpus = load_corpus("trans_de_en")
    task, _ = translation_pairs(corpus, num_merges=merges, batch_size=64)
    refs = [t for _, t in task.test_text]
    rows = []
    for attn in (None, "general"):
        seqviz.set_seed(0)
        model = Seq2Seq(task.config(preset, attention=attn)).to(device)
        t0 = time.perf_counter()
        Trainer(model, TrainConfig(epochs=epochs, lr=3e-3, schedule=WarmupCosine(warmup=100), progress=False),
                task.train, task.valid).fit()
        train_s = time.perf_counter() - t0
        row = {"task": "trans-de-en", "preset": preset, "attention": attn or "none", "epochs": epochs,
               "bpe_merges": merges, "test_pairs": len(refs), "train_s": train_s,
               "bleu_greedy": bleu(translate(model, task, 1), refs),
               f"bleu_beam{beam}": bleu(translate(model, task, beam), refs)}
        rows.append(row)
        print(f"trans-de-en, {preset}, attention={row['attention']:>8}: BLEU greedy {row['bleu_greedy']:.2f}, "
              f"beam {beam} {row[f'bleu_beam{beam}']:.2f} ({train_s:.0f} s training)")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="T up to 1024, throughput only (no date-task training)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per timing (the best is kept)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: seqviz.configure_threads)")
    ap.add_argument("--translation", action="store_true", help="also train on trans-de-en and report BLEU")
    ap.add_argument("--preset", default="tiny", choices=("tiny", "full"), help="Seq2Seq preset for translation")
    ap.add_argument("--epochs", type=int, default=8, help="translation training epochs")
    ap.add_argument("--merges", type=int, default=2000, help="BPE merges per language")
    ap.add_argument("--beam", type=int, default=4, help="beam width for BLEU")
    ap.add_argument("--device", default="cpu", help="device for translation training (cpu, cuda)")
    ap.add_argument("--skip-attention-timing", action="store_true", help="only the translation table")
    args = ap.parse_args()
    threads = seqviz.configure_threads(args.threads)
    lengths = [128, 256, 512, 1024] if args.quick else [128, 256, 512, 1024, 2048]
    figures = {"threads": threads, "quick": args.quick,
               "setup": "B=1, 4 heads, d_k=64, float32, forward only; memory from torch.profiler (CPU)"}
    if not args.skip_attention_timing:
        figures["attention_vs_sdpa"] = attention_vs_sdpa(lengths, args.repeats)
        task = date_pairs(6000, 300, 500, batch_size=128, seed=0)
        figures["seq2seq_throughput"] = throughput(task, 10 if args.quick else 40)
        if not args.quick:
            figures["rows"] = exact_match_table(task)
    if args.translation:
        figures["translation"] = translation_table(args.preset, args.epochs, args.merges, args.beam, args.device)
    write_results("attention" if not args.skip_attention_timing else "attention_translation", figures)


if __name__ == "__main__":
    main()
