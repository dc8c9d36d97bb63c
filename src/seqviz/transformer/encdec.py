"""The encoder-decoder transformer (Vaswani et al. 2017; SLP 3rd ed. draft, ch. 9, §9.9) and its decoder binding.

A bidirectional encoder reads the source; a causal decoder reads the target so far and, in every block, attends to the
encoder's output (cross-attention). ``model.bind(src, mask)`` is the decoder binding ``seqviz.decode`` steps (the one
both encoder-decoders share, ``seqviz.seq2seq.Seq2Seq`` included); ``greedy`` decodes a batch.

Shapes, batch first: B batch, S source length, T target length, d_model model width, H heads, L layers, V_tgt the
target vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz import evaluating
from seqviz._checks import IGNORE_INDEX, _IMPLS, _check_choice, _check_ids, _check_positive, _check_targets
from seqviz.data.batches import shift_right

from .layers import (_ACTIVATIONS, _NORMS, _POSITIONS, BlockCache, LayerNorm, LearnedPositions, SinusoidalPositions,
                     TransformerBlock, _check_key_padding_mask, _init_weights)

__all__ = ["EncoderDecoderConfig", "EncoderDecoderTransformer", "EncDecState", "EncoderDecoderBinding"]


@dataclass
class EncoderDecoderConfig:
    """Sizes of an encoder-decoder transformer; the target side's ``bos_id`` starts decoding and ``pad_id`` fills
    the decoder input where targets are IGNORE_INDEX. Presets ``tiny`` and ``full``."""

    src_vocab_size: int
    tgt_vocab_size: int
    bos_id: int                  # target-side <s>, the decoder's first input
    pad_id: int                  # target-side padding id (decoder input past </s>; never scored)
    max_len: int = 128           # rows of each position table: the longest source, and the most target tokens the
                                 # decoder reads (so greedy and beam search make at most max_len output tokens)
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 2          # blocks on each side
    d_ff: int | None = None
    dropout: float = 0.0
    norm: str = "pre"
    positions: str = "learned"   # "learned" or "sinusoidal"
    activation: str = "gelu"
    bias: bool = True
    tie_weights: bool = True     # the decoder's output layer is its embedding matrix transposed
    impl: str = "fused"
    eps: float = 1e-5
    eos_id: int | None = None    # target-side </s>: greedy decoding stops there (None: always max_new_tokens steps)
    init_std: float = 0.02       # std of the initial weights (GPT-2's 0.02; a small model on a small task learns
                                 # its attention far sooner from ~1/sqrt(d_model), e.g. 0.1 at d_model = 64)

    def __post_init__(self):
        _check_positive(src_vocab_size=self.src_vocab_size, tgt_vocab_size=self.tgt_vocab_size,
                        max_len=self.max_len, d_model=self.d_model, num_heads=self.num_heads,
                        num_layers=self.num_layers)
        self.d_ff = 4 * self.d_model if self.d_ff is None else self.d_ff
        for name in ("bos_id", "pad_id") + (("eos_id",) if self.eos_id is not None else ()):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v < self.tgt_vocab_size:
                raise ValueError(f"{name} must be a target-vocabulary id in [0, {self.tgt_vocab_size}), got {v!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}: each head "
                             f"gets d_k = d_model / H dimensions; pick a number of heads that divides d_model")
        _check_choice("norm", self.norm, _NORMS)
        _check_choice("positions", self.positions, _POSITIONS[:2])
        _check_choice("activation", self.activation, tuple(_ACTIVATIONS))
        _check_choice("impl", self.impl, _IMPLS)
        if isinstance(self.init_std, bool) or not isinstance(self.init_std, (int, float)) or not self.init_std > 0:
            raise ValueError(f"init_std must be a number > 0 (GPT-2 uses 0.02), got {self.init_std!r}")

    @classmethod
    def tiny(cls, src_vocab_size: int, tgt_vocab_size: int, bos_id: int, pad_id: int, **kw):
        return cls(src_vocab_size, tgt_vocab_size, bos_id, pad_id,
                   **{"max_len": 32, "d_model": 32, "num_heads": 2, "num_layers": 1, **kw})

    @classmethod
    def full(cls, src_vocab_size: int, tgt_vocab_size: int, bos_id: int, pad_id: int, **kw):
        return cls(src_vocab_size, tgt_vocab_size, bos_id, pad_id,
                   **{"d_model": 256, "num_heads": 8, "num_layers": 3, "dropout": 0.1, **kw})


class EncDecState(NamedTuple):
    """The decoder's state: ``T_past`` target tokens read, the encoder's ``memory`` (B, S, d_model) and its padding
    mask ``memory_mask`` (B, S) (True = a real source token, or None), and one ``BlockCache`` per decoder layer (its
    self-attention's and cross-attention's keys and values, (B, H, ., d_k); None before the first target token)."""
    T_past: int
    memory: Tensor
    memory_mask: Tensor | None
    caches: tuple[BlockCache, ...] | None

    def index_select(self, index: Tensor) -> "EncDecState":
        """Rows ``index`` (B',) of the memory, its mask and every cache."""
        index = index.to(self.memory.device)
        pick = lambda t: None if t is None else t.index_select(0, index)          # noqa: E731
        caches = None if self.caches is None else tuple(c.index_select(index) for c in self.caches)
        return EncDecState(self.T_past, pick(self.memory), pick(self.memory_mask), caches)


def _as_rows(x: Tensor, what: str) -> Tensor:
    """(S,) -> (1, S); (B, S) stays."""
    x = torch.as_tensor(x)
    if x.dim() not in (1, 2):
        raise ValueError(f"{what} must have shape (B, S) or (S,), got {tuple(x.shape)}")
    return x.unsqueeze(0) if x.dim() == 1 else x


class EncoderDecoderTransformer(nn.Module):
    """Encoder-decoder transformer (Vaswani et al. 2017): a bidirectional encoder over the source, and a causal
    decoder whose blocks also attend to the encoder's output (cross-attention). Trained with teacher forcing:
    forward(src (B, S), targets (B, T), mask (B, S) source padding, True = real) -> (logits (B, T, V_tgt), loss),
    the decoder reading ``shift_right(targets)``, so it fits the trainer's default step over ``PairBatches``.

    Decoding: ``bind(src, mask)`` is the decoder binding for ``seqviz.decode`` (the encoder runs on its first step;
    the source's keys and values are cached in every cross-attention layer); ``greedy`` decodes a batch.
    """

    def __init__(self, config: EncoderDecoderConfig):
        super().__init__()
        self.config = c = config

        def positions():
            return (LearnedPositions(c.max_len, c.d_model) if c.positions == "learned"
                    else SinusoidalPositions(c.max_len, c.d_model))

        def blocks(cross):
            return nn.ModuleList(TransformerBlock(c.d_model, c.num_heads, c.d_ff, c.dropout, c.norm, c.activation,
                                                  c.bias, cross_attention=cross, eps=c.eps, impl=c.impl)
                                 for _ in range(c.num_layers))

        self.E_src, self.E_tgt = nn.Embedding(c.src_vocab_size, c.d_model), nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.pos_src, self.pos_tgt = positions(), positions()
        self.drop = nn.Dropout(c.dropout)
        self.encoder, self.decoder = blocks(False), blocks(True)
        pre = c.norm == "pre"
        self.ln_enc = LayerNorm(c.d_model, c.eps, c.impl) if pre else nn.Identity()
        self.ln_dec = LayerNorm(c.d_model, c.eps, c.impl) if pre else nn.Identity()
        self.V = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        _init_weights(self, 2 * c.num_layers, c.init_std)
        if c.tie_weights:
            self.V.weight = self.E_tgt.weight

    def encode(self, src: Tensor, mask: Tensor | None = None, need_weights: bool = False):
        """src (B, S), mask (B, S) True = real -> (memory (B, S, d_model), weights (B, L, H, S, S) or None)."""
        c = self.config
        _check_ids(src, c.src_vocab_size, "src")
        if mask is not None:
            _check_key_padding_mask(mask, *src.shape, "mask (the source padding mask)")
        x = self.drop(self.E_src(src) + self.pos_src(src.shape[1]))                  # (B, S, d_model)
        weights = []
        for block in self.encoder:
            out = block(x, key_padding_mask=mask, need_weights=need_weights)
            x = out.y
            weights.append(out.self_weights)
        return self.ln_enc(x), (torch.stack(weights, 1) if need_weights else None)    # (B, L, H, S, S)

    def _decode(self, tgt_in: Tensor, memory: Tensor, memory_mask: Tensor | None, need_weights: bool,
                caches: tuple[BlockCache, ...] | None, offset: int, use_cache: bool):
        """The decoder over tgt_in (B, T) at positions offset..offset+T-1 -> (h (B, T, d_model), self weights,
        cross weights, caches)."""
        y = self.drop(self.E_tgt(tgt_in) + self.pos_tgt(tgt_in.shape[1], offset))    # (B, T, d_model)
        self_w, cross_w, new_caches = [], [], []
        for l, block in enumerate(self.decoder):
            out = block(y, causal=True, memory=memory, memory_mask=memory_mask, need_weights=need_weights,
                        cache=None if caches is None else caches[l], use_cache=use_cache)
            y = out.y
            self_w.append(out.self_weights)
            cross_w.append(out.cross_weights)
            new_caches.append(out.cache)
        return self.ln_dec(y), self_w, cross_w, tuple(new_caches)

    def forward(self, src: Tensor, targets: Tensor | None = None, mask: Tensor | None = None,
                tgt_in: Tensor | None = None, return_attention: bool = False):
        c = self.config
        if tgt_in is None:
            if targets is None:
                raise ValueError("give targets (teacher forcing reads shift_right(targets)) or tgt_in")
            tgt_in = shift_right(targets, c.bos_id, c.pad_id)                        # (B, T)
        _check_ids(tgt_in, c.tgt_vocab_size, "tgt_in")
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"src has {src.shape[0]} sequences but the target side has {tgt_in.shape[0]}")
        memory, enc_w = self.encode(src, mask, return_attention)
        h, self_w, cross_w, _ = self._decode(tgt_in, memory, mask, return_attention, None, 0, False)
        logits = self.V(h)                                                            # (B, T, V_tgt)
        loss = None
        if targets is not None:
            B, T = tgt_in.shape
            _check_targets(targets, (B, T), c.tgt_vocab_size)
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T),
                                   ignore_index=IGNORE_INDEX)                         # (B*T, V) vs (B*T,)
        if return_attention:
            return logits, loss, {"encoder": enc_w, "decoder": torch.stack(self_w, 1),
                                  "cross": torch.stack(cross_w, 1)}                   # (B, L, H, ., .) each
        return logits, loss

    # -- decoding ------------------------------------------------------------------------------------------------
    def bind(self, src: Tensor, mask: Tensor | None = None) -> "EncoderDecoderBinding":
        """The decoder binding of ``src`` (B, S) or (S,) (and its padding mask, True = real) for ``seqviz.decode``:
        ``step`` / ``reorder_state``, with ``module`` = this model. The encoder runs lazily, on the first step, so it
        runs in decode's eval mode too."""
        return EncoderDecoderBinding(self, src, mask)

    def _check_max_new_tokens(self, max_new_tokens) -> int:
        """``max_new_tokens`` (None: as many as the target position table allows) as a checked int."""
        limit = self.config.max_len
        if max_new_tokens is None:
            return limit
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int (output tokens to generate), got "
                             f"{max_new_tokens!r}")
        if max_new_tokens > limit:
            raise ValueError(f"max_new_tokens={max_new_tokens} asks for more output tokens than the decoder's position "
                             f"table has rows (config.max_len={limit}): ask for at most {limit}, or build the model "
                             f"with a larger max_len")
        return int(max_new_tokens)

    @torch.no_grad()
    def greedy(self, src: Tensor, mask: Tensor | None = None, max_new_tokens: int | None = None,
               return_attention: bool = False):
        """Batched greedy decoding with the key/value caches, in eval mode (the caller's mode restored, also on
        error): src (B, S), mask (B, S) -> list of B id lists (without <s>, ending with </s> where ``config.eos_id``
        was reached), the contract of ``seqviz.metrics.exact_match``. ``max_new_tokens`` caps the output tokens (None:
        ``config.max_len``, all the position table allows). With ``return_attention``, also the cross-attention
        weights (B, L, H, T_out, S) of the greedy outputs."""
        c = self.config
        n = self._check_max_new_tokens(max_new_tokens)
        binding = self.bind(src, mask)
        B = binding.src.shape[0]
        device = next(self.parameters()).device
        with evaluating(self):
            y = torch.full((B, 1), c.bos_id, dtype=torch.long, device=device)         # (B, 1) <s>
            done = torch.zeros(B, dtype=torch.bool, device=device)
            state, out = None, []
            for _ in range(n):
                logits, state = binding.step(y, state)                              # (B, V_tgt)
                y = logits.argmax(-1, keepdim=True)                                 # (B, 1)
                out.append(y)
                if c.eos_id is not None:
                    done |= y[:, 0] == c.eos_id
                    if bool(done.all()):
                        break
            ids = torch.cat(out, 1)                                                 # (B, T_out)
            weights = None
            if return_attention:
                tgt_in = torch.cat([torch.full((B, 1), c.bos_id, dtype=torch.long, device=device),
                                    ids[:, :-1]], 1)                                # (B, T_out) what the decoder read
                src_d, mask_d = binding.on(device)
                _, _, w = self(src_d, mask=mask_d, tgt_in=tgt_in, return_attention=True)
                weights = w["cross"]                                                # (B, L, H, T_out, S)
        rows = ids.tolist()
        seqs = [r[:r.index(c.eos_id) + 1] if c.eos_id is not None and c.eos_id in r else r for r in rows]
        return (seqs, weights) if return_attention else seqs


class EncoderDecoderBinding:
    """An ``EncoderDecoderTransformer`` bound to its sources: the decoder binding ``seqviz.decode`` steps
    (``model.bind(src, mask)``).

    ``step(ids (B, t_new), state | None) -> (logits (B, V_tgt) of the last position, state)``: with ``state=None``
    the sources are encoded (lazily, so inside decode's eval mode: ``module`` names the model whose mode decode
    switches, and whose device the sources move to); B rows read B sources, or a single source serves any B (a beam
    of k hypotheses is k rows). ``reorder_state(state, index)`` keeps, duplicates or drops rows.
    """

    def __init__(self, model: EncoderDecoderTransformer, src: Tensor, mask: Tensor | None = None):
        src = _as_rows(src, "src")
        _check_ids(src, model.config.src_vocab_size, "src")
        if mask is not None:
            mask = _check_key_padding_mask(_as_rows(mask, "mask"), *src.shape, "mask (the source padding mask)")
        self.module, self.src, self.mask = model, src, mask

    def on(self, device: torch.device) -> tuple[Tensor, Tensor | None]:
        """The sources (n, S) and their mask on ``device``."""
        return self.src.to(device), None if self.mask is None else self.mask.to(device)

    def _start(self, B: int) -> EncDecState:
        """Encode the sources (on the model's device) for B rows."""
        n = self.src.shape[0]
        if n not in (1, B):
            raise ValueError(f"this binding holds {n} sources but step got {B} rows: give one row per source, or "
                             f"bind a single source to decode it as any number of rows (a beam)")
        src, mask = self.on(next(self.module.parameters()).device)
        memory, _ = self.module.encode(src, mask)                                    # (n, S, d_model)
        state = EncDecState(0, memory, mask, None)
        return state if n == B else state.index_select(torch.zeros(B, dtype=torch.long))

    @torch.no_grad()
    def step(self, ids: Tensor, state: EncDecState | None = None) -> tuple[Tensor, EncDecState]:
        m, c = self.module, self.module.config
        ids = torch.as_tensor(ids)
        _check_ids(ids, c.tgt_vocab_size, "ids")                                     # (B, t_new)
        state = self._start(ids.shape[0]) if state is None else state
        if state.memory.shape[0] != ids.shape[0]:
            raise ValueError(f"the state holds {state.memory.shape[0]} sequences but ids has {ids.shape[0]}; use "
                             f"reorder_state to select rows")
        T_read = state.T_past + ids.shape[1]
        if T_read > c.max_len:
            raise ValueError(f"the decoder would read {T_read} target tokens but its position table has "
                             f"config.max_len={c.max_len} rows: decode at most {c.max_len} tokens (max_new_tokens "
                             f"<= {c.max_len}), or build the model with a larger max_len")
        h, _, _, caches = m._decode(ids.to(state.memory.device), state.memory, state.memory_mask, False,
                                    state.caches, state.T_past, True)
        logits = m.V(h[:, -1])                                                        # (B, V_tgt)
        return logits, EncDecState(T_read, state.memory, state.memory_mask, caches)

    @staticmethod
    def reorder_state(state: EncDecState, index: Tensor) -> EncDecState:
        return state.index_select(torch.as_tensor(index, dtype=torch.long))
