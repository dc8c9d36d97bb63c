"""The decoder-only transformer language model (SLP 3rd ed. draft, ch. 9, §9.8, Figs. 9.21-9.22), its key/value
cache for ``seqviz.decode``, its masked-LM twin (BERT, Devlin et al. 2019: the same network without the causal
mask), and the two ways the book scores a context-window LM on a long text (``window_loss``, ``sliding_loss``).

Shapes, batch first: B batch, T time, d_model model width, H heads, d_k = d_model / H, L layers, V vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz import evaluating
from seqviz._checks import IGNORE_INDEX, _IMPLS, _check_choice, _check_ids, _check_mask, _check_positive, \
    _check_targets
from seqviz.decode import generate as decode_generate
from seqviz.decode import next_token_logits_by_step

from .loss import linear_cross_entropy
from .layers import (_ACTIVATIONS, _NORMS, _POSITIONS, BlockCache, KVCache, LayerNorm, LearnedPositions,
                     MultiHeadAttention, SinusoidalPositions, TransformerBlock, _check_span, _init_weights)

__all__ = ["TransformerConfig", "TransformerLM", "DecodeState", "window_loss", "sliding_loss"]


@dataclass
class TransformerConfig:
    """Sizes of a transformer LM. Presets ``tiny`` (tests, CI) and ``full`` (more capacity, for a GPU or patience)."""

    vocab_size: int
    max_len: int = 128           # context: rows of the position table, the longest sequence the model reads
    d_model: int = 128           # model width (embeddings, residual stream)
    num_heads: int = 4           # H; each head has d_k = d_model / H
    num_layers: int = 2          # L blocks
    d_ff: int | None = None      # feed-forward width, default 4 d_model
    dropout: float = 0.0         # on embeddings, attention weights and each sublayer's output
    attn_dropout: float | None = None   # on the attention weights (None: dropout)
    ffn_dropout: float | None = None    # inside the feed-forward layer, after the activation (None: dropout)
    norm: str = "pre"            # "pre" (GPT-2, stable) or "post" (SLP's (9.40)-(9.41), the original)
    positions: str = "learned"   # "learned", "sinusoidal" or "none" (then the model cannot tell order)
    activation: str = "gelu"     # of the feed-forward layer: "gelu" or "relu"
    bias: bool = True            # biases in the linear layers
    tie_weights: bool = True     # (9.14)-(9.16) the output layer is E^T
    causal: bool = True          # True: a left-to-right LM (GPT); False: bidirectional, for a masked LM (BERT)
    impl: str = "fused"          # "fused" (SDPA, F.layer_norm) or "scratch" (§6.1's attention, our LayerNorm)
    eps: float = 1e-5            # LayerNorm epsilon
    init_std: float = 0.02       # std of the initial weights: GPT-2's 0.02; small models on short runs learn their
                                 # attention sooner from a larger one (~1/sqrt(d_model))

    def __post_init__(self):
        _check_positive(vocab_size=self.vocab_size, max_len=self.max_len, d_model=self.d_model,
                        num_heads=self.num_heads, num_layers=self.num_layers)
        if isinstance(self.init_std, bool) or not isinstance(self.init_std, (int, float)) or not self.init_std > 0:
            raise ValueError(f"init_std must be a number > 0 (GPT-2 uses 0.02), got {self.init_std!r}")
        if self.d_ff is None:
            self.d_ff = 4 * self.d_model
        _check_positive(d_ff=self.d_ff)
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}: each head "
                             f"gets d_k = d_model / H dimensions; pick a number of heads that divides d_model")
        _check_choice("norm", self.norm, _NORMS)
        _check_choice("positions", self.positions, _POSITIONS)
        _check_choice("activation", self.activation, tuple(_ACTIVATIONS))
        _check_choice("impl", self.impl, _IMPLS)
        for name in ("dropout", "attn_dropout", "ffn_dropout"):
            p = getattr(self, name)
            if not (p is None and name != "dropout") and not (isinstance(p, (int, float)) and 0 <= p < 1):
                raise ValueError(f"{name} must be in [0, 1){'' if name == 'dropout' else ' or None'}, got {p!r}")

    @classmethod
    def tiny(cls, vocab_size: int, **kw):
        return cls(vocab_size, **{"max_len": 32, "d_model": 32, "num_heads": 2, "num_layers": 2, **kw})

    @classmethod
    def full(cls, vocab_size: int, **kw):
        return cls(vocab_size, **{"max_len": 256, "d_model": 256, "num_heads": 8, "num_layers": 6,
                                  "dropout": 0.1, **kw})


class DecodeState(NamedTuple):
    """The state ``TransformerLM.step`` carries: ``ids`` (B, T_past) the tokens read so far (at most max_len), and
    ``caches``, one ``KVCache`` (B, H, T_past, d_k) per layer."""
    ids: Tensor
    caches: tuple[KVCache, ...]

    def index_select(self, index: Tensor) -> "DecodeState":
        """Rows ``index`` (B',) of the ids and of every cache."""
        return DecodeState(self.ids.index_select(0, index.to(self.ids.device)),
                           tuple(kv.index_select(index) for kv in self.caches))


class TransformerLM(nn.Module):
    """A decoder-only transformer language model (SLP 9.8, Fig. 9.21): x_t = E w_t + P_t, L blocks with causal
    self-attention, then y_t = softmax(E^T h_t) with weight tying (9.16). Every position is trained in parallel
    (teacher forcing); generation primes with a prefix and extends it (Fig. 9.22) through ``seqviz.decode``.

    With ``config.causal=False`` the same network reads in both directions: train it as a masked LM with
    ``seqviz.data.mask_tokens`` (BERT's objective); it cannot generate left to right.

    forward(idx (B, T), targets (B, T) | None, mask (B, T) padding, True = real | None, return_attention=False) ->
    (logits (B, T, V), loss) or, with return_attention, (logits, loss, weights (B, L, H, T, T)). For decoding:
    ``step(ids (B, t_new), state) -> (logits (B, V), state)`` with a key/value cache, ``reorder_state``, and
    ``next_token_logits(context) -> (V,)``.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = config
        self.E = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = {"learned": lambda: LearnedPositions(c.max_len, c.d_model),
                    "sinusoidal": lambda: SinusoidalPositions(c.max_len, c.d_model),
                    "none": lambda: None}[c.positions]()
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(c.d_model, c.num_heads, c.d_ff, c.dropout, c.norm, c.activation, c.bias, eps=c.eps,
                             impl=c.impl, attn_dropout=c.attn_dropout, ffn_dropout=c.ffn_dropout)
            for _ in range(c.num_layers))
        # pre-norm leaves the residual stream unnormalised: one last LayerNorm before the output layer (GPT-2)
        self.ln_f = LayerNorm(c.d_model, c.eps, c.impl) if c.norm == "pre" else nn.Identity()
        self.V = nn.Linear(c.d_model, c.vocab_size, bias=False)
        _init_weights(self, c.num_layers, c.init_std)
        if c.tie_weights:
            # (9.16) y_t = softmax(E^T h_t): one tensor, used twice (nn.Linear computes h V^T, so V = E here)
            self.V.weight = self.E.weight

    @property
    def impl(self) -> str:
        return self.config.impl

    @impl.setter
    def impl(self, value: str) -> None:
        """Switch every attention and LayerNorm between "scratch" and "fused" (same parameters)."""
        _check_choice("impl", value, _IMPLS)
        self.config.impl = value
        for m in self.modules():
            if isinstance(m, (MultiHeadAttention, LayerNorm)):
                m.impl = value

    def num_parameters(self) -> int:
        """Distinct parameters (a tied E counts once)."""
        return sum(p.numel() for p in self.parameters())

    def _run(self, idx: Tensor, key_padding_mask: Tensor | None, need_weights: bool,
             caches: tuple[KVCache, ...] | None, offset: int, use_cache: bool):
        """The blocks over idx (B, T) at positions offset..offset+T-1 -> (h (B, T, d_model), weights, caches)."""
        B, T = idx.shape
        x = self.E(idx)                                                           # (B, T, d_model)
        if self.pos is not None:
            # SLP Fig. 9.20: the input is the word embedding plus the position embedding
            x = x + self.pos(T, offset)                                           # (B, T, d_model) + (T, d_model)
        elif offset + T > self.config.max_len:
            _check_span(T, offset, self.config.max_len)
        x = self.drop(x)
        weights, new_caches = [], []
        for l, block in enumerate(self.blocks):
            out = block(x, key_padding_mask=key_padding_mask, causal=self.config.causal, need_weights=need_weights,
                        cache=None if caches is None else BlockCache(caches[l]), use_cache=use_cache)
            x = out.y
            weights.append(out.self_weights)
            new_caches.append(out.cache.self_attn if use_cache else None)
        h = self.ln_f(x)                                                          # (B, T, d_model)
        attn = torch.stack(weights, dim=1) if need_weights else None    # L x (B, H, T, T_k) -> (B, L, H, T, T_k)
        return h, attn, tuple(new_caches)

    def forward(self, idx: Tensor, targets: Tensor | None = None, mask: Tensor | None = None,
                return_attention: bool = False):
        c = self.config
        _check_ids(idx, c.vocab_size)
        B, T = idx.shape
        if T > c.max_len:
            _check_span(T, 0, c.max_len)
        if mask is not None:
            _check_mask(mask, (B, T))
        h, attn, _ = self._run(idx, mask, return_attention, None, 0, False)
        # y_t = softmax(E^T h_t): the logits; the softmax lives in the loss
        logits = self.V(h)                                                        # (B, T, V)
        loss = None
        if targets is not None:
            _check_targets(targets, (B, T), c.vocab_size)
            if not bool((targets != IGNORE_INDEX).any()):
                raise ValueError(f"every target is {IGNORE_INDEX} (ignored): nothing to score")
            # (9.12)-(9.13) L_CE = -log y_t[w_{t+1}], averaged over every scored position at once (teacher forcing)
            loss = F.cross_entropy(logits.reshape(B * T, c.vocab_size), targets.reshape(B * T),
                                   ignore_index=IGNORE_INDEX)                     # (B*T, V) vs (B*T,)
        return (logits, loss, attn) if return_attention else (logits, loss)

    def loss(self, idx: Tensor, targets: Tensor, mask: Tensor | None = None) -> Tensor:
        """The training loss of ``forward(idx, targets, mask)`` without its logits: the output layer and the
        cross-entropy (9.12)-(9.13) computed chunk by chunk (``linear_cross_entropy``; the same loss and gradients,
        tested). With a word vocabulary the (B, T, V) logits and their softmax are most of a small model's step: this
        is the fast path for training on PTB. A step function for the trainer: ``StepOutput(model.loss(b.x, b.y))``."""
        c = self.config
        _check_ids(idx, c.vocab_size)
        B, T = idx.shape
        if T > c.max_len:
            _check_span(T, 0, c.max_len)
        if mask is not None:
            _check_mask(mask, (B, T))
        _check_targets(targets, (B, T), c.vocab_size)
        h, _, _ = self._run(idx, mask, False, None, 0, False)                     # (B, T, d_model)
        return linear_cross_entropy(h.reshape(B * T, c.d_model), self.V.weight, targets.reshape(B * T))

    @torch.no_grad()
    def attention_weights(self, idx: Tensor) -> Tensor:
        """Attention weights (L, H, T, T) of every layer and head for one sequence idx (T,) or (1, T), in eval mode
        (the caller's mode restored): what the AttentionHeatmap widget takes."""
        idx = torch.as_tensor(idx)
        idx = idx.unsqueeze(0) if idx.dim() == 1 else idx
        with evaluating(self):
            _, _, attn = self(idx.long(), return_attention=True)                  # (1, L, H, T, T)
        return attn[0]                                                            # (L, H, T, T)

    # -- incremental decoding (the seqviz.decode contract) -----------------------------------------------------
    def step(self, ids: Tensor, state: DecodeState | None = None) -> tuple[Tensor, DecodeState]:
        """Read ids (B, t_new) after ``state`` (None: the start) -> (logits (B, V) for the next token, state).

        Each layer's keys and values of the tokens read so far are cached, so a new token costs one position, not a
        re-run of the prefix. When the context would pass max_len, the model re-reads its last max_len tokens (the
        positions shift, so the cache is rebuilt): the same cropping ``next_token_logits`` does.
        """
        c = self.config
        if not c.causal:
            raise ValueError("this model is bidirectional (causal=False, a masked LM): every position sees the "
                             "future, so it cannot decode left to right; use a causal TransformerLM")
        _check_ids(ids, c.vocab_size, "ids")
        if state is not None and state.ids.shape[0] != ids.shape[0]:
            raise ValueError(f"the state holds {state.ids.shape[0]} sequences but ids has {ids.shape[0]}; use "
                             f"reorder_state to select rows")
        prev = ids[:, :0] if state is None else state.ids
        all_ids = torch.cat([prev, ids], dim=1)                                   # (B, T_past + t_new)
        if all_ids.shape[1] <= c.max_len and state is not None:
            h, _, caches = self._run(ids, None, False, state.caches, prev.shape[1], True)
        else:
            all_ids = all_ids[:, -c.max_len:]                                     # (B, <= max_len) the window
            h, _, caches = self._run(all_ids, None, False, None, 0, True)
        logits = self.V(h[:, -1])                                                 # (B, V)
        return logits, DecodeState(all_ids, caches)

    def reorder_state(self, state: DecodeState, index: Tensor) -> DecodeState:
        """Rows ``index`` (B',) of the state: ids (B', T_past), every cached key/value (B', H, T_past, d_k)."""
        return state.index_select(index)

    def next_token_logits(self, context_ids: Sequence[int] | Tensor) -> Tensor:
        """Logits (V,) for the token after ``context_ids`` (its last max_len tokens), in eval mode."""
        return next_token_logits_by_step(self, context_ids, max_context=self.config.max_len)

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int, **kw) -> list[int]:
        """Extend a prompt (SLP Fig. 9.22) with ``seqviz.decode.generate`` (greedy, temperature, top-k; keyword
        arguments pass through). Returns the new ids only."""
        return decode_generate(self, prompt_ids, max_new_tokens, **kw)          # through the key/value cache


# ----------------------------------------------------------------------------------------------------------------
# Scoring a context-window LM on a long text: fixed windows (training curves) and sliding windows (perplexity)
# ----------------------------------------------------------------------------------------------------------------
def _check_stream(ids, model: nn.Module) -> tuple[Tensor, int]:
    """ids as a 1-D LongTensor on the model's device and n, the number of positions with a next token."""
    device = next(model.parameters()).device
    ids = torch.as_tensor(ids).long().to(device)
    n = ids.numel() - 1                                                             # positions with a next token
    if ids.dim() != 1 or n < 1:
        raise ValueError(f"ids must be a 1-D sequence of at least 2 token ids, got shape {tuple(ids.shape)}")
    return ids, n


@torch.no_grad()
def window_loss(model: nn.Module, ids: Tensor, T: int, batch_size: int = 256) -> float:
    """Mean cross-entropy per token (nats) over non-overlapping windows of T tokens covering ``ids``: window k reads
    ids[kT : kT + T] and predicts ids[kT + 1 : kT + T + 1]; every position counts (the last window may be shorter).
    Each window starts with no context, so this is the loss of a model that sees at most T tokens. Runs in eval mode
    and gives the model back in the mode it was in."""
    _check_positive(T=T, batch_size=batch_size)
    ids, n = _check_stream(ids, model)
    total = 0.0
    with evaluating(model):
        full = n // T
        x = ids[:full * T].view(full, T)                                            # (n_windows, T)
        y = ids[1:full * T + 1].view(full, T)                                       # (n_windows, T)
        for i in range(0, full, batch_size):
            logits, _ = model(x[i:i + batch_size])                                  # (b, T, V)
            total += float(F.cross_entropy(logits.flatten(0, 1), y[i:i + batch_size].flatten(), reduction="sum"))
        if n > full * T:                                                            # the shorter last window
            logits, _ = model(ids[full * T:n][None])                                # (1, n - full T, V)
            total += float(F.cross_entropy(logits[0], ids[full * T + 1:n + 1], reduction="sum"))
    return total / n


@torch.no_grad()
def sliding_loss(model: nn.Module, ids: Tensor, T: int, stride: int | None = None, skip_target: int | None = None,
                 batch_size: int = 64) -> tuple[float, int]:
    """Mean cross-entropy per scored token (nats) over a long stream ``ids`` (1-D) read through windows of T tokens
    that start every ``stride`` tokens (default T // 2): the first window scores all its predictions, each later one
    only its last ``stride``, so every target is scored once and (after the first window) with at least T - stride
    tokens of context. Targets equal to ``skip_target`` (e.g. the ``<s>`` of ``sentence_stream``, only ever an input)
    are not scored. Returns (mean loss, number of scored targets); perplexity is exp(mean loss). Runs in eval mode
    and gives the model back in the mode it was in."""
    _check_positive(T=T, batch_size=batch_size)
    stride = T // 2 if stride is None else stride
    if not isinstance(stride, int) or not 1 <= stride <= T:
        raise ValueError(f"stride must be an int in [1, T={T}], got {stride!r}")
    ids, n = _check_stream(ids, model)
    starts = list(range(0, max(n - T, 0) + 1, stride))
    if starts[-1] + T < n:                                                          # cover the tail
        starts.append(n - T)
    total, count, done = 0.0, 0, 0                                                  # done: targets scored so far
    with evaluating(model):
        for i in range(0, len(starts), batch_size):
            chunk = starts[i:i + batch_size]
            L = min(T, n)
            s = torch.tensor(chunk, device=ids.device)[:, None] + torch.arange(L, device=ids.device)   # (b, L)
            logits, _ = model(ids[s])                                               # (b, L, V)
            y = ids[s + 1].clone()                                                  # (b, L) next tokens
            for r, st in enumerate(chunk):                                          # score each target once
                y[r, :max(done - st, 0)] = IGNORE_INDEX
                done = max(done, st + L)
            if skip_target is not None:
                y[y == skip_target] = IGNORE_INDEX
            total += float(F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE_INDEX,
                                           reduction="sum"))
            count += int((y != IGNORE_INDEX).sum())
    if count == 0:
        raise ValueError("no target left to score (every target is skip_target)")
    return total / count, count
