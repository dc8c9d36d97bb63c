"""Where the summary looked: attention from the summary positions back to the article, for ``AttentionHeatmap``.

Shapes, batch first: L layers, H heads, T_q / T_k query / key positions, T the sequence read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from seqviz.summarize.delta import MAX_SUMMARY, prompt_ids
from seqviz.summarize.tokenizer import SummaryTokenizer
from seqviz.transformer import TransformerLM

__all__ = ["SummaryAttention", "summary_attention"]


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
        rows = rows[..., :m] / np.maximum(share[..., None], 1e-12)                # (L, H, n, m)
        mask = np.ones((n, m), dtype=bool)
        k_tokens = tok.pieces(seq[:m])
    else:
        T = len(seq) - 1                                                          # the last token is never read
        rows = rows[..., :T]                                                      # (L, H, n, T)
        mask = np.arange(T)[None, :] <= (m + np.arange(n))[:, None]               # (n, T) causal
        k_tokens = tok.pieces(seq[:T])
    return SummaryAttention(rows, mask, q_tokens, k_tokens, share, m)
