"""Recurrent language models, SLP (9.6-9.8) with weight tying (9.14-9.16): a generic ``RecurrentLM`` over any
``RecurrentLayer`` (stateful forward for truncated BPTT, incremental ``step`` for decoding) and the Elman ``RNNLM``.
The trainer's step function for these models, ``lm_step``, lives with the trainer (models never import it).

Shapes: B batch, T time, d_emb, d_h, L layers, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz.decode import next_token_logits_by_step

from seqviz._checks import IGNORE_INDEX, _IMPLS, _NONLINEARITIES, _check_choice, _check_ids, _check_positive, _check_targets
from .elman import ElmanRNN
from .layer import RecurrentLayer, State, map_state

__all__ = ["RecurrentLMConfig", "RecurrentLM", "RNNLMConfig", "RNNLM"]


@dataclass
class RecurrentLMConfig:
    """Sizes of a recurrent LM (any cell). Presets `tiny` (tests, CI) and `full` (the benchmark's longer run)."""

    vocab_size: int
    d_emb: int = 128             # embedding width: rows of E are e_t
    d_h: int = 128               # hidden width
    num_layers: int = 1          # stacked recurrent layers
    tie_weights: bool = True     # (9.14-9.16) use E^T as the output layer; needs d_emb == d_h
    dropout: float = 0.0         # on embeddings and on the top layer's outputs
    impl: str = "fused"          # "fused" (the torch.nn twin on our weights, fast) or "scratch" (the cell loop)

    def __post_init__(self):
        _check_positive(vocab_size=self.vocab_size, d_emb=self.d_emb, d_h=self.d_h, num_layers=self.num_layers)
        _check_choice("impl", self.impl, _IMPLS)
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.tie_weights and self.d_emb != self.d_h:
            raise ValueError(f"weight tying uses E^T as the output layer (9.16), so it needs d_emb == d_h; got "
                             f"d_emb={self.d_emb}, d_h={self.d_h}: make them equal or set tie_weights=False")

    @classmethod
    def tiny(cls, vocab_size: int, **kw):
        return cls(vocab_size, **{"d_emb": 16, "d_h": 16, **kw})

    @classmethod
    def full(cls, vocab_size: int, **kw):
        return cls(vocab_size, **{"d_emb": 200, "d_h": 200, "dropout": 0.2, **kw})


class RecurrentLM(nn.Module):
    """A recurrent language model: e_t = E x_t, h_t = RNN(h_{t-1}, e_t), y_t = softmax(V h_t) (9.6-9.8).

    forward(idx (B, T), targets (B, T) | None, state | None) -> (logits (B, T, V), loss); with return_state=True it
    also returns the layer's final state (carried into the next window: stateful truncated BPTT). For decoding,
    ``step(ids (B, t_new), state) -> (logits (B, V), state)`` carries the state so each new token costs one step,
    and ``reorder_state`` picks batch rows (beams). A subclass gives ``build_layer(config) -> RecurrentLayer``.
    """

    def __init__(self, config: RecurrentLMConfig):
        super().__init__()
        self.config = c = config
        self.E = nn.Embedding(c.vocab_size, c.d_emb)                              # SLP's E, stored one row per word
        self.rnn = self.build_layer(c)
        if (not isinstance(self.rnn, RecurrentLayer) or self.rnn.bidirectional or self.rnn.d_in != c.d_emb
                or self.rnn.d_out != c.d_h):
            raise ValueError(f"build_layer must return a unidirectional RecurrentLayer from d_emb={c.d_emb} to "
                             f"d_h={c.d_h}, got {type(self.rnn).__name__}")
        self.V = nn.Linear(c.d_h, c.vocab_size)                                   # (V, d_h) output layer
        self.drop = nn.Dropout(c.dropout)
        nn.init.uniform_(self.E.weight, -0.1, 0.1)
        nn.init.zeros_(self.V.bias)
        if c.tie_weights:
            # (9.16) y_t = softmax(E^T h_t): one tensor, used twice (nn.Linear computes h V^T, so V = E here)
            self.V.weight = self.E.weight

    def build_layer(self, config: RecurrentLMConfig) -> RecurrentLayer:
        """The recurrent layer from d_emb to d_h; a subclass names its own (ElmanRNN, an LSTM, a GRU)."""
        raise NotImplementedError(f"{type(self).__name__} must define build_layer(config) -> RecurrentLayer")

    @property
    def impl(self) -> str:
        return self.rnn.impl

    @impl.setter
    def impl(self, value: str) -> None:
        _check_choice("impl", value, _IMPLS)
        self.rnn.impl = self.config.impl = value

    def init_state(self, batch_size: int) -> State:
        return self.rnn.init_state(batch_size)

    def forward(self, idx: Tensor, targets: Tensor | None = None, state: State | None = None,
                return_state: bool = False):
        c = self.config
        _check_ids(idx, c.vocab_size)
        B, T = idx.shape
        # (9.6) e_t = E x_t  (x_t one-hot, so a row lookup)
        e = self.drop(self.E(idx))                                                # (B, T, d_emb)
        # (9.7) h_t = g(U h_{t-1} + W e_t)   (or the layer's own cell)
        h, state_n = self.rnn(e, state)                                           # (B, T, d_h), (L, B, d_h) each
        # (9.8) y_t = softmax(V h_t): we return the logits V h_t, the softmax lives in the loss
        logits = self.V(self.drop(h))                                             # (B, T, V)
        loss = None
        if targets is not None:
            _check_targets(targets, (B, T), c.vocab_size)
            if not bool((targets != IGNORE_INDEX).any()):
                raise ValueError(f"every target is {IGNORE_INDEX} (ignored): nothing to score")
            # (9.12-9.13) L_CE = -log y_t[w_{t+1}], averaged over the scored positions (teacher forcing)
            loss = F.cross_entropy(logits.reshape(B * T, c.vocab_size), targets.reshape(B * T),
                                   ignore_index=IGNORE_INDEX)                     # (B*T, V) vs (B*T,)
        return (logits, loss, state_n) if return_state else (logits, loss)

    # -- incremental decoding (the seqviz.decode contract) -----------------------------------------------------
    def step(self, ids: Tensor, state: State | None = None) -> tuple[Tensor, State]:
        """Read ids (B, t_new) after ``state`` (None: the start); -> (logits (B, V) at the last position, state).

        The state summarises the whole prefix, so generating a token costs one step of the RNN, not a re-run of
        the prefix. Runs in the model's current mode (seqviz.decode switches to eval and no_grad).
        """
        logits, _, state = self(ids, state=state, return_state=True)              # (B, t_new, V)
        return logits[:, -1], state                                               # (B, V)

    def reorder_state(self, state: State, index: Tensor) -> State:
        """Rows ``index`` (B',) of a state (L, B, d_h) or tuple of such: (L, B', d_h) each (beams re-ranked)."""
        return map_state(lambda s: s.index_select(1, index), state)

    def next_token_logits(self, context_ids: Sequence[int] | Tensor) -> Tensor:
        """Logits V h_t (V,) for the token after `context_ids` (run from the initial state, in eval mode)."""
        return next_token_logits_by_step(self, context_ids)


@dataclass
class RNNLMConfig(RecurrentLMConfig):
    """RNN language model (9.6-9.8) of Elman cells. The defaults are the chapter's model; presets `tiny`, `full`."""

    nonlinearity: str = "tanh"   # g in (9.3)

    def __post_init__(self):
        super().__post_init__()
        _check_choice("nonlinearity", self.nonlinearity, tuple(_NONLINEARITIES))


class RNNLM(RecurrentLM):
    """The Elman RNN language model: e_t = E x_t, h_t = g(U h_{t-1} + W e_t), y_t = softmax(V h_t) (9.6-9.8)."""

    def build_layer(self, c: RNNLMConfig) -> ElmanRNN:
        return ElmanRNN(c.d_emb, c.d_h, c.num_layers, nonlinearity=c.nonlinearity, impl=c.impl)
