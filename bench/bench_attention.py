"""Benchmark: attention's quadratic cost, seq2seq training throughput, date-task exact match, and translation BLEU
with paired bootstrap significance (chapter 5). Figures go to src/seqviz/recorded/attention.json.

    .venv/bin/python bench/bench_attention.py --quick     # 1 and 2 with T up to 1024: about a minute
    .venv/bin/python bench/bench_attention.py             # 1 to 3, T up to 2048: minutes
    .venv/bin/python bench/bench_attention.py --threads 1 --translation --epochs 30   # 1 to 4, the reference run:
                                                          # about 25 min on one CPU thread

1. ``seqviz.attention.attention`` (scores, softmax and weighted sum written out, the T x T weights materialised)
   against ``torch.nn.functional.scaled_dot_product_attention`` (a fused kernel) for T = 128 ... 2048, B = 1, 4
   heads, d_k = 64, float32, forward only: best wall time of a few runs, the ratio ours / SDPA, and memory as the
   PyTorch profiler sees it (the largest single allocation, and all bytes allocated during the call).
2. ``seqviz.seq2seq.Seq2Seq`` training throughput on the date task (``tiny`` preset: bidirectional GRU encoder, GRU
   decoder), pairs per second, without attention and with dot, general and additive attention.
3. (not with ``--quick``) exact match on 500 held-out dates after the chapter's training budget, with and without
   attention.
4. (``--translation``) German -> English on Debian's trans-de-en, pairs of at most ``--max-words`` words a side (every
   split): BPE per language, seq2seq with and without attention (``--preset small``: bidirectional GRU encoder and GRU
   decoder of 256, Luong "general" attention; Adam, warm-up and cosine decay, teacher forcing; the best epoch by
   validation loss is kept), BLEU (sacrebleu) on the held-out test split for greedy and length-normalised beam search
   (``seqviz.seq2seq.translate``: one length cap per sentence for both), a few held-out alignments of the attention
   model (chapter 5's heatmap), two recorded beam searches of it on which beam and greedy part (chapter 5's BeamTree,
   ``translation_beams``), and paired bootstrap resampling (Koehn, 2004; ``seqviz.metrics.paired_bootstrap``) of
   attention vs none and of beam vs greedy: the difference, its 95% interval and p (``translation_significance``).

5. (``--bottleneck``) the bottleneck on a task whose information grows with the source: reverse a random string
   of 4-24 letters; with and without attention, several seeds, until the validation loss flattens (best epoch
   kept); exact match and per-character accuracy by source length (``bottleneck``).
6. (``--scheduled-sampling``) dates without attention: teacher forcing vs scheduled sampling (Bengio et al., 2015;
   eps decayed per update, one row per ``--ss-k``), free-running exact match, several seeds (``scheduled_sampling``).
7. (``--dates-long``) the dates with and without attention at ten times the chapter's budget (60 epochs), several
   seeds: exact match overall and by source length (``dates_long``): slow learning or a bottleneck?

8. (``--shipped``) the shipped date transformer (``checkpoints/dates_transformer.pt``, chapter 7 loads it): its
   exact match on the 500 held-out dates, measured here, beside its build record (``dates_shipped``); seconds.

9. (``--dates-more``) the chapter's 6-epoch date model without attention, trained on for ``--more-epochs`` more epochs
   of the same recipe, exactly as chapter 5 runs it live (``dates_more``): its exact match before and after, overall
   and by source length; the chapter checks its own run against this record. Seconds.

5 to 9 rewrite only their own part of attention.json (with a ``*_machine`` record) and keep the rest; about 7 and 4
minutes on one thread. ``--skip-attention-timing`` runs only 4 and writes attention_translation.json instead. Why 30 epochs, and the history
of the reference run: bench/README.md.
"""
from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn.functional as F
from _results import machine, read_results, write_results
from torch.profiler import ProfilerActivity, profile

import seqviz
from seqviz.attention import attention
from seqviz.data import date_pairs, pad_batch, translation_pairs
from seqviz.metrics import bleu, exact_match, paired_bootstrap
from seqviz.seq2seq import Seq2Seq, Seq2SeqConfig, inverse_sigmoid_decay, translate
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
        model = Seq2Seq(Seq2SeqConfig.for_task(task, "tiny", attention=attn))
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
        model = Seq2Seq(Seq2SeqConfig.for_task(task, "tiny", attention=attn))
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


def alignment_examples(model, task, n: int = 3, max_pieces: int = 10) -> list[dict]:
    """Held-out alignments of the attention model: the first ``n`` test sources of at most ``max_pieces`` pieces,
    greedy output pieces and the weights (T_out, S), rounded to 3 decimals, for chapter 5's heatmap."""
    from seqviz.data import pad_batch
    device = next(model.parameters()).device
    idx = [i for i, s in enumerate(task.test_src) if len(s) <= max_pieces][:n]
    out = []
    for i in idx:
        x, mask = pad_batch([task.test_src[i]], task.src_vocab.pad_id)
        seqs, w = model.greedy(x.to(device), mask.to(device), max_new_tokens=2 * max_pieces + 5,
                               return_attention=True)
        T = len(seqs[0])
        out.append({"source": [task.src_vocab.itos[j] for j in task.test_src[i]],
                    "output": [task.tgt_vocab.itos[j] for j in seqs[0]],
                    "reference": task.test_text[i][1],
                    "weights": [[round(float(a), 3) for a in row] for row in w[0, :T].tolist()]})
    return out


def beam_examples(model, task, beam: int, length_penalty: float, n: int = 2, max_pieces: int = 10,
                  look: int = 60) -> list[dict]:
    """Recorded beam searches of the attention model for chapter 5's BeamTree: the first ``n`` of the first ``look``
    test sources of at most ``max_pieces`` pieces on which the beam's best output differs from greedy's, searched
    as ``translate`` does (same cap, same length penalty), with the trace's token ids renumbered to the labels it
    uses (``BeamTrace.to_dict``), so each example stores its own few dozen labels, not the vocabulary."""
    from seqviz.decode import beam_search
    device = next(model.parameters()).device
    bos, eos = task.tgt_vocab.bos_id, task.tgt_vocab.eos_id
    out = []
    for i in [i for i, s in enumerate(task.test_src) if len(s) <= max_pieces][:look]:
        s = task.test_src[i]
        with torch.no_grad():
            _, trace = beam_search(model.bind(torch.tensor([s], device=device)), [bos], beam, 2 * len(s) + 10,
                                   stop_id=eos, length_penalty=length_penalty, trace=True, with_greedy=True)
        best, greedy = list(trace.hypotheses[0][0]), [t for t, _ in trace.greedy]
        if best == greedy:
            continue
        used = trace.token_ids()
        out.append({"test_index": i, "source": [task.src_vocab.itos[j] for j in s],
                    "reference": task.test_text[i][1],
                    "beam": [task.tgt_vocab.itos[j] for j in best], "greedy": [task.tgt_vocab.itos[j] for j in greedy],
                    "labels": [task.tgt_vocab.itos[j] for j in used], "trace": trace.to_dict(used)})
        if len(out) == n:
            break
    return out


def train_translation_model(task, preset: str, attn: str | None, epochs: int, lr: float, device: str):
    """The chapter's GRU encoder-decoder (``attn`` None or a score name) on a translation task, by the recipe of the
    recorded run: seed 0, Adam, warm-up 200 then cosine to 5% of ``lr``, the best epoch by validation loss kept.
    Returns (model, history, training seconds)."""
    import tempfile
    from pathlib import Path

    seqviz.set_seed(0)
    model = Seq2Seq(Seq2SeqConfig.for_task(task, preset, attention=attn)).to(device)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(model, TrainConfig(epochs=epochs, lr=lr, optimizer="adam", progress=False,
                                             schedule=WarmupCosine(warmup=200, final=0.05),
                                             checkpoint=Path(tmp) / "best.pt"), task.train, task.valid)
        hist = trainer.fit()
        trainer.load_checkpoint()
    return model, hist, time.perf_counter() - t0


def translation_table(preset: str, epochs: int, merges: int, beam: int, device: str, max_words: int | None,
                      lr: float, length_penalty: float, bootstrap: int = 1000
                      ) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """Train the seq2seq with and without attention on trans-de-en; BLEU for greedy and beam search, and the paired
    bootstrap (Koehn, 2004; ``bootstrap`` resamples) of attention vs none and of beam vs greedy.
    Returns (BLEU rows, alignment examples, significance rows, recorded beam searches)."""
    from seqviz.data import load_corpus
    corpus = load_corpus("trans_de_en")
    task, _ = translation_pairs(corpus, num_merges=merges, batch_size=64, max_words=max_words)
    refs = [t for _, t in task.test_text]
    rows, examples = [], []
    hyps: dict[tuple[str, str], list[str]] = {}          # (attention, "greedy" | "beam") -> test-set translations
    print(f"trans-de-en: {len(task.train.sources)} training pairs (<= {max_words} words a side), "
          f"{len(refs)} test pairs, BPE vocabularies {len(task.src_vocab)} / {len(task.tgt_vocab)}", flush=True)
    for attn in (None, "general"):
        model, hist, train_s = train_translation_model(task, preset, attn, epochs, lr, device)
        t0 = time.perf_counter()
        name = attn or "none"
        hyps[name, "greedy"] = translate(model, task, 1)
        hyps[name, "beam"] = translate(model, task, beam, length_penalty=length_penalty)
        greedy, beamed = bleu(hyps[name, "greedy"], refs), bleu(hyps[name, "beam"], refs)
        summed = bleu(translate(model, task, beam, length_penalty=0.0), refs)       # plain sum of log-probs
        row = {"task": "trans-de-en", "preset": preset, "attention": attn or "none", "epochs": epochs,
               "best_epoch": hist.eval_steps.index(hist.best["step"]) + 1,
               "valid_perplexity": hist.best["valid_perplexity"], "max_words": max_words, "bpe_merges": merges,
               "train_pairs": len(task.train.sources), "test_pairs": len(refs),
               "bleu_greedy": greedy, f"bleu_beam{beam}": beamed, "length_penalty": length_penalty,
               f"bleu_beam{beam}_unnormalised": summed,
               "train_s": train_s, "decode_s": time.perf_counter() - t0}
        rows.append(row)
        print(f"trans-de-en, {preset}, attention={row['attention']:>8}: BLEU greedy {greedy:.2f}, beam {beam} "
              f"{beamed:.2f} (unnormalised {summed:.2f}); valid perplexity {row['valid_perplexity']:.1f} "
              f"(best epoch {row['best_epoch']}); "
              f"{train_s:.0f} s training", flush=True)
        if attn is not None:
            examples = alignment_examples(model, task)
            beams = beam_examples(model, task, beam, length_penalty)
    # paired bootstrap on the same test sentences: A minus B, 95% CI of the resampled differences, p = share of
    # resamples in which A does not beat B
    beam_name = f"beam{beam}" + (f" (length penalty {length_penalty:g})" if length_penalty else " (unnormalised)")
    comparisons = [(("general", "greedy"), ("none", "greedy"), "attention minus no attention, greedy"),
                   (("general", "beam"), ("none", "beam"), f"attention minus no attention, {beam_name}"),
                   (("none", "beam"), ("none", "greedy"), f"{beam_name} minus greedy, no attention"),
                   (("general", "beam"), ("general", "greedy"), f"{beam_name} minus greedy, attention")]
    significance = []
    for a, b, what in comparisons:
        res = paired_bootstrap(hyps[a], hyps[b], refs, n=bootstrap, seed=0)
        significance.append({"comparison": what, "a": {"attention": a[0], "decoding": a[1]},
                             "b": {"attention": b[0], "decoding": b[1]}, "beam": beam,
                             "length_penalty": length_penalty, "test_pairs": len(refs),
                             "delta": res["delta"], "ci95": list(res["ci95"]), "p_value": res["p_value"],
                             "n": res["n"]})
        print(f"{what}: {res['delta']:+.2f} BLEU, 95% CI [{res['ci95'][0]:+.2f}, {res['ci95'][1]:+.2f}], "
              f"p = {res['p_value']:.3f} ({res['n']} paired bootstrap resamples)", flush=True)
    return rows, examples, significance, beams


def reversal_pairs(n_train: int, n_valid: int, n_test: int, max_len: int, batch_size: int, seed: int):
    """Reverse a random string of 4..max_len lowercase letters: each letter is log2(26) = 4.7 bits the decoder
    needs, so the information grows with the source (a date is ~16 bits, whatever its length)."""
    import random

    from seqviz.data import pair_task
    rng = random.Random(seed)

    def draw(n):
        out = []
        for _ in range(n):
            s = [rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, max_len))]
            out.append((s, s[::-1]))
        return out
    return pair_task(draw(n_train), draw(n_valid), draw(n_test), batch_size, seed=seed)


def fit_best(model, task, epochs: int, lr: float, step=None, callbacks=()):
    """Train with the chapter's optimiser and schedule; the best epoch by validation loss is kept. -> (history, s)"""
    import tempfile
    from pathlib import Path
    t0 = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(model, TrainConfig(epochs=epochs, lr=lr, schedule=WarmupCosine(warmup=50), progress=False,
                                             checkpoint=Path(tmp) / "best.pt"), task.train, task.valid,
                          step=step, callbacks=callbacks)
        hist = trainer.fit()
        trainer.load_checkpoint()
    return hist, time.process_time() - t0


def bottleneck_table(seeds, epochs: int, max_len: int, n_train: int, lr: float) -> dict:
    """Reversal of random letter strings, with and without attention, trained until the validation loss stops
    improving: exact match and per-character accuracy against source length, one row per seed and model."""
    edges = list(range(4, max_len + 2, 4))                       # bins [4, 8), [8, 12), ... up to max_len
    rows = []
    for seed in seeds:
        task = reversal_pairs(n_train, 300, 600, max_len, 128, seed)
        src_len = torch.tensor([len(s) for s in task.test_src])
        for attn in (None, "general"):
            seqviz.set_seed(seed)
            model = Seq2Seq(Seq2SeqConfig.for_task(task, "tiny", attention=attn))
            hist, cpu_s = fit_best(model, task, epochs, lr)
            x, mask = pad_batch(task.test_src, task.src_vocab.pad_id)                # (N, S) x2
            out = model.greedy(x, mask, max_new_tokens=max_len + 5)
            ok = torch.tensor([o == t for o, t in zip(out, task.test_tgt)])
            # per character: the share of the target's letters right at their position (</s> not counted)
            chars = torch.tensor([sum(a == b for a, b in zip(o, t[:-1])) / (len(t) - 1)
                                  for o, t in zip(out, task.test_tgt)])
            bins = list(zip(edges, edges[1:]))
            row = {"seed": seed, "attention": attn or "none", "epochs": epochs,
                   "best_epoch": hist.eval_steps.index(hist.best["step"]) + 1,
                   "valid_loss": [round(v, 4) for v in hist.valid_loss],
                   "exact_match": ok.float().mean().item(),
                   "exact_by_length": [ok[(src_len >= lo) & (src_len < hi)].float().mean().item() for lo, hi in bins],
                   "chars_by_length": [chars[(src_len >= lo) & (src_len < hi)].mean().item() for lo, hi in bins],
                   "cpu_s": cpu_s}
            rows.append(row)
            print(f"reversal, seed {seed}, attention={row['attention']:>8}: exact {row['exact_match']:.3f}, by length "
                  f"{[round(v, 2) for v in row['exact_by_length']]}, chars {[round(v, 2) for v in row['chars_by_length']]}"
                  f", best epoch {row['best_epoch']} of {epochs}, {cpu_s:.0f} CPU s", flush=True)
    return {"task": "reverse a random string of 4..max_len letters a-z", "max_len": max_len, "n_train": n_train,
            "n_valid": 300, "n_test": 600, "epochs": epochs, "lr": lr, "preset": "tiny", "length_edges": edges,
            "rows": rows}


def scheduled_sampling_table(seeds, epochs: int, lr: float, ks: list[float]) -> dict:
    """Dates without attention (the model that makes mistakes): pure teacher forcing against scheduled sampling, the
    coin's weight eps_i = k / (k + exp(i / k)) decayed per update i (Bengio et al., 2015), for each k in ``ks``;
    validation is always teacher-forced (the same loss for all), the test is free-running greedy decoding."""
    from seqviz.steps import StepOutput
    task = date_pairs(6000, 300, 500, batch_size=128, seed=0)
    rows = []
    for seed in seeds:
        for k in (None, *ks):                                     # None: teacher forcing
            mode = "teacher forcing" if k is None else f"scheduled sampling, k = {k:g}"
            seqviz.set_seed(seed)
            model = Seq2Seq(Seq2SeqConfig.for_task(task, "tiny", attention=None))
            updates = [0]
            eps_used = []

            def step(m, batch, carry=None):
                if m.training and k is not None:
                    eps = inverse_sigmoid_decay(updates[0], k)
                    updates[0] += 1
                    eps_used.append(eps)
                else:
                    eps = 1.0
                logits, loss = m(batch.x, batch.y, batch.mask, teacher_forcing=eps)
                return StepOutput(loss, logits, None)
            hist, cpu_s = fit_best(model, task, epochs, lr, step=step)
            ok = exact_match(model, task.test_src, task.test_tgt, task.src_vocab.pad_id)
            rows.append({"seed": seed, "training": mode, "epochs": epochs, "k": k,
                         "eps_first_last": [round(eps_used[0], 3), round(eps_used[-1], 3)] if eps_used else None,
                         "best_epoch": hist.eval_steps.index(hist.best["step"]) + 1,
                         "valid_loss_teacher_forced": hist.best["valid_loss"],
                         "exact_match_free_running": ok.float().mean().item(), "cpu_s": cpu_s})
            print(f"dates, no attention, seed {seed}, {mode:>28}: free-running exact match "
                  f"{rows[-1]['exact_match_free_running']:.3f}, best epoch {rows[-1]['best_epoch']}, "
                  f"{cpu_s:.0f} CPU s", flush=True)
    return {"task": "dates (6000 train, 500 test), tiny preset, no attention", "epochs": epochs, "lr": lr, "ks": ks,
            "updates_per_epoch": len(task.train), "rows": rows}


def dates_long_table(seeds, epochs: int, lr: float) -> dict:
    """Chapter 5's dates, with and without attention, trained ten times the chapter's budget (the best epoch by
    validation loss kept): is the no-attention model's failure at the chapter's budget the bottleneck, or slow
    learning? Exact match on the 500 test dates, overall and by source length."""
    task = date_pairs(6000, 300, 500, batch_size=128, seed=0)
    edges = [0, 16, 24, 100]                                      # source characters: < 16, 16-23, 24+
    lengths = torch.tensor([len(s) for s in task.test_src])
    rows = []
    for seed in seeds:
        for attn in (None, "general"):
            seqviz.set_seed(seed)
            model = Seq2Seq(Seq2SeqConfig.for_task(task, "tiny", attention=attn))
            hist, cpu_s = fit_best(model, task, epochs, lr)
            ok = exact_match(model, task.test_src, task.test_tgt, task.src_vocab.pad_id)
            by_len = [ok[(lengths >= lo) & (lengths < hi)].float().mean().item() for lo, hi in zip(edges, edges[1:])]
            rows.append({"seed": seed, "attention": attn or "none", "epochs": epochs,
                         "best_epoch": hist.eval_steps.index(hist.best["step"]) + 1,
                         "exact_match": ok.float().mean().item(), "exact_by_length": by_len, "cpu_s": cpu_s})
            print(f"dates, {epochs} epochs, seed {seed}, attention={attn or 'none':>8}: exact match "
                  f"{rows[-1]['exact_match']:.3f}, by length {', '.join(f'{a:.2f}' for a in by_len)}; best epoch "
                  f"{rows[-1]['best_epoch']}, {cpu_s:.0f} CPU s", flush=True)
    counts = [int(((lengths >= lo) & (lengths < hi)).sum()) for lo, hi in zip(edges, edges[1:])]
    return {"task": "dates (6000 train, 500 test), tiny preset", "epochs": epochs, "lr": lr,
            "length_edges": edges, "test_dates_by_length": counts, "rows": rows}


def dates_more_table(more_epochs: int) -> dict:
    """Chapter 5's live run of "slow learning or a bottleneck?": the model without attention after the chapter's 6
    epochs (``exact_match_table``'s recipe), then ``more_epochs`` more of the same recipe (a fresh warm-up and cosine
    decay), as the chapter's cell does; exact match on the 500 test dates before and after, by source length."""
    import copy
    task = date_pairs(6000, 300, 500, batch_size=128, seed=0)
    edges = [0, 16, 24, 100]                                      # source characters: < 16, 16-23, 24+, as dates_long
    lengths = torch.tensor([len(s) for s in task.test_src])
    recipe = {"lr": 1e-2, "warmup": 20}

    def fit(model, epochs):                                      # as the chapter: the seed is set just before
        Trainer(model, TrainConfig(epochs=epochs, lr=recipe["lr"], schedule=WarmupCosine(warmup=recipe["warmup"]),
                                   progress=False), task.train, task.valid).fit()

    def score(model):
        ok = exact_match(model, task.test_src, task.test_tgt, task.src_vocab.pad_id)
        return ok.float().mean().item(), [ok[(lengths >= lo) & (lengths < hi)].float().mean().item()
                                          for lo, hi in zip(edges, edges[1:])]

    seqviz.set_seed(0)
    model = Seq2Seq(Seq2SeqConfig.for_task(task, "tiny", attention=None))
    fit(model, 6)
    before, before_by_length = score(model)
    more = copy.deepcopy(model)
    t0 = time.process_time()
    seqviz.set_seed(0)
    fit(more, more_epochs)
    cpu_s = time.process_time() - t0
    after, by_length = score(more)
    print(f"dates, no attention: 6 epochs {before:.3f}, {more_epochs} more {after:.3f} (by length "
          f"{', '.join(f'{a:.2f}' for a in by_length)}), {cpu_s:.0f} CPU s", flush=True)
    return {"task": "dates (6000 train, 500 test), tiny preset, no attention", "epochs_first": 6,
            "epochs_more": more_epochs, **recipe, "length_edges": edges, "exact_match_before": before,
            "exact_by_length_before": before_by_length, "exact_match": after, "exact_by_length": by_length,
            "cpu_s_more": cpu_s}


def shipped_dates_table() -> list[dict]:
    """The shipped date normaliser (``checkpoints/dates_transformer.pt``, ``make checkpoints-transformer``): an
    encoder-decoder transformer on the same 6,000 training dates, greedy exact match on the 500 held-out dates,
    measured here, beside its build record."""
    from seqviz.transformer.pretrained import SHIPPED_DATES, dates_exact_match, load_dates

    t = SHIPPED_DATES.task
    task = date_pairs(t["n_train"], t["n_valid"], t["n_test"], batch_size=t["batch_size"], seed=t["seed"])
    model, info = load_dates(task)
    em = dates_exact_match(model, task)
    r = info["recipe"]
    row = {"model": "shipped date normaliser (encoder-decoder transformer, checkpoints/dates_transformer.pt)",
           "command": "make checkpoints-transformer (python -m seqviz.transformer make dates, one thread)",
           "parameters": sum(p.numel() for p in model.parameters()), "layers": r["num_layers"],
           "d_model": r["d_model"], "epochs": r["epochs"], "steps": info["steps"], "train_cpu_s": info["cpu_seconds"],
           "test_dates": len(task.test_src), "exact_match": em, "exact_match_recorded": info["exact_match"]}
    print(f"shipped date transformer: exact match {em:.3f} on {len(task.test_src)} held-out dates "
          f"({info['steps']} steps, {info['cpu_seconds']:.0f} CPU s)")
    return [row]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="T up to 1024, throughput only (no date-task training)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per timing (the best is kept)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: seqviz.configure_threads)")
    ap.add_argument("--translation", action="store_true", help="also train on trans-de-en and report BLEU")
    ap.add_argument("--preset", default="small", choices=("tiny", "small", "full"),
                    help="Seq2Seq preset for translation")
    ap.add_argument("--epochs", type=int, default=30, help="translation training epochs")
    ap.add_argument("--lr", type=float, default=2e-3, help="translation peak learning rate (Adam)")
    ap.add_argument("--merges", type=int, default=2000, help="BPE merges per language")
    ap.add_argument("--max-words", type=int, default=10,
                    help="keep pairs of at most this many words a side, every split (0: no limit)")
    ap.add_argument("--beam", type=int, default=5, help="beam width for BLEU")
    ap.add_argument("--length-penalty", type=float, default=1.0,
                    help="beam ranking: log-probability / length ** this (1 = per-token mean)")
    ap.add_argument("--bootstrap", type=int, default=1000,
                    help="paired bootstrap resamples for the BLEU comparisons (Koehn, 2004)")
    ap.add_argument("--device", default=None, help="device for translation training (default: seqviz.default_device())")
    ap.add_argument("--skip-attention-timing", action="store_true", help="only the translation table")
    ap.add_argument("--bottleneck", action="store_true",
                    help="only 5: reversal with and without attention by source length (kept with the rest)")
    ap.add_argument("--scheduled-sampling", action="store_true",
                    help="only 6: dates without attention, teacher forcing vs scheduled sampling (kept with the rest)")
    ap.add_argument("--dates-long", action="store_true",
                    help="only 7: dates with and without attention, --dates-epochs epochs (kept with the rest)")
    ap.add_argument("--shipped", action="store_true",
                    help="only 8: the shipped date transformer's exact match (its checkpoint), kept with the rest")
    ap.add_argument("--dates-more", action="store_true",
                    help="only 9: chapter 5's live run, the 6-epoch model without attention trained on (kept with the rest)")
    ap.add_argument("--more-epochs", type=int, default=9)
    ap.add_argument("--dates-epochs", type=int, default=60)
    ap.add_argument("--seeds", default="0,1,2", help="seeds for 5, 6 and 7")
    ap.add_argument("--bottleneck-epochs", type=int, default=40)
    ap.add_argument("--ss-epochs", type=int, default=20)
    ap.add_argument("--ss-k", default="100,200", help="inverse sigmoid decay's k, per update (comma-separated)")
    args = ap.parse_args()
    threads = seqviz.configure_threads(args.threads)
    if args.bottleneck or args.scheduled_sampling or args.dates_long or args.shipped or args.dates_more:
        # these modes rewrite their own part of attention.json (with its own machine record) and keep the rest
        seeds = [int(s) for s in args.seeds.split(",")]
        old = read_results("attention") or {}
        if args.bottleneck:
            old["bottleneck"] = bottleneck_table(seeds, args.bottleneck_epochs, 24, 6000, 5e-3)
            old["bottleneck_machine"] = machine()
            write_results("attention", old)
        if args.scheduled_sampling:
            old["scheduled_sampling"] = scheduled_sampling_table(seeds, args.ss_epochs, 1e-2,
                                                                [float(k) for k in args.ss_k.split(",")])
            old["scheduled_sampling_machine"] = machine()
            write_results("attention", old)
        if args.dates_long:
            old["dates_long"] = dates_long_table(seeds, args.dates_epochs, 5e-3)
            old["dates_long_machine"] = machine()
            write_results("attention", old)
        if args.dates_more:
            old["dates_more"] = dates_more_table(args.more_epochs)
            old["dates_more_machine"] = machine()
            write_results("attention", old)
        if args.shipped:
            old["dates_shipped"] = shipped_dates_table()
            old["dates_shipped_machine"] = machine()
            write_results("attention", old)
        return
    load_start = os.getloadavg()
    lengths = [128, 256, 512, 1024] if args.quick else [128, 256, 512, 1024, 2048]
    figures = {"threads": threads, "quick": args.quick,
               "setup": "B=1, 4 heads, d_k=64, float32, forward only; memory from torch.profiler (CPU)"}
    translation = None
    if args.translation:
        device = args.device or str(seqviz.default_device())
        translation = translation_table(args.preset, args.epochs, args.merges, args.beam, device,
                                        args.max_words or None, args.lr, args.length_penalty, args.bootstrap)
    if not args.skip_attention_timing:
        figures["attention_vs_sdpa"] = attention_vs_sdpa(lengths, args.repeats)
        task = date_pairs(6000, 300, 500, batch_size=128, seed=0)
        figures["seq2seq_throughput"] = throughput(task, 10 if args.quick else 40)
        if not args.quick:
            figures["rows"] = exact_match_table(task)
    if translation is not None:
        (figures["translation"], figures["translation_alignments"], figures["translation_significance"],
         figures["translation_beams"]) = translation
    # wall times depend on what else ran: record the load average (1, 5, 15 min) at the start and the end
    load_end = os.getloadavg()
    busy = max(load_start[0], load_end[0], load_end[1]) > 0.5 * (os.cpu_count() or 1)
    figures["machine"] = {**machine(), "loadavg_start": [round(x, 2) for x in load_start],
                          "loadavg_end": [round(x, 2) for x in load_end],
                          "timings": ("under load: other processes shared the CPU, wall times are upper bounds"
                                      if busy else "idle machine")}
    if not args.skip_attention_timing:
        # a full run rewrites attention.json: keep what the --bottleneck and --scheduled-sampling runs recorded there
        kept = {k: v for k, v in (read_results("attention") or {}).items()
                if k.startswith(("bottleneck", "scheduled_sampling", "dates_long", "dates_shipped", "dates_more"))}
        figures = {**figures, **kept}
    write_results("attention" if not args.skip_attention_timing else "attention_translation", figures)


if __name__ == "__main__":
    main()
