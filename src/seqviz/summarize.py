"""Chapter 7: summarization with a transformer language model (SLP 3rd ed. draft, ch. 9, §9.9).

SLP's recipe (§9.9, Fig. 9.24): each pair of an article x_1..x_m and its summary y_1..y_n becomes one training
sequence x_1..x_m δ y_1..y_n </s> for a decoder-only LM, trained with teacher forcing; at inference the article
plus δ primes the generation, which stops at ``</s>`` or a length limit. Here the articles are BBC news bodies and
the summaries their headlines (``load_corpus("bbc")``), tokenised with chapter 5's BPE.

The pieces, in the order the chapter uses them:

- :class:`SummaryTokenizer`  BPE pieces and ids with the delimiter δ as one special token;
- :func:`build_example`      one δ-joined training sequence (x, y) with a loss mask, truncating the article;
- :func:`summary_batches`    padded batches for ``seqviz.train``;
- :func:`pretrain` / :func:`load_pretrained`  the small LM pretrained on the training bodies (the package's own
  recipe, ``make pretrain-summarize``), stored with a SHA-256 that loading checks;
- :func:`summarize`          greedy / beam / sampled headlines through ``seqviz.decode``;
- :func:`rouge`, :func:`rouge_corpus`  ROUGE-1/2/L (Lin 2004) from scratch, equal to Google's ``rouge-score``;
- :func:`lead_baseline`, :func:`random_sentence_baseline`  the baselines;
- :func:`summary_attention`  the weights from the summary tokens back to the article, for ``AttentionHeatmap``.

Shapes, batch first: B batch, T time, V vocabulary, L layers, H heads, T_q / T_k query / key positions.
"""
from __future__ import annotations

import hashlib
import random
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import torch

from seqviz._checks import IGNORE_INDEX
from seqviz.data.batches import Batch
from seqviz.data.bpe import BPE
from seqviz.data.text import Vocab
from seqviz.decode import beam_search, generate
from seqviz.transformer import TransformerConfig, TransformerLM
from seqviz.metrics import Score, rouge, rouge_corpus, rouge_tokenize  # noqa: F401  (moved to metrics)

__all__ = ["DELIMITER", "SPECIALS", "SummaryTokenizer", "build_example", "Example", "summary_batches",
           "make_examples", "finetune", "PretrainConfig", "pretrain", "save_pretrained", "load_pretrained",
           "PRETRAINED_PATH", "PRETRAINED_SHA256", "prompt_ids",
           "summarize", "Score", "rouge_tokenize", "rouge", "rouge_corpus", "lead_baseline", "headline_length",
           "split_sentences", "random_sentence_baseline", "summary_attention", "SummaryAttention", "evaluate_rouge"]

#: the delimiter δ of SLP §9.9 between article and summary: one special token, never produced by BPE
DELIMITER = "<δ>"
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>", DELIMITER)


# ----------------------------------------------------------------------------------------------------------------
# Tokens: BPE pieces (chapter 5) plus the specials
# ----------------------------------------------------------------------------------------------------------------
class SummaryTokenizer:
    """BPE pieces <-> ids, with ``<pad>``, ``<unk>``, ``<s>``, ``</s>`` and the delimiter δ as specials.

    Why subwords: a word vocabulary of the BBC bodies has tens of thousands of types, most seen once, so names and
    numbers in a test article would be ``<unk>`` and a headline could never copy them; characters make every
    sequence about three times longer, and attention's cost grows with the square of the length. BPE keeps frequent words
    whole and spells rare ones from pieces (Sennrich et al. 2016).
    """

    def __init__(self, bpe: BPE, vocab: Vocab):
        missing = [s for s in SPECIALS if s not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks the specials {missing}; build it with SummaryTokenizer.learn")
        self.bpe, self.vocab = bpe, vocab
        self.pad_id, self.unk_id = vocab.pad_id, vocab.unk_id
        self.eos_id, self.delim_id = vocab.eos_id, vocab[DELIMITER]
        self.special_ids = tuple(vocab[s] for s in SPECIALS)

    @classmethod
    def learn(cls, texts: Sequence[str], num_merges: int = 2000) -> "SummaryTokenizer":
        """Learn ``num_merges`` BPE merges from ``texts`` and a vocabulary of every piece they produce."""
        texts = list(texts)
        bpe = BPE.learn(texts, num_merges)
        pieces = Counter(p for t in texts for p in bpe.encode(t))
        return cls(bpe, Vocab.build(pieces.elements(), specials=SPECIALS))

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        """Ids of the BPE pieces of ``text``; a piece outside the vocabulary becomes ``<unk>``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if DELIMITER in text:
            raise ValueError(f"the text contains the delimiter {DELIMITER!r}, which separates article from summary; "
                             f"remove or replace it before encoding (e.g. text.replace({DELIMITER!r}, ' '))")
        return self.vocab.encode(self.bpe.encode(text))

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """The piece of every id (specials included), e.g. for a heatmap's labels."""
        return self.vocab.decode(ids)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` with the specials left out, stripped."""
        keep = [i for i in (ids.tolist() if isinstance(ids, torch.Tensor) else ids) if int(i) not in self.special_ids]
        return BPE.decode(self.vocab.decode(keep)).strip()

    def state(self) -> dict:
        """Plain lists (what ``torch.load(weights_only=True)`` reads back): the merges and the vocabulary."""
        return {"merges": [list(m) for m in self.bpe.merges], "itos": list(self.vocab.itos)}

    @classmethod
    def from_state(cls, state: dict) -> "SummaryTokenizer":
        return cls(BPE([tuple(m) for m in state["merges"]]), Vocab(state["itos"]))


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
    positions: the summary is cut to ``max_summary`` tokens (default MAX_SUMMARY, the limit generation uses), then the article keeps its
    *first* tokens (the lead of a news story carries most of its content); δ and the summary always fit.
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


def make_examples(tok: "SummaryTokenizer", articles, max_len: int, loss_on: str = "summary",
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


def finetune(model: TransformerLM, tok: "SummaryTokenizer", articles, steps: int, *, batch_size: int = 16,
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
# Pretraining (SLP §9.9.1): a small LM on the training bodies, stored as package data with its SHA-256
# ----------------------------------------------------------------------------------------------------------------
PRETRAINED_PATH = Path(__file__).resolve().parent / "checkpoints" / "bbc_lm.pt"
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
    """The pretrained model (float32, on ``device``) and its tokenizer, after checking the file's SHA-256;
    loaded with ``weights_only=True``. Returns (model, tokenizer, info)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no pretrained checkpoint at {path}: rebuild it with `make pretrain-summarize`")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {sha256}: the file is not the checkpoint this "
                         f"version of seqviz was made with. Rebuild it with `make pretrain-summarize` (and update "
                         f"PRETRAINED_SHA256), or reinstall seqviz")
    import io

    record = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    tok = SummaryTokenizer.from_state(record["tokenizer"])
    cfg = PretrainConfig(**record["info"]["config"])
    model = TransformerLM(cfg.model_config(len(tok)))
    missing, unexpected = model.load_state_dict(record["state"], strict=False)
    if unexpected or set(missing) - {"V.weight"}:
        raise ValueError(f"checkpoint {path} does not fit the model: missing {missing}, unexpected {unexpected}")
    model.V.weight = model.E.weight                                               # (9.16) weight tying again
    return model.to(device or "cpu"), tok, record["info"]


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
              max_new_tokens: int = MAX_SUMMARY, *, min_new_tokens: int = 2, beam_size: int = 4, length_penalty: float = 0.6,
              temperature: float = 1.0, top_k: int | None = None, seed: int | None = 0) -> list[int]:
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
# Baselines
# ----------------------------------------------------------------------------------------------------------------
def headline_length(articles) -> int:
    """k for the lead baseline: the mean headline length in words over ``articles`` (the training split), rounded."""
    n = [len(a.headline.split()) for a in articles]
    if not n:
        raise ValueError("no articles to measure headlines on")
    return max(1, round(float(np.mean(n))))


def lead_baseline(article: str, k: int) -> str:
    """The lead: the article's first ``k`` words (split at white space)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int (words to keep), got {k!r}")
    return " ".join(article.split()[:k])


_SENT_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’]))\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a body: split after . ! ? (and a closing quote) before white space, and at every line break."""
    return [s.strip() for s in _SENT_END.split(text) if s and s.strip()]


def random_sentence_baseline(articles: Sequence[str], seed: int = 0) -> list[str]:
    """One sentence of each article chosen uniformly at random by a generator seeded with ``seed``."""
    rng = random.Random(seed)
    out = []
    for a in articles:
        sents = split_sentences(a)
        if not sents:
            raise ValueError("an article has no sentence: the random-sentence baseline needs non-empty articles")
        out.append(sents[rng.randrange(len(sents))])
    return out


def evaluate_rouge(model: TransformerLM, tok: SummaryTokenizer, articles, method: str = "greedy",
                   max_new_tokens: int = MAX_SUMMARY, progress: bool = False, **kw) -> tuple[dict[str, float], list[str]]:
    """ROUGE of the model's headlines for ``articles`` (records with .body and .headline): (scores, headlines)."""
    from tqdm.auto import tqdm

    it = tqdm(articles, desc=f"summarize ({method})", disable=not progress)
    hyps = [tok.decode(summarize(model, tok, a.body, method, max_new_tokens, **kw)) for a in it]
    return rouge_corpus([a.headline for a in articles], hyps), hyps


# ----------------------------------------------------------------------------------------------------------------
# Where the summary looked: attention from summary positions back to the article (for AttentionHeatmap)
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class SummaryAttention:
    """``weights`` (L, H, T_q, T_k): row j is the attention of the position that *produced* summary token j (δ for
    the first token, then the previous summary token) over the keys; ``mask`` (T_q, T_k) True where a row may
    attend (causal); ``article_share`` (L, H, T_q) the weight each row puts on the article's tokens."""
    weights: np.ndarray
    mask: np.ndarray
    query_tokens: list[str]
    key_tokens: list[str]
    article_share: np.ndarray
    m: int = field(default=0)          # article tokens among the keys (the first m columns)


def summary_attention(model: TransformerLM, tok: SummaryTokenizer, article: str, summary_ids: Sequence[int],
                      keys: str = "all", max_new_tokens: int = MAX_SUMMARY) -> SummaryAttention:
    """Attention of every layer and head while the model writes ``summary_ids`` after the article's prompt.

    ``keys="all"``: columns are the article, δ and the summary so far (rows are true distributions, the future
    masked); ``keys="article"``: only the article's columns, each row renormalised over them (where in the article
    the model looked, given that it looked at the article: compare ``article_share``)."""
    if keys not in ("all", "article"):
        raise ValueError(f'keys must be "all" or "article", got {keys!r}')
    summary_ids = [int(i) for i in summary_ids if int(i) != tok.eos_id]
    if not summary_ids:
        raise ValueError("the summary is empty: generate one first (summarize(...))")
    prompt = prompt_ids(tok, article, model.config.max_len, max_new_tokens)
    seq = prompt + summary_ids[:max(1, model.config.max_len - len(prompt))]
    m = len(prompt) - 1
    device = next(model.parameters()).device
    w = model.attention_weights(torch.tensor(seq, device=device)).float().cpu().numpy()   # (L, H, T, T)
    n = len(seq) - m - 1                                                          # summary tokens shown
    rows = w[:, :, m:m + n, :]                                                    # (L, H, n, T) from δ on
    share = rows[..., :m].sum(-1)                                                 # (L, H, n)
    q_tokens = tok.pieces(seq[m + 1:m + 1 + n])
    if keys == "article":
        rows = rows[..., :m] / np.maximum(share[..., None], 1e-12)
        mask = np.ones((n, m), dtype=bool)
        k_tokens = tok.pieces(seq[:m])
    else:
        T = len(seq) - 1                                                          # the last token is never read
        rows = rows[..., :T]
        mask = np.arange(T)[None, :] <= (m + np.arange(n))[:, None]               # (n, T) causal
        k_tokens = tok.pieces(seq[:T])
    return SummaryAttention(rows, mask, q_tokens, k_tokens, share, m)


def _main(argv: Sequence[str] | None = None) -> None:
    """``python -m seqviz.summarize pretrain``: rebuild the checkpoint by the recipe (what ``make pretrain-summarize``
    runs), on one thread, and print its SHA-256 for ``PRETRAINED_SHA256``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m seqviz.summarize", description=_main.__doc__)
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


if __name__ == "__main__":
    _main()
