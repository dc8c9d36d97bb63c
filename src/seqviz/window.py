"""Chapter 2: the fixed-window neural language model (Bengio et al. 2003, simplified as in SLP §9.1, Fig. 9.1).

The model reads the ``n`` previous words w_{t-n} .. w_{t-1}, looks up one embedding per word in a shared table E,
concatenates them, and maps them through one hidden layer to a distribution over the next word. The equations are
Bengio et al.'s (without their direct embedding-to-output connections); SLP draws the network (Fig. 9.1) but does not
number them, so (2.x) are the book's numbers, as in the chapter, notebooks/02_fixed_window.ipynb:

    (2.1) e = [E_{w_{t-n}}; ...; E_{w_{t-1}}]   (n*d,)   concatenated embeddings (rows of E)
    (2.2) h = f(W e + b1)                      (d_h,)     hidden layer, f = tanh or relu
    (2.3) y = softmax(U h + b2)                (V,)     P(w_t | w_{t-n} .. w_{t-1})

U is the output matrix here, as in Bengio et al.; in the recurrent models (seqviz.rnn, SLP (9.3)-(9.4)) U is the
recurrent matrix and V the output one. E holds one row per word (V, d), where SLP holds one column per word.

It stores no n-gram counts: every context, seen or not, gets a distribution from the same (E, W, b1, U, b2), and
words with similar embeddings give similar predictions. But the window is fixed: nothing before w_{t-n} can matter,
and because W has a separate block W_k for each window position k (W e = sum_k W_k e_k), a phrase such as
"all the" is learned once per position it can occupy (SLP Fig. 9.1). ``position_contributions`` exposes that.

Interface: ``forward(idx, targets=None) -> (logits, loss)`` with idx (B, n) context windows and logits (B, V) for
the one next word (the ``Batch`` of ``seqviz.data.window_data``), and ``next_token_logits(context_ids) -> (V,)``
for ``seqviz.decode``. Shapes: B batch, n window, d = d_emb embedding width, d_h hidden width, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from seqviz import evaluating
from seqviz._checks import _NONLINEARITIES

__all__ = ["WindowConfig", "WindowLM"]

@dataclass
class WindowConfig:
    """Sizes of a fixed-window LM. Presets: ``WindowConfig.tiny(V)`` (CI, notebook) and ``WindowConfig.full(V)``."""

    vocab_size: int  # V: output classes and embedding rows
    context: int = 3  # n: previous words the model sees (a 4-gram model's history)
    d_emb: int = 64  # d: width of each word embedding
    d_h: int = 128  # d_h: width of the hidden layer
    nonlinearity: str = "tanh"  # f: "tanh" (Bengio et al.) or "relu"
    dropout: float = 0.0  # dropout on e and h while training (0 = none)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context", "d_emb", "d_h"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"WindowConfig.{name} must be a positive integer, got {value!r}")
        if self.vocab_size < 2:
            raise ValueError(f"WindowConfig.vocab_size must be at least 2, got {self.vocab_size}")
        if self.nonlinearity not in _NONLINEARITIES:
            raise ValueError(f"WindowConfig.nonlinearity must be one of {sorted(_NONLINEARITIES)}, "
                             f"got {self.nonlinearity!r}")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"WindowConfig.dropout must be in [0, 1), got {self.dropout!r}")

    @classmethod
    def tiny(cls, vocab_size: int, **overrides: Any) -> "WindowConfig":
        """Small enough to train on a slice of PTB inside a one-minute notebook on 2 CPU cores."""
        return replace(cls(vocab_size, context=3, d_emb=64, d_h=128), **overrides)

    @classmethod
    def full(cls, vocab_size: int, **overrides: Any) -> "WindowConfig":
        """A 5-word window, wider layers and dropout, for a few epochs over all of PTB (bench/bench_window.py)."""
        return replace(cls(vocab_size, context=5, d_emb=128, d_h=256, dropout=0.2), **overrides)


class WindowLM(nn.Module):
    """Fixed-window neural LM: (B, n) context ids -> (B, V) next-word logits."""

    def __init__(self, config: WindowConfig) -> None:
        super().__init__()
        if not isinstance(config, WindowConfig):
            raise TypeError(f"config must be a WindowConfig, got {type(config).__name__}")
        self.config = config
        V, n, d, d_h = config.vocab_size, config.context, config.d_emb, config.d_h
        self.E = nn.Embedding(V, d)  # one row per word, shared by every window position
        self.W = nn.Linear(n * d, d_h)  # W (d_h, n*d) and b1 (d_h,)
        self.U = nn.Linear(d_h, V)  # U (V, d_h) and b2 (V,)
        self.f = _NONLINEARITIES[config.nonlinearity]
        self.drop = nn.Dropout(config.dropout)
        nn.init.normal_(self.E.weight, std=0.1)

    # -- the model ------------------------------------------------------------------------------------------------
    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """h = f(W e + b1) for context windows idx (B, n); returns (B, d_h)."""
        self._check_idx(idx)
        B, n = idx.shape
        # (2.1) e = [E_{w_{t-n}}; ...; E_{w_{t-1}}]: look up n embeddings and lay them side by side
        e = self.E(idx).reshape(B, n * self.config.d_emb)  # (B, n, d) -> (B, n*d)
        # (2.2) h = f(W e + b1)
        return self.f(self.W(self.drop(e)))  # (B, d_h)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """Logits (B, V) of the word after each window, and the mean cross-entropy if ``targets`` (B,) are given."""
        h = self.hidden(idx)  # (B, d_h)
        # (2.3) z = U h + b2; the softmax of y = softmax(z) is left to the loss and to the decoder
        logits = self.U(self.drop(h))  # (B, V)
        loss = None
        if targets is not None:
            self._check_targets(targets, idx.shape[0])
            # cross-entropy L = -log y_{w_t}, averaged over the batch
            loss = F.cross_entropy(logits, targets)
        return logits, loss

    @torch.no_grad()
    def next_token_logits(self, context_ids: Sequence[int] | torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
        """Logits (V,) for the word after ``context_ids``; only the last ``n`` ids are read.

        A context shorter than the window is an error unless ``pad_id`` is given, in which case it is left-padded
        with it (``</s>`` is a good choice for PTB streams, where it separates sentences).
        """
        ids = context_ids if torch.is_tensor(context_ids) else torch.as_tensor(context_ids)
        if ids.dim() != 1:
            raise ValueError(f"context_ids must be a 1-D list of ids, got shape {tuple(ids.shape)}")
        if ids.numel() == 0:
            ids = ids.long()
        elif ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise TypeError(f"context_ids must be integer token ids, got dtype {ids.dtype}")
        n = self.config.context
        if ids.numel() < n:
            if pad_id is None:
                raise ValueError(
                    f"the context has {ids.numel()} ids but this model reads a window of {n}: give at least {n} ids "
                    f"or pass pad_id (e.g. the id of '</s>') to left-pad it"
                )
            ids = torch.cat([torch.full((n - ids.numel(),), int(pad_id), dtype=torch.long), ids.long()])
        window = ids[-n:].long().to(self.E.weight.device).reshape(1, n)  # (n,) -> (1, n)
        with evaluating(self):
            logits, _ = self(window)  # (1, V)
        return logits[0]  # (V,)

    # -- looking inside -------------------------------------------------------------------------------------------
    def position_contributions(self, token_ids: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """W_k E w for every window position k: how each word pushes the hidden layer from each slot.

        W e = sum_k W_k e_k, where W_k = W[:, k*d:(k+1)*d] is the block that reads position k. Returns
        (len(token_ids), n, d_h). The same word gets n unrelated vectors: what the model learns about a word in
        one position does not carry over to the others.
        """
        ids = torch.as_tensor(token_ids).reshape(-1)  # (K,)
        self._check_range(ids)
        ids = ids.long()
        n, d, d_h = self.config.context, self.config.d_emb, self.config.d_h
        Wk = self.W.weight.reshape(d_h, n, d)  # (d_h, n*d) -> (d_h, n, d): one (d_h, d) block per position
        e = self.E(ids)  # (K, d)
        return torch.einsum("hnd,kd->knh", Wk, e)  # (K, n, d_h)

    def num_parameters(self) -> int:
        """Trainable parameters: V d + (n d d_h + d_h) + (d_h V + V)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    # -- checks ---------------------------------------------------------------------------------------------------
    def _check_range(self, ids: torch.Tensor) -> None:
        if ids.numel() and (ids.dtype.is_floating_point or ids.dtype == torch.bool):
            raise TypeError(f"token ids must be integers, got dtype {ids.dtype}")
        V = self.config.vocab_size
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= V):
            bad = int(ids.max()) if int(ids.max()) >= V else int(ids.min())
            raise ValueError(f"token id {bad} is outside the vocabulary 0..{V - 1}: encode text with the same Vocab "
                             f"the model was built for (vocab_size={V})")

    def _check_idx(self, idx: torch.Tensor) -> None:
        if not torch.is_tensor(idx):
            raise TypeError(f"idx must be a LongTensor of shape (B, n), got {type(idx).__name__}")
        n = self.config.context
        if idx.dim() != 2:
            hint = " (one window: use idx.unsqueeze(0), or next_token_logits)" if idx.dim() == 1 else ""
            raise ValueError(f"idx must have shape (B, n={n}), got {tuple(idx.shape)}{hint}")
        if idx.shape[0] == 0:
            raise ValueError("idx is an empty batch (B = 0): give at least one context window")
        if idx.shape[1] != n:
            raise ValueError(f"each window must hold n={n} ids, got {idx.shape[1]} (idx shape {tuple(idx.shape)}); "
                             f"build windows with seqviz.data.fixed_windows(ids, {n})")
        self._check_range(idx)

    def _check_targets(self, targets: torch.Tensor, B: int) -> None:
        if not torch.is_tensor(targets):
            raise TypeError(f"targets must be a LongTensor of shape (B,), got {type(targets).__name__}")
        if targets.shape != (B,):
            raise ValueError(f"targets must have shape (B,) = ({B},), one next word per window, "
                             f"got {tuple(targets.shape)}")
        self._check_range(targets)
