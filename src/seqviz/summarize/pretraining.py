"""Pretraining (SLP §9.9.1) and checkpoint I/O: the small LM chapter 8 fine-tunes, made by the package's own recipe.

The recipe learns the BPE of the BBC training split and trains a small causal LM on random windows of the training
bodies (no headline, no validation or test text). ``make pretrain-summarize`` runs it (``python -m seqviz.summarize
pretrain``, :func:`main`) and prints the SHA-256 of the file it writes; the committed file,
``seqviz/checkpoints/bbc_lm.pt``, is package data, and :func:`load_pretrained` checks its SHA-256 against
:data:`PRETRAINED_SHA256` before reading it with ``weights_only=True``.
"""
from __future__ import annotations

import hashlib
import io
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from seqviz.summarize.tokenizer import SummaryTokenizer
from seqviz.transformer import TransformerConfig, TransformerLM

__all__ = ["PretrainConfig", "pretrain", "save_pretrained", "load_pretrained", "PRETRAINED_PATH", "PRETRAINED_SHA256"]

PRETRAINED_PATH = Path(__file__).resolve().parent.parent / "checkpoints" / "bbc_lm.pt"
#: SHA-256 of the committed checkpoint; ``make pretrain-summarize`` prints the value of a rebuilt one. The committed
#: file (PretrainConfig defaults: 5,000 steps, about 9 passes over the training bodies; loss over the last 50 steps
#: 4.66 nats) took 2,615 s to build on one thread of a 2-core machine under load (load average ~3, shared with other
#: jobs; its ``info["seconds"]``): an idle one is faster (not measured). A rebuild on another CPU or torch version may
#: differ in the last bits, and then has another SHA-256.
PRETRAINED_SHA256 = "53f16af807a8986501a9b475828ade3e3f91df12d3c1110dcc06feeb07355f89"


@dataclass
class PretrainConfig:
    """The pretraining recipe: a BPE of the BBC training split, then a small causal LM on random windows of the
    training bodies (no headline, no validation or test text). Sized to stay under 2 MB in bfloat16."""

    num_merges: int = 2000       # BPE merges learned from the training bodies and headlines
    max_len: int = 128           # context of the model (article + δ + headline must fit)
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 2
    dropout: float = 0.1
    steps: int = 5000            # optimizer steps (about 9 passes over the training bodies)
    batch_size: int = 16         # windows of max_len tokens per step
    lr: float = 3e-3             # peak of a warm-up + cosine schedule
    warmup: int = 40
    seed: int = 0

    def model_config(self, vocab_size: int) -> TransformerConfig:
        return TransformerConfig(vocab_size, max_len=self.max_len, d_model=self.d_model, num_heads=self.num_heads,
                                 num_layers=self.num_layers, dropout=self.dropout)


def _bbc(corpus=None):
    from seqviz.data import load_corpus

    return load_corpus("bbc") if corpus is None else corpus


def pretrain(config: PretrainConfig | None = None, corpus=None, progress: bool = True):
    """Learn the tokenizer and pretrain the LM by the recipe in ``config``: returns (model, tokenizer, info)."""
    from seqviz.train import Trainer, TrainConfig, WarmupCosine
    from seqviz.transformer import random_windows

    cfg = config or PretrainConfig()
    corpus = _bbc(corpus)
    t0 = time.perf_counter()
    tok = SummaryTokenizer.learn([a.body for a in corpus.train] + [a.headline for a in corpus.train], cfg.num_merges)
    stream = [i for a in corpus.train for i in tok.encode(a.body) + [tok.eos_id]]   # bodies, </s> between them
    torch.manual_seed(cfg.seed)
    model = TransformerLM(cfg.model_config(len(tok)))
    batches = random_windows(torch.tensor(stream), cfg.steps, cfg.batch_size, cfg.max_len, seed=cfg.seed)
    history = Trainer(model, TrainConfig(max_steps=cfg.steps, lr=cfg.lr, seed=cfg.seed, progress=progress,
                                         schedule=WarmupCosine(warmup=cfg.warmup)), batches).fit()
    info = {"config": asdict(cfg), "vocab_size": len(tok), "train_tokens": len(stream),
            "final_loss": float(np.mean(history.step_loss[-50:])), "seconds": time.perf_counter() - t0,
            "threads": torch.get_num_threads()}
    return model, tok, info


def save_pretrained(model: TransformerLM, tok: SummaryTokenizer, info: dict, path: str | Path = PRETRAINED_PATH) -> str:
    """Write the model (bfloat16, the tied output layer stored once), tokenizer and recipe; return the SHA-256."""
    state = {k: v.detach().to("cpu", torch.bfloat16) for k, v in model.state_dict().items() if k != "V.weight"}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state": state, "tokenizer": tok.state(), "info": info}, path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_pretrained(path: str | Path = PRETRAINED_PATH, sha256: str | None = PRETRAINED_SHA256, device=None):
    """The pretrained model (float32, on ``device``, in **eval mode**: its dropout is off, so what it writes and scores
    repeats; call ``model.train()`` before fine-tuning it by hand, as ``Trainer.fit`` does) and its tokenizer, after
    checking the file's SHA-256; loaded with ``weights_only=True``. Returns (model, tokenizer, info)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no pretrained checkpoint at {path}: rebuild it with `make pretrain-summarize`")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {sha256}: the file is not the checkpoint this "
                         f"version of seqviz was made with. Rebuild it with `make pretrain-summarize` (and update "
                         f"PRETRAINED_SHA256), or reinstall seqviz")
    record = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    tok = SummaryTokenizer.from_state(record["tokenizer"])
    cfg = PretrainConfig(**record["info"]["config"])
    model = TransformerLM(cfg.model_config(len(tok)))
    missing, unexpected = model.load_state_dict(record["state"], strict=False)
    if unexpected or set(missing) - {"V.weight"}:
        raise ValueError(f"checkpoint {path} does not fit the model: missing {missing}, unexpected {unexpected}")
    model.V.weight = model.E.weight                                               # (9.16) weight tying again
    return model.to(device or "cpu").eval(), tok, record["info"]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m seqviz.summarize pretrain``: rebuild the checkpoint by the recipe (what ``make pretrain-summarize``
    runs), on one thread, and print its SHA-256 for ``PRETRAINED_SHA256``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m seqviz.summarize", description=main.__doc__)
    p.add_argument("command", choices=["pretrain"])
    p.add_argument("--steps", type=int, default=PretrainConfig.steps)
    p.add_argument("--out", default=str(PRETRAINED_PATH))
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, tok, info = pretrain(PretrainConfig(steps=args.steps))
    digest = save_pretrained(model, tok, info, args.out)
    size = Path(args.out).stat().st_size
    print(f"vocabulary {info['vocab_size']}, {model.num_parameters():,} parameters, {info['train_tokens']:,} training "
          f"tokens; loss over the last 50 steps {info['final_loss']:.3f}; {info['seconds']:.0f} s on "
          f"{info['threads']} thread(s)")
    print(f"wrote {args.out} ({size / 1e6:.2f} MB), SHA-256 {digest}")
