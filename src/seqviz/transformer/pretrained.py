"""Chapter 7's recipes and shipped checkpoints: the character LM the chapter trains in its minute, the larger one it
loads, and the encoder-decoder that normalises dates.

Each recipe is a dataclass; :func:`train_char_lm` and :func:`train_dates` run one on the package's own data (the
``shakespeare`` corpus's training split; ``seqviz.data.date_pairs``). ``make checkpoints-transformer`` (``python -m
seqviz.transformer make char|dates``) trains a shipped recipe on one thread and writes ``seqviz/checkpoints/NAME.pt``:
float16 weights (the tied output layer stored once), the model's config, the vocabulary and what the build measured.
:func:`load_char_lm` and :func:`load_dates` check the file's SHA-256 against :data:`SHA256` before reading it with
``weights_only=True`` and return the model in eval mode. A rebuild on another CPU or torch version may differ in the
last bits and then has another SHA-256: the command prints it.

The training loops are written out here (AdamW, linear warm-up, cosine decay, clipping) rather than taken from
``seqviz.train``: a model module never imports the trainer. They decay weight matrices only, as the trainer does.
"""
from __future__ import annotations

import hashlib
import io
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from seqviz import evaluating

from .encdec import EncoderDecoderConfig, EncoderDecoderTransformer
from .lm import TransformerConfig, TransformerLM, window_loss

__all__ = ["CharLMRecipe", "DatesRecipe", "CHAPTER_CHAR", "SHIPPED_CHAR", "SHIPPED_DATES", "char_data",
           "train_char_lm", "train_dates", "dates_exact_match", "save_checkpoint", "load_checkpoint", "load_char_lm",
           "load_dates", "CHECKPOINTS", "SHA256"]

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
#: SHA-256 of each committed checkpoint (``python -m seqviz.transformer make NAME`` prints a rebuilt one's)
SHA256 = {
    "shakespeare_char": "9d35d02cc3d5109739fb24e31b1d95b721d128a2f9ba9663ba2ed258cd27031c",
    "dates_transformer": "ef989244c1de50d53af5c352d8de14f9a72a6b8bc1201912c242d875a0d02b5c",
}
#: the ``python -m seqviz.transformer make NAME`` that rebuilds each checkpoint
_MAKE = {"shakespeare_char": "char", "dates_transformer": "dates", "translator_de_en": "translator"}
#: the make target that runs it
_TARGET = {"shakespeare_char": "checkpoints-transformer", "dates_transformer": "checkpoints-transformer",
           "translator_de_en": "translator"}
#: the slice of a checkpoint's evaluation data on which its loss is recorded at build time (tests recompute it)
SLICE = 20_000


# ----------------------------------------------------------------------------------------------------------------
# Recipes
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CharLMRecipe:
    """A character-level TransformerLM and how to train it: random windows of ``context`` characters, ``batch_size``
    a step, AdamW with a linear warm-up and a cosine decay to ``final * lr`` at the last step."""

    num_layers: int = 1          # at half a minute of one thread, one block learns faster than two (bench/README.md)
    d_model: int = 128
    num_heads: int = 4
    context: int = 64            # T: the window a step trains on, and the model's max_len
    batch_size: int = 32
    steps: int = 1000
    lr: float = 8e-3             # peak learning rate (small models on short runs take a high one, pre-norm allows it)
    warmup: int = 50             # steps of linear warm-up
    final: float = 0.05          # the last step's rate, as a fraction of lr
    betas: tuple = (0.9, 0.95)
    weight_decay: float = 0.1    # on weight matrices only
    clip: float = 1.0
    init_std: float = 0.05       # N(0, 0.05^2) initial weights: attention sharpens within the first steps
    dropout: float = 0.0
    positions: str = "learned"   # or "sinusoidal" (chapter 7, exercise 2)
    seed: int = 0

    def model_config(self, vocab_size: int) -> TransformerConfig:
        return TransformerConfig(vocab_size, max_len=self.context, d_model=self.d_model, num_heads=self.num_heads,
                                 num_layers=self.num_layers, dropout=self.dropout, bias=False, norm="pre",
                                 init_std=self.init_std, positions=self.positions)


#: the model chapter 7 trains live (its budget: well under a minute on one thread)
CHAPTER_CHAR = CharLMRecipe()
#: the shipped character LM, ``checkpoints/shakespeare_char.pt``
SHIPPED_CHAR = CharLMRecipe(num_layers=4, d_model=160, steps=12_000, lr=3e-3, warmup=200, final=0.02)


@dataclass(frozen=True)
class DatesRecipe:
    """An encoder-decoder transformer on chapter 5's dates (the same 6,000 training dates, batches of 64)."""

    num_layers: int = 3          # blocks on each side
    d_model: int = 64
    num_heads: int = 4
    epochs: int = 15
    lr: float = 3e-3
    warmup: int = 20
    final: float = 0.0
    weight_decay: float = 0.01
    clip: float = 1.0
    init_std: float = 0.1        # ~1/sqrt(d_model): the attention scores are not ~0 at the start
    max_len: int = 40
    seed: int = 0
    task: dict = field(default_factory=lambda: {"n_train": 6000, "n_valid": 300, "n_test": 500, "batch_size": 64,
                                                "seed": 0})

    def model_config(self, src_vocab, tgt_vocab) -> EncoderDecoderConfig:
        return EncoderDecoderConfig(len(src_vocab), len(tgt_vocab), bos_id=tgt_vocab.bos_id, pad_id=tgt_vocab.pad_id,
                                    eos_id=tgt_vocab.eos_id, max_len=self.max_len, d_model=self.d_model,
                                    num_heads=self.num_heads, num_layers=self.num_layers, bias=False,
                                    init_std=self.init_std)


#: the shipped date normaliser, ``checkpoints/dates_transformer.pt``
SHIPPED_DATES = DatesRecipe()


# ----------------------------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------------------------
def char_data(corpus=None) -> tuple[list[str], Tensor, Tensor]:
    """The ``shakespeare`` corpus as character ids: (itos, train ids, validation ids); itos are the training split's
    characters, sorted (84 of them)."""
    from seqviz.data import load_corpus

    corpus = load_corpus("shakespeare") if corpus is None else corpus
    itos = sorted(set(corpus.train))
    stoi = {c: i for i, c in enumerate(itos)}
    encode = lambda s: torch.tensor([stoi[c] for c in s if c in stoi], dtype=torch.long)   # noqa: E731
    return itos, encode(corpus.train), encode(corpus.valid)


def _adamw(model: nn.Module, lr: float, weight_decay: float, betas=(0.9, 0.999)) -> torch.optim.AdamW:
    """AdamW that decays weight matrices only (not biases, LayerNorm gains, embeddings or a layer tied to them)."""
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    decay = [p for p in model.parameters() if p.dim() >= 2 and id(p) not in embeddings]
    rest = [p for p in model.parameters() if not (p.dim() >= 2 and id(p) not in embeddings)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=tuple(betas))


def _rate(step: int, steps: int, lr: float, warmup: int, final: float) -> float:
    """Linear warm-up, then a cosine from lr to final * lr at the last step (as ``seqviz.schedules.WarmupCosine``)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    span = steps - 1 - warmup
    progress = 1.0 if span < 1 else min((step - warmup) / span, 1.0)
    return lr * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * progress)))


def _fit(model: nn.Module, batches, steps: int, recipe, loss_fn, progress: bool) -> dict:
    opt = _adamw(model, recipe.lr, recipe.weight_decay, getattr(recipe, "betas", (0.9, 0.999)))
    bar = None
    if progress:
        from seqviz.progress import progress as _progress
        bar = _progress(steps, "train", unit="step")
    losses, t0 = [], time.process_time()
    model.train()
    for step, batch in enumerate(batches):
        for group in opt.param_groups:
            group["lr"] = _rate(step, steps, recipe.lr, recipe.warmup, recipe.final)
        loss = loss_fn(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
        opt.step()
        losses.append(loss.item())
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}", refresh=False)
    if bar is not None:
        bar.close()
    model.eval()
    return {"steps": len(losses), "cpu_seconds": round(time.process_time() - t0, 1),
            "final_train_loss": round(sum(losses[-50:]) / len(losses[-50:]), 4)}


def train_char_lm(recipe: CharLMRecipe = CHAPTER_CHAR, data=None, progress: bool = True):
    """Train ``recipe`` on the shakespeare training split; returns (model in eval mode, itos, info). ``data``: the
    (itos, train ids, validation ids) of :func:`char_data`, to skip re-reading the corpus."""
    itos, train_ids, valid_ids = char_data() if data is None else data
    torch.manual_seed(recipe.seed)
    model = TransformerLM(recipe.model_config(len(itos)))
    g = torch.Generator().manual_seed(recipe.seed)
    offsets = torch.arange(recipe.context + 1)

    def windows():
        for _ in range(recipe.steps):
            start = torch.randint(len(train_ids) - recipe.context, (recipe.batch_size,), generator=g)
            yield train_ids[start[:, None] + offsets]                              # (B, T + 1)

    info = _fit(model, windows(), recipe.steps, recipe, lambda rows: model(rows[:, :-1], rows[:, 1:])[1], progress)
    info["recipe"] = asdict(recipe)
    info["train_characters"] = len(train_ids)
    return model, itos, info


def train_dates(recipe: DatesRecipe = SHIPPED_DATES, progress: bool = True):
    """Train ``recipe`` on chapter 5's dates; returns (model in eval mode, task, info)."""
    from seqviz.data import date_pairs

    t = recipe.task
    task = date_pairs(t["n_train"], t["n_valid"], t["n_test"], batch_size=t["batch_size"], seed=t["seed"])
    torch.manual_seed(recipe.seed)
    model = EncoderDecoderTransformer(recipe.model_config(task.src_vocab, task.tgt_vocab))

    def batches():
        for epoch in range(recipe.epochs):
            task.train.set_epoch(epoch)
            yield from task.train

    steps = recipe.epochs * len(task.train)
    info = _fit(model, batches(), steps, recipe, lambda b: model(b.x, b.y, mask=b.mask)[1], progress)
    info["recipe"] = asdict(recipe)
    return model, task, info


def dates_exact_match(model: EncoderDecoderTransformer, task) -> float:
    """Greedy exact match on the task's held-out dates (``seqviz.metrics.exact_match``)."""
    from seqviz.metrics import exact_match

    return float(exact_match(model, task.test_src, task.test_tgt, task.src_vocab.pad_id).float().mean())


# ----------------------------------------------------------------------------------------------------------------
# Checkpoint I/O
# ----------------------------------------------------------------------------------------------------------------
def save_checkpoint(model: nn.Module, name: str, vocab: dict, info: dict, path: str | Path | None = None) -> str:
    """Write ``model`` (float16; the output layer tied to the embedding stored once), its config, ``vocab`` (lists of
    strings) and ``info``; return the file's SHA-256."""
    tied = getattr(model.config, "tie_weights", False)
    state = {k: v.detach().to("cpu", torch.float16) for k, v in model.state_dict().items()
             if not (tied and k == "V.weight")}
    path = Path(path) if path is not None else CHECKPOINTS / f"{name}.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"kind": type(model).__name__, "config": asdict(model.config), "state": state, "vocab": vocab,
                "info": info}, path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


_KINDS = {"TransformerLM": (TransformerLM, TransformerConfig),
          "EncoderDecoderTransformer": (EncoderDecoderTransformer, EncoderDecoderConfig)}


def load_checkpoint(name: str, path: str | Path | None = None, sha256: str | None = "committed"):
    """(model in eval mode, float32, on the CPU; vocab; info) from ``checkpoints/NAME.pt``, after checking its SHA-256
    (``sha256="committed"``: the one in :data:`SHA256`; None: no check), read with ``weights_only=True``."""
    path = Path(path) if path is not None else CHECKPOINTS / f"{name}.pt"
    make = (f"`make {_TARGET[name]}` (python -m seqviz.transformer make {_MAKE[name]})" if name in _MAKE
            else "the recipe that wrote it (seqviz.transformer.pretrained.save_checkpoint)")
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}: build it with {make}")
    want = SHA256.get(name) if sha256 == "committed" else sha256
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != want:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {want}: the file is not the checkpoint this version "
                         f"of seqviz was made with. Rebuild it with {make} and put the SHA-256 it prints in "
                         f"seqviz.transformer.pretrained.SHA256[{name!r}], or reinstall seqviz")
    record = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    cls, config_cls = _KINDS[record["kind"]]
    model = cls(config_cls(**record["config"]))
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in record["state"].items()}, strict=False)
    if unexpected or set(missing) - {"V.weight"}:
        raise ValueError(f"checkpoint {path} does not fit the model: missing {missing}, unexpected {unexpected}")
    if "V.weight" in missing:
        model.V.weight = model.E.weight if hasattr(model, "E") else model.E_tgt.weight    # (9.16) tied again
    return model.eval(), record["vocab"], record["info"]


def load_char_lm(path: str | Path | None = None, sha256: str | None = "committed"):
    """The shipped character LM: (TransformerLM in eval mode, itos, info), after checking the file's SHA-256, read with
    ``weights_only=True``; ``info`` holds its recipe, build time and losses (``valid_loss``: the whole shakespeare
    validation split, windows of 64)."""
    model, vocab, info = load_checkpoint("shakespeare_char", path, sha256)
    return model, vocab["itos"], info


def load_dates(task=None, path: str | Path | None = None, sha256: str | None = "committed"):
    """The shipped date normaliser: (EncoderDecoderTransformer in eval mode, info), after checking the file's SHA-256,
    read with ``weights_only=True``. With ``task`` (chapter 5's ``date_pairs``), check that its vocabularies are the
    ones the model was trained with."""
    model, vocab, info = load_checkpoint("dates_transformer", path, sha256)
    if task is not None and (list(task.src_vocab.itos) != vocab["src"] or list(task.tgt_vocab.itos) != vocab["tgt"]):
        raise ValueError("this task's vocabularies are not the ones the date model was trained with: build the task "
                         f"as the recipe does, date_pairs(**{info['recipe']['task']})")
    return model, info


def build(name: str, progress: bool = True, path: str | Path | None = None) -> tuple[str, dict]:
    """Train the shipped recipe ``name`` ("char" or "dates"), measure it, write its checkpoint; returns (SHA-256,
    info)."""
    if name == "char":
        data = char_data()
        model, itos, info = train_char_lm(SHIPPED_CHAR, data, progress)
        reloaded = _round_trip(model, "shakespeare_char", {"itos": itos}, info)
        valid = data[2]
        info["valid_loss"] = round(window_loss(reloaded, valid, SHIPPED_CHAR.context), 4)
        info["slice_loss"] = window_loss(reloaded, valid[:SLICE], SHIPPED_CHAR.context)
        info["slice"] = f"valid[:{SLICE}], window_loss T={SHIPPED_CHAR.context}"
        return save_checkpoint(model, "shakespeare_char", {"itos": itos}, info, path), info
    if name == "dates":
        model, task, info = train_dates(SHIPPED_DATES, progress)
        vocab = {"src": list(task.src_vocab.itos), "tgt": list(task.tgt_vocab.itos)}
        reloaded = _round_trip(model, "dates_transformer", vocab, info)
        info["exact_match"] = round(dates_exact_match(reloaded, task), 4)
        with evaluating(reloaded), torch.no_grad():
            b = next(iter(task.valid))
            info["slice_loss"] = float(reloaded(b.x, b.y, mask=b.mask)[1])
        info["slice"] = "the first validation batch of the task, teacher-forced loss"
        return save_checkpoint(model, "dates_transformer", vocab, info, path), info
    raise ValueError(f"name must be 'char' or 'dates', got {name!r}")


def _round_trip(model: nn.Module, name: str, vocab: dict, info: dict) -> nn.Module:
    """The model as a loaded checkpoint will be (float16 weights): the losses recorded are the loaded model's."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.pt"
        save_checkpoint(model, name, vocab, info, path)
        loaded, _, _ = load_checkpoint(name, path, sha256=None)
    return loaded
