"""The δ recipe of SLP §9.9 (Fig. 9.24): summarization with a decoder-only language model.

Each pair of an article x_1..x_m and its summary y_1..y_n becomes one training sequence x_1..x_m δ y_1..y_n </s> for
a decoder-only LM, trained with teacher forcing (:func:`build_example`, :func:`summary_batches`, :func:`finetune`);
at inference the article plus δ primes the generation, which stops at ``</s>`` or a length limit
(:func:`prompt_ids`, :func:`summarize`), and :func:`evaluate_rouge` scores what it wrote.

Shapes, batch first: B batch, T time, V vocabulary.
"""
from __future__ import annotations

import random
from typing import NamedTuple, Sequence

import torch

from seqviz._checks import IGNORE_INDEX
from seqviz.data.batches import Batch
from seqviz.decode import beam_search, generate
from seqviz.metrics import rouge_corpus
from seqviz.summarize.tokenizer import SummaryTokenizer
from seqviz.transformer import TransformerLM

__all__ = ["MAX_SUMMARY", "Example", "build_example", "summary_batches", "make_examples", "finetune", "prompt_ids",
           "summarize", "evaluate_rouge"]


# ----------------------------------------------------------------------------------------------------------------
# The δ recipe for summarization (SLP §9.9, Fig. 9.24): x_1..x_m δ y_1..y_n </s>, with a loss mask
# ----------------------------------------------------------------------------------------------------------------
#: the longest summary: headlines are cut to it in training, and generation stops there (BBC headlines: 5-12 tokens)
MAX_SUMMARY = 24


class Example(NamedTuple):
    """One training sequence: ``x`` the LM's input, ``y`` its next-token targets (IGNORE_INDEX where not scored),
    ``m`` the number of article tokens kept (x[m] is δ)."""
    x: list[int]
    y: list[int]
    m: int


_LOSS_ON = ("summary", "all")


def build_example(article_ids: Sequence[int], summary_ids: Sequence[int], delim_id: int, eos_id: int,
                  max_len: int, loss_on: str = "summary", max_summary: int | None = None) -> Example:
    """The sequence s = x_1..x_m δ y_1..y_n </s> as an LM example: input s[:-1], targets s[1:].

    ``loss_on="summary"`` scores only the targets y_1..y_n </s> (the positions from δ on); ``"all"`` scores every
    next token, the article's included. Truncation policy, so that the sequence fits the model's ``max_len``
    positions: the summary is cut to ``max_summary`` tokens (default MAX_SUMMARY, the limit generation uses), then
    the article keeps its *first* tokens (the lead of a news story carries most of its content); δ and the summary
    always fit.
    """
    if loss_on not in _LOSS_ON:
        raise ValueError(f"loss_on must be one of {_LOSS_ON} (score the summary only, or every token), got {loss_on!r}")
    article, summary = [int(i) for i in article_ids], [int(i) for i in summary_ids]
    if not article:
        raise ValueError("the article is empty: there is nothing to summarise (drop empty articles first)")
    if not summary:
        raise ValueError("the summary is empty: every training pair needs a summary of at least one token")
    if delim_id in article or delim_id in summary:
        raise ValueError(f"the delimiter id {delim_id} appears inside the article or the summary; the model could "
                         f"not tell where the article ends. Encode text with SummaryTokenizer.encode, which refuses it")
    max_summary = min(MAX_SUMMARY, max_len - 2) if max_summary is None else max_summary
    if max_len < 4 or max_summary < 1:
        raise ValueError(f"max_len={max_len} is too short for an article token, δ, a summary token and </s>")
    if max_summary > max_len - 2:  # at least one article token, δ and </s> must fit beside the summary
        raise ValueError(f"max_summary={max_summary} leaves no room for the article in max_len={max_len}: use at most "
                         f"max_len - 2 = {max_len - 2} summary tokens")
    summary = summary[:max_summary]
    # s has m + 1 + n + 1 tokens and the model reads len(s) - 1 <= max_len of them
    m = min(len(article), max_len + 1 - (len(summary) + 2))
    s = article[:m] + [delim_id] + summary + [eos_id]
    x, y = s[:-1], s[1:]
    if loss_on == "summary":
        # x[m] is δ: from there on each target is a summary token (or </s>); before it, article tokens are not scored
        y = [IGNORE_INDEX] * m + y[m:]
    return Example(x, y, m)


def summary_batches(examples: Sequence[Example], batch_size: int, pad_id: int, *, epochs: int = 1,
                    seed: int = 0, shuffle: bool = True) -> list[Batch]:
    """Batches of right-padded examples: x padded with ``pad_id``, y with IGNORE_INDEX (never scored; a causal LM
    never lets a real position see the padding after it, so no attention mask is needed). With ``shuffle``, each of
    the ``epochs`` passes visits the examples in a new order drawn from ``seed`` (never the global RNG)."""
    if not examples:
        raise ValueError("no examples to batch")
    rng = random.Random(seed)
    order: list[int] = []
    for _ in range(epochs):
        idx = list(range(len(examples)))
        if shuffle:
            rng.shuffle(idx)
        order += idx
    out = []
    for i in range(0, len(order), batch_size):
        chunk = [examples[j] for j in order[i:i + batch_size]]
        T = max(len(e.x) for e in chunk)
        x = torch.full((len(chunk), T), pad_id, dtype=torch.long)                  # (B, T)
        y = torch.full((len(chunk), T), IGNORE_INDEX, dtype=torch.long)            # (B, T)
        for b, e in enumerate(chunk):
            x[b, :len(e.x)] = torch.tensor(e.x)
            y[b, :len(e.y)] = torch.tensor(e.y)
        out.append(Batch(x, y))
    return out


def make_examples(tok: SummaryTokenizer, articles, max_len: int, loss_on: str = "summary",
                  max_new_tokens: int = MAX_SUMMARY) -> list[Example]:
    """Training examples for records with .body and .headline: the article cut to the same first
    ``max_len - 1 - max_new_tokens`` tokens the prompt keeps at inference (:func:`prompt_ids`), the headline to
    ``max_new_tokens`` tokens."""
    keep = max_len - 1 - max_new_tokens
    if keep < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} leaves no room for the article in max_len={max_len}: use "
                         f"at most max_len - 2 = {max_len - 2}")
    return [build_example(tok.encode(_lead_text(a.body, keep))[:keep], tok.encode(" " + a.headline.strip()),
                          tok.delim_id, tok.eos_id, max_len, loss_on, max_summary=max_new_tokens) for a in articles]


def _lead_text(body: str, n_tokens: int) -> str:
    """The body's first words, enough for ``n_tokens`` BPE pieces (a piece is never shorter than a word's share):
    encoding a whole 600-token body to keep 100 tokens would waste most of the time."""
    return " ".join(body.split(" ")[:n_tokens]) if body.strip() else body


def finetune(model: TransformerLM, tok: SummaryTokenizer, articles, steps: int, *, batch_size: int = 16,
             lr: float = 1e-3, loss_on: str = "summary", warmup: int = 20, seed: int = 0, progress: bool = True,
             max_new_tokens: int = MAX_SUMMARY):
    """Train ``model`` on the δ-joined pairs of ``articles`` for ``steps`` optimizer steps through ``seqviz.train``
    (AdamW, warm-up + cosine); returns the History (time, tokens/s, losses)."""
    from seqviz.train import Trainer, TrainConfig, WarmupCosine

    exs = make_examples(tok, articles, model.config.max_len, loss_on, max_new_tokens)
    epochs = steps * batch_size // len(exs) + 1
    batches = summary_batches(exs, batch_size, tok.pad_id, epochs=epochs, seed=seed)
    cfg = TrainConfig(max_steps=steps, lr=lr, seed=seed, progress=progress, schedule=WarmupCosine(warmup=warmup))
    return Trainer(model, cfg, batches).fit()


# ----------------------------------------------------------------------------------------------------------------
# Generation (summarization, Fig. 9.24): the article and δ prime the LM, which writes until </s> or the limit
# ----------------------------------------------------------------------------------------------------------------
_METHODS = ("greedy", "beam", "sample")


def prompt_ids(tok: SummaryTokenizer, article: str, max_len: int, max_new_tokens: int) -> list[int]:
    """The article's first tokens followed by δ, cut so that prompt + summary fit ``max_len`` positions."""
    ids = tok.encode(article)
    if not ids:
        raise ValueError("the article is empty: there is nothing to summarise")
    keep = max_len - 1 - max_new_tokens
    if keep < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} leaves no room for the article in max_len={max_len}")
    return ids[:keep] + [tok.delim_id]


def summarize(model: TransformerLM, tok: SummaryTokenizer, article: str, method: str = "greedy",
              max_new_tokens: int = MAX_SUMMARY, *, min_new_tokens: int = 2, beam_size: int = 4,
              length_penalty: float = 0.6, temperature: float = 1.0, top_k: int | None = None,
              seed: int | None = 0) -> list[int]:
    """A summary of ``article`` (ids, without the final ``</s>``): the prompt is the article's first tokens + δ
    (:func:`prompt_ids`); decoding stops at ``</s>`` or after ``max_new_tokens``, and ``</s>`` is not allowed before
    ``min_new_tokens`` tokens (an undertrained model's most likely first token is often ``</s>``). ``method`` is
    "greedy", "beam" (``beam_size``, ``length_penalty``) or "sample" (``temperature``, ``top_k``, ``seed``). Specials
    other than ``</s>`` are never generated. With a minimum length, decoding runs in two phases (the first
    ``min_new_tokens`` without ``</s>``, then the rest from the best of them), so beam search keeps one hypothesis
    across the boundary."""
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if (isinstance(min_new_tokens, bool) or not isinstance(min_new_tokens, int)
            or not 0 <= min_new_tokens <= max_new_tokens):
        raise ValueError(f"min_new_tokens must be an int in [0, max_new_tokens={max_new_tokens}], "
                         f"got {min_new_tokens!r}")
    prompt = prompt_ids(tok, article, model.config.max_len, max_new_tokens)
    never = [i for i in tok.special_ids if i != tok.eos_id]

    def run(prefix: list[int], n: int, stop: int | None, suppress: list[int]) -> list[int]:
        if n == 0:
            return []
        if method == "beam":
            return beam_search(model, prefix, beam_size, n, stop_id=stop, length_penalty=length_penalty,
                               suppress_ids=suppress)[0][0]
        return generate(model, prefix, n, greedy=method == "greedy", temperature=temperature, top_k=top_k,
                        seed=seed, stop_id=stop, suppress_ids=suppress)

    first = run(prompt, min_new_tokens, None, never + [tok.eos_id])                 # no </s> yet
    if seed is not None:
        seed += 1  # the second phase draws new random numbers, not the first phase's again
    ids = first + run(prompt + first, max_new_tokens - min_new_tokens, tok.eos_id, never)
    return ids[:-1] if ids and ids[-1] == tok.eos_id else ids


# ----------------------------------------------------------------------------------------------------------------
# Evaluation: ROUGE (seqviz.metrics) of the model's headlines
# ----------------------------------------------------------------------------------------------------------------
def evaluate_rouge(model: TransformerLM, tok: SummaryTokenizer, articles, method: str = "greedy",
                   max_new_tokens: int = MAX_SUMMARY, progress: bool = False,
                   **kw) -> tuple[dict[str, float], list[str]]:
    """ROUGE of the model's headlines for ``articles`` (records with .body and .headline): (scores, headlines)."""
    from seqviz.progress import progress as bar

    b = bar(len(articles), f"summarize ({method})", unit="article") if progress else None
    hyps = []
    for a in articles:
        hyps.append(tok.decode(summarize(model, tok, a.body, method, max_new_tokens, **kw)))
        if b is not None:
            b.update(1)
    if b is not None:
        b.close()
    return rouge_corpus([a.headline for a in articles], hyps), hyps
