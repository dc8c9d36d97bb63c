"""The copy summarizer's recipe and checkpoint: SLP §9.9's decoder-only δ LM wearing the pointer-generator head
(:class:`~seqviz.summarize.copy_models.CopyLM`), pretrained on gap-sentence pairs of the training bodies, fine-tuned on
the training (article, headline) pairs, stored in float16 with a SHA-256 that loading checks (``make
copy-summarizer``).

Why this recipe (chosen on the validation split; bench/README.md, bench_summarize.py): with the copy head, the δ LM
and chapter 7's encoder-decoder reach the same ROUGE-L within the spread of fine-tuning seeds, and gap-sentence
pretraining adds little ROUGE-L but makes the headlines read more like English (a lower loss of the BPE LM on them).
"""
from __future__ import annotations

import hashlib
import io
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from seqviz.summarize.copy_models import CopyConfig, build_copy_model
from seqviz.summarize.pairs import CopyBatches, encode_pairs, gap_sentence_pairs, headline_pairs
from seqviz.summarize.words import WordTokenizer

__all__ = ["CopyRecipe", "train_copy_summarizer", "save_copy_summarizer", "load_copy_summarizer", "check_loss",
           "COPY_CHECKPOINT", "COPY_SHA256"]

COPY_CHECKPOINT = Path(__file__).resolve().parent.parent / "checkpoints" / "bbc_copy.pt"
COPY_SHA256 = "8c9dd07aae37d276962b10619ea513d8d7b42dbe3c8b3ddb7247c491c12d7007"


@dataclass
class CopyRecipe:
    """How the checkpoint is made. Only the training split is read."""

    min_count: int = 5           # vocabulary: training words seen at least this often (about 9,600)
    arch: str = "lm"             # SLP's δ LM ("lm") or chapter 7's encoder-decoder ("encdec"), both with the head
    d_model: int = 128
    num_layers: int = 2
    dropout: float = 0.1
    max_source: int = 80
    max_summary: int = 16
    gap_max_summary: int = 32    # gap-sentence targets are longer than headlines
    pretrain_steps: int = 4000   # on gap-sentence pairs
    finetune_steps: int = 150    # on (article, headline) pairs (75, 150, 300, 600 steps: see bench/README.md)
    finetune_warmup: int = 50
    batch_size: int = 32
    lr: float = 1e-3
    warmup: int = 100
    seed: int = 0

    def model_config(self, vocab_size: int, copy: bool = True) -> CopyConfig:
        """The model's sizes; its position tables fit the longest target it trains on (the gap sentences, when it
        is pretrained), so a model made without pretraining has the tables it always had."""
        return CopyConfig(vocab_size, arch=self.arch, copy=copy, d_model=self.d_model, num_layers=self.num_layers,
                          dropout=self.dropout, max_source=self.max_source, max_summary=self.max_summary,
                          max_target=self.gap_max_summary if self.pretrain_steps else None)


def _fit(model, pairs, steps: int, recipe: CopyRecipe, pad_id: int, progress: bool, warmup: int):
    from seqviz.train import Trainer, TrainConfig, WarmupCosine

    batches = CopyBatches(pairs, recipe.batch_size, pad_id, seed=recipe.seed)
    epochs = -(-steps // len(batches))
    cfg = TrainConfig(epochs=epochs, max_steps=steps, lr=recipe.lr, weight_decay=0.01, seed=recipe.seed,
                      progress=progress, schedule=WarmupCosine(warmup=warmup), device=None)
    return Trainer(model, cfg, batches).fit()


@torch.no_grad()
def check_loss(model, tok: WordTokenizer, corpus, n: int = 32) -> float:
    """The model's loss (nats per headline word) on the first ``n`` validation pairs, in eval mode: recorded in the
    checkpoint so a test can tell that a loaded model is the one that was saved."""
    from seqviz import evaluating

    c = model.config
    pairs = encode_pairs(tok, headline_pairs(corpus.valid[:n]), c.max_source, c.max_summary, c.copy)
    batch = CopyBatches(pairs, n, tok.pad_id, shuffle=False).collate(pairs)
    with evaluating(model):
        return float(model(batch.x, batch.y, batch.mask)[1])


def train_copy_summarizer(recipe: CopyRecipe | None = None, corpus=None, progress: bool = True,
                          pretrain_pairs=None):
    """Learn the vocabulary, pretrain on gap-sentence pairs of the training bodies (or ``pretrain_pairs``), fine-tune
    on the training headlines: returns (model, tokenizer, info)."""
    from seqviz.data import load_corpus

    r = recipe or CopyRecipe()
    corpus = corpus or load_corpus("bbc")
    t0, c0 = time.perf_counter(), time.process_time()
    tok = WordTokenizer.learn([a.body for a in corpus.train] + [a.headline for a in corpus.train], r.min_count)
    torch.manual_seed(r.seed)
    model = build_copy_model(r.model_config(len(tok)))
    info = {"recipe": asdict(r), "vocab_size": len(tok)}
    if r.pretrain_steps:
        pre = pretrain_pairs if pretrain_pairs is not None else gap_sentence_pairs(corpus.train, r.max_source)
        enc = encode_pairs(tok, pre, r.max_source, r.gap_max_summary, model.config.copy)
        hist = _fit(model, enc, r.pretrain_steps, r, tok.pad_id, progress, r.warmup)
        info.update(pretrain_pairs=len(enc), pretrain_loss=float(np.mean(hist.step_loss[-100:])))
    enc = encode_pairs(tok, headline_pairs(corpus.train), r.max_source, r.max_summary, model.config.copy)
    hist = _fit(model, enc, r.finetune_steps, r, tok.pad_id, progress, r.finetune_warmup)
    info.update(finetune_loss=float(np.mean(hist.step_loss[-20:])), seconds=time.perf_counter() - t0,
                cpu_seconds=time.process_time() - c0, threads=torch.get_num_threads())
    # the loss on a fixed slice, as the float16 file will give it back (what the checkpoint test compares)
    half = build_copy_model(r.model_config(len(tok)))
    half.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
    info["check_loss"] = check_loss(half, tok, corpus)
    return model.eval(), tok, info


def save_copy_summarizer(model, tok: WordTokenizer, info: dict, path: str | Path = COPY_CHECKPOINT) -> str:
    """Write the model in float16 (tied weights stored once), the vocabulary and the recipe; return the SHA-256."""
    seen, state = set(), {}
    for k, v in model.state_dict(keep_vars=True).items():
        if id(v) in seen:
            continue
        seen.add(id(v))
        state[k] = v.detach().to("cpu", torch.float16)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save({"state": state, "tokenizer": tok.state(), "info": info}, buf)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def load_copy_summarizer(path: str | Path = COPY_CHECKPOINT, sha256: str | None = COPY_SHA256, device=None):
    """(model in eval mode, tokenizer, info) after checking the file's SHA-256; ``weights_only=True``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no copy-summarizer checkpoint at {path}: rebuild it with `make copy-summarizer`")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {sha256}: not the checkpoint this version of "
                         f"seqviz was made with. Rebuild it with `make copy-summarizer` (and update COPY_SHA256), "
                         f"or reinstall seqviz")
    record = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    tok = WordTokenizer.from_state(record["tokenizer"])
    recipe = CopyRecipe(**record["info"]["recipe"])
    model = build_copy_model(recipe.model_config(len(tok)))
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in record["state"].items()}, strict=False)
    # a tied tensor is stored once, under its first name; the model's other names for it are not missing
    params = dict(model.named_parameters(remove_duplicate=False))
    stored = {id(params[k]) for k in record["state"] if k in params}
    tied = {k for k in missing if k in params and id(params[k]) in stored}
    if unexpected or set(missing) - tied:
        raise ValueError(f"checkpoint {path} does not fit the model: missing {missing}, unexpected {unexpected}")
    return model.to(device or "cpu").eval(), tok, record["info"]


def main(argv=None) -> None:
    """``python -m seqviz.summarize copy``: remake the copy summarizer by :class:`CopyRecipe` on one thread
    (what ``make copy-summarizer`` runs) and print its SHA-256 for ``COPY_SHA256``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m seqviz.summarize copy", description=main.__doc__)
    p.add_argument("--pretrain-steps", type=int, default=CopyRecipe.pretrain_steps)
    p.add_argument("--finetune-steps", type=int, default=CopyRecipe.finetune_steps)
    p.add_argument("--out", default=str(COPY_CHECKPOINT))
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, tok, info = train_copy_summarizer(CopyRecipe(pretrain_steps=args.pretrain_steps,
                                                        finetune_steps=args.finetune_steps), progress=False)
    digest = save_copy_summarizer(model, tok, info, args.out)
    n = sum(p.numel() for p in model.parameters())
    print(f"vocabulary {info['vocab_size']:,} words, {n:,} parameters; {info.get('pretrain_pairs', 0):,} gap-sentence "
          f"pairs, pretraining loss {info.get('pretrain_loss', float('nan')):.3f}, fine-tuning loss "
          f"{info['finetune_loss']:.3f}; {info['seconds']:.0f} s wall, {info['cpu_seconds']:.0f} s CPU on "
          f"{info['threads']} thread(s)")
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1e6:.2f} MB), SHA-256 {digest}")


if __name__ == "__main__":
    main()
