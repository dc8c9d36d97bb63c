"""Sequence labeling (one label per token) and sequence classification (one label per sequence, from the last state
or a pooling of all states, 9.17), with padding masks (the batches of seqviz.data.PaddedBatches). Their accuracy
metric for the trainer, ``accuracy``, lives with the trainer (models never import it).

Shapes: B batch, T time, d_emb, d_h, d_out (2 d_h for a concatenated bidirectional RNN), L layers, K directions.
"""

from __future__ import annotations

from dataclasses import dataclass
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz._checks import (IGNORE_INDEX, _IMPLS, _MERGES, _NONLINEARITIES, _check_choice, _check_ids, _check_positive,
                      _check_targets)
from .elman import ElmanRNN
from .layer import RecurrentLayer, State, state_h

__all__ = ["RecurrentEncoder", "RNNTaggerConfig", "RNNTagger", "RNNClassifierConfig", "RNNClassifier"]


class RecurrentEncoder(nn.Module):
    """Token ids to contextual states: embeddings E, a recurrent layer (any cell, any depth and direction), dropout.

    forward(idx (B, T), mask (B, T) | None) -> (h (B, T, d_out), state_n (L*K, B, d_h) or a tuple of such, mask);
    without a mask, mask = idx != pad_id (all True when pad_id is None). Shared by the tagger and the classifier.
    """

    def __init__(self, vocab_size: int, d_emb: int, layer: RecurrentLayer, dropout: float = 0.0,
                 pad_id: int | None = None):
        super().__init__()
        _check_positive(vocab_size=vocab_size, d_emb=d_emb)
        if not isinstance(layer, RecurrentLayer) or layer.d_in != d_emb:
            raise ValueError(f"layer must be a RecurrentLayer reading d_emb={d_emb} inputs, got "
                             f"{type(layer).__name__} with d_in={getattr(layer, 'd_in', None)}")
        self.vocab_size, self.pad_id = vocab_size, pad_id
        self.E = nn.Embedding(vocab_size, d_emb)
        self.rnn = layer
        self.drop = nn.Dropout(dropout)
        nn.init.uniform_(self.E.weight, -0.1, 0.1)

    @property
    def d_out(self) -> int:
        return self.rnn.d_out

    def forward(self, idx: Tensor, mask: Tensor | None = None) -> tuple[Tensor, State, Tensor]:
        _check_ids(idx, self.vocab_size)
        if mask is None:
            mask = idx != self.pad_id if self.pad_id is not None else torch.ones_like(idx, dtype=torch.bool)
        # (9.6) e_t = E x_t
        e = self.drop(self.E(idx))                                                # (B, T, d_emb)
        h, state_n = self.rnn(e, None, mask)                                      # (B, T, d_out), (L*K, B, d_h)
        return self.drop(h), state_n, mask


def _elman_layer(c) -> ElmanRNN:
    """The Elman layer a tagger or classifier config describes."""
    return ElmanRNN(c.d_emb, c.d_h, c.num_layers, bidirectional=c.bidirectional, merge=c.merge,
                    nonlinearity=c.nonlinearity, impl=c.impl)


def _check_encoder_config(c) -> None:
    _check_positive(vocab_size=c.vocab_size, d_emb=c.d_emb, d_h=c.d_h, num_layers=c.num_layers)
    _check_choice("merge", c.merge, _MERGES)
    _check_choice("nonlinearity", c.nonlinearity, tuple(_NONLINEARITIES))
    _check_choice("impl", c.impl, _IMPLS)
    if not 0 <= c.dropout < 1:
        raise ValueError(f"dropout must be in [0, 1), got {c.dropout}")
    if c.pad_id is not None and not 0 <= c.pad_id < c.vocab_size:
        raise ValueError(f"pad_id {c.pad_id} is outside the vocabulary [0, {c.vocab_size})")


@dataclass
class RNNTaggerConfig:
    """Sequence labeling, one label per token. The defaults are the chapter's tagger; presets `tiny` and `full`."""

    vocab_size: int
    num_tags: int
    d_emb: int = 64
    d_h: int = 64
    num_layers: int = 1
    bidirectional: bool = True   # a tag may depend on the words after it
    merge: str = "concat"        # how the two directions combine: "concat", "sum", "mean"
    nonlinearity: str = "tanh"
    dropout: float = 0.0
    impl: str = "fused"
    pad_id: int | None = 0       # padding id; when forward gets no mask, mask = idx != pad_id

    def __post_init__(self):
        _check_encoder_config(self)
        _check_positive(num_tags=self.num_tags)

    @classmethod
    def tiny(cls, vocab_size: int, num_tags: int, **kw) -> "RNNTaggerConfig":
        return cls(vocab_size, num_tags, **{"d_emb": 16, "d_h": 16, **kw})

    @classmethod
    def full(cls, vocab_size: int, num_tags: int, **kw) -> "RNNTaggerConfig":
        return cls(vocab_size, num_tags, **{"d_emb": 100, "d_h": 128, "num_layers": 2, "dropout": 0.3, **kw})


class RNNTagger(nn.Module):
    """Sequence labeling: y_t = softmax(V h_t) at every real token.

    forward(idx (B, T), targets (B, T) | None, mask (B, T) | None) -> (logits (B, T, n_tags), mean loss over real
    tokens). Without a mask, mask = idx != pad_id.
    """

    def __init__(self, config: RNNTaggerConfig):
        super().__init__()
        self.config = c = config
        self.encoder = RecurrentEncoder(c.vocab_size, c.d_emb, self.build_layer(c), c.dropout, c.pad_id)
        self.V = nn.Linear(self.encoder.d_out, c.num_tags)

    def build_layer(self, config: RNNTaggerConfig) -> RecurrentLayer:
        """The recurrent layer (Elman here); a subclass may return another cell's layer from the same sizes."""
        return _elman_layer(config)

    def forward(self, idx: Tensor, targets: Tensor | None = None, mask: Tensor | None = None):
        h, _, mask = self.encoder(idx, mask)                                      # (B, T, d_out)
        # (9.5) y_t = softmax(V h_t), one label per token; the softmax lives in the loss
        logits = self.V(h)                                                        # (B, T, n_tags)
        loss = None
        if targets is not None:
            _check_targets(targets, tuple(idx.shape), self.config.num_tags, where=mask)
            scored = mask & (targets != IGNORE_INDEX)                             # (B, T)
            loss = F.cross_entropy(logits[scored], targets[scored])               # (n, n_tags) vs (n,)
        return logits, loss


@dataclass
class RNNClassifierConfig:
    """Sequence classification from the last state or a pooling of all states (9.17; bidirectional: Fig. 9.12).
    The defaults are the chapter's classifier; presets `tiny` and `full`."""

    vocab_size: int
    num_classes: int
    d_emb: int = 64
    d_h: int = 64
    num_layers: int = 1
    bidirectional: bool = False
    merge: str = "concat"
    pooling: str = "last"        # "last" final state(s), "mean" (9.17) or "max" over the real tokens
    nonlinearity: str = "tanh"
    dropout: float = 0.0
    impl: str = "fused"
    pad_id: int | None = 0

    def __post_init__(self):
        _check_encoder_config(self)
        _check_positive(num_classes=self.num_classes)
        _check_choice("pooling", self.pooling, ("last", "mean", "max"))

    @classmethod
    def tiny(cls, vocab_size: int, num_classes: int, **kw) -> "RNNClassifierConfig":
        return cls(vocab_size, num_classes, **{"d_emb": 16, "d_h": 16, **kw})

    @classmethod
    def full(cls, vocab_size: int, num_classes: int, **kw) -> "RNNClassifierConfig":
        return cls(vocab_size, num_classes, **{"d_emb": 100, "d_h": 128, "num_layers": 2, "bidirectional": True,
                                               "pooling": "mean", "dropout": 0.3, **kw})


class RNNClassifier(nn.Module):
    """An RNN sequence classifier: y = softmax(V h_pool); forward(idx, targets, mask) -> (logits (B, n), loss).

    pooling "last" uses the final state h_n; bidirectional, it combines the forward RNN's state after the last
    token with the backward RNN's state after the first (Fig. 9.12).
    """

    def __init__(self, config: RNNClassifierConfig):
        super().__init__()
        self.config = c = config
        self.encoder = RecurrentEncoder(c.vocab_size, c.d_emb, self.build_layer(c), c.dropout, c.pad_id)
        self.V = nn.Linear(self.encoder.d_out, c.num_classes)

    def build_layer(self, config: RNNClassifierConfig) -> RecurrentLayer:
        """The recurrent layer (Elman here); a subclass may return another cell's layer from the same sizes."""
        return _elman_layer(config)

    def pool(self, h: Tensor, state_n: State, mask: Tensor) -> Tensor:
        """(B, T, d_out) outputs, final states (L*K, B, d_h) (or a tuple: h_n first), (B, T) mask -> (B, d_out)."""
        how = self.config.pooling
        if how == "mean":
            # (9.17) h_mean = (1/n) sum_i h_i over the n real tokens (outputs are 0 at padding)
            return h.sum(1) / mask.sum(1, keepdim=True)                           # (B, d_out)
        if how == "max":
            # element-wise maximum over the real tokens (padding set to -inf so it never wins)
            return h.masked_fill(~mask[..., None], float("-inf")).amax(1)         # (B, d_out)
        # "last": the top layer's final state h_n (masked steps kept the state, so it is the last *real* one)
        rnn = self.encoder.rnn
        K = rnn.num_directions
        top = self.encoder.drop(state_h(state_n)[-K:])                            # (K, B, d_h) top layer's h_n
        if K == 1:
            return top[0]                                                         # (B, d_h)
        if rnn.merge == "concat":
            # bidirectional, Fig. 9.12: the forward RNN's state after the last token, the backward's after the first
            return torch.cat([top[0], top[1]], -1)                                # (B, 2 d_h) [h^f_n; h^b_1]
        return top.sum(0) if rnn.merge == "sum" else top.mean(0)                  # (B, d_h)

    def forward(self, idx: Tensor, targets: Tensor | None = None, mask: Tensor | None = None):
        h, state_n, mask = self.encoder(idx, mask)                                # (B, T, d_out), (L*K, B, d_h)
        # y = softmax(V h_pool): one label for the whole sequence
        logits = self.V(self.pool(h, state_n, mask))                              # (B, n_classes)
        loss = None
        if targets is not None:
            _check_targets(targets, (idx.shape[0],), self.config.num_classes)
            loss = F.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX)
        return logits, loss
