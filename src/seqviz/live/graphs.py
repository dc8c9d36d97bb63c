"""The forward passes the browser runs, as modules ``torch.onnx`` exports: the shipped models, on their own
parameters, with the traces each widget draws as extra outputs.

The models' own ``forward`` does not export with a dynamic length: its input checks read tensor values
(``int(idx.min())``, ``bool(mask.any(-1).all())``), which ``torch.export`` cannot trace, and the fused attention's
``is_causal`` depends on the length. So each graph below re-states its model's forward with the model's own pieces
(its embeddings, position tables, LayerNorms, attention projections and head merge, feed-forward layers, LSTM cells)
and no input checks (the page checks its input before it runs a graph). ``tests/test_live_export.py`` proves every
output equal to the package's own forward on the same checkpoint, so the package stays the one implementation.

- :class:`CharLMGraph`       ids (B, T) after a key/value cache (empty: a whole window) -> logits, attention weights
                             and q, k, v of every layer and head (k and v: the cache for the next step);
- :class:`LSTMStepGraph`     one step of a stacked LSTM LM: (x_t, h, c) -> logits, new h, c and the gates f, i, g, o
                             (a loop over time freezes T in an export: the page loops);
- :class:`EncoderGraph`      the encoder of an encoder-decoder: src (B, S) -> memory and its self-attention;
- :class:`DecoderGraph`      its decoder over a whole prefix: (tgt_in (B, T), memory) -> logits, self- and
                             cross-attention weights (the page re-reads the prefix at every step, so greedy and beam
                             search need no cache).

Shapes, batch first: B batch, T time, S source length, L layers, H heads, d_k = d_model / H, V vocabulary, d_h LSTM
width. Every graph runs in eval mode: dropout is the identity and is left out.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from seqviz.lstm import LSTMLM
from seqviz.transformer.encdec import EncoderDecoderTransformer
from seqviz.transformer.layers import MultiHeadAttention, TransformerBlock
from seqviz.transformer.lm import TransformerLM

__all__ = ["CharLMGraph", "LSTMStepGraph", "EncoderGraph", "DecoderGraph", "GATE_NAMES"]

#: the LSTM gates the step graph returns, in SLP's order of computation (seqviz.lstm.GATES)
GATE_NAMES = ("f", "g", "i", "o")


def _attend(mha: MultiHeadAttention, x: Tensor, context: Tensor | None, causal: bool,
            past: tuple[Tensor, Tensor] | None = None):
    """One multi-head attention of ``mha`` (9.46)-(9.48): queries from x (B, T_q, d_model), keys and values from
    ``context`` (cross-attention) or from x after the ``past`` keys and values (B, H, P, d_k) of the tokens read
    before (a key/value cache) -> (output (B, T_q, d_model), weights (B, H, T_q, T_k), Q, K, V)."""
    # (9.47) Q = X W^Q, K = X W^K, V = X W^V for every head at once (the module's own projections)
    Q, kv = mha.project(x, context)                                               # (B, H, T_q, d_k), KVCache
    K, V = kv.K, kv.V                                                             # (B, H, T_k, d_k)
    if past is not None:
        K, V = torch.cat([past[0], K], dim=2), torch.cat([past[1], V], dim=2)    # (B, H, P + T_q, d_k)
    # (9.37) q_i . k_j / sqrt(d_k), every pair at once: (B, H, T_q, T_k)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(mha.d_k)
    if causal:
        # SLP Fig. 9.17: query i, the (T_k - T_q + i)-th position, sees the keys up to it (weight exactly 0 beyond)
        T_q, T_k = Q.shape[2], K.shape[2]
        allowed = torch.ones(T_q, T_k, dtype=torch.bool, device=x.device).tril(T_k - T_q)   # (T_q, T_k)
        scores = scores.masked_fill(~allowed, -math.inf)
    # (9.31)-(9.32) alpha_ij = softmax_j(score_ij)
    weights = torch.softmax(scores, dim=-1)                                       # (B, H, T_q, T_k)
    # (9.39) head_i = alpha V; (9.46) the heads concatenated and mixed by W^O
    return mha.merge_heads(torch.matmul(weights, V)), weights, Q, K, V


def _block(block: TransformerBlock, x: Tensor, causal: bool, memory: Tensor | None = None,
           past: tuple[Tensor, Tensor] | None = None):
    """``TransformerBlock.forward`` in eval mode, pre- or post-norm, after the ``past`` self-attention keys and
    values, with cross-attention to ``memory`` when given: x (B, T, d_model) -> (y, self-attention (weights, Q, K,
    V), cross-attention weights or None)."""
    pre = block.norm == "pre"
    a, w, Q, K, V = _attend(block.attn, block.ln1(x) if pre else x, None, causal, past)
    # pre-norm: z = x + SelfAttn(LayerNorm(x)); post-norm (9.40): z = LayerNorm(x + SelfAttn(x))
    z = x + a if pre else block.ln1(x + a)
    cross = None
    if memory is not None:
        c, cross, _, _, _ = _attend(block.cross_attn, block.ln_cross(z) if pre else z, memory, False)
        z = z + c if pre else block.ln_cross(z + c)
    # pre-norm: y = z + FFNN(LayerNorm(z)); post-norm (9.41): y = LayerNorm(z + FFNN(z))
    y = z + block.ffn(block.ln2(z)) if pre else block.ln2(z + block.ffn(z))
    return y, (w, Q, K, V), cross


def _embed(E: nn.Embedding, pos: nn.Module | None, ids: Tensor, offset=0) -> Tensor:
    """SLP Fig. 9.20: the token embedding plus the position embedding of positions offset..offset+T-1:
    (B, T, d_model)."""
    x = E(ids)                                                                    # (B, T, d_model)
    return x if pos is None else x + pos(ids.shape[1], offset)                   # + (T, d_model)


class CharLMGraph(nn.Module):
    """A ``TransformerLM`` reading ids (B, T) after the keys and values ``past_k``, ``past_v`` (B, L, H, P, d_k) of
    the P tokens read before (P = 0: a whole window) -> logits (B, T, V), attention (B, L, H, T, P + T), the queries
    (B, L, H, T, d_k) and the keys and values (B, L, H, P + T, d_k) each head's attention took: what AttentionSteps
    draws, and the cache of ``TransformerLM.step`` for the next token."""

    output_names = ("logits", "attention", "q", "k", "v")

    def __init__(self, model: TransformerLM):
        super().__init__()
        self.model = model.eval()

    def forward(self, ids: Tensor, past_k: Tensor, past_v: Tensor):
        m = self.model
        x = _embed(m.E, m.pos, ids, past_k.shape[3])                              # (B, T, d_model)
        weights, qs, ks, vs = [], [], [], []
        for layer, block in enumerate(m.blocks):
            past = (past_k[:, layer], past_v[:, layer])                           # (B, H, P, d_k) each
            x, (w, Q, K, V), _ = _block(block, x, m.config.causal, past=past)
            weights.append(w)
            qs.append(Q)
            ks.append(K)
            vs.append(V)
        # y_t = softmax(E^T h_t): the logits (the softmax is the page's, with its temperature)
        logits = m.V(m.ln_f(x))                                                   # (B, T, V)
        return (logits, *(torch.stack(t, dim=1) for t in (weights, qs, ks, vs)))  # L x (B, H, ...) -> (B, L, H, ...)


class LSTMStepGraph(nn.Module):
    """One time step of a stacked ``LSTMLM``: x (B,) token ids, h_prev and c_prev (L, B, d_h) -> logits (B, V), the
    new h and c (L, B, d_h) and every layer's gates f, g, i, o (L, B, d_h), by each layer's own
    ``LSTMCell.forward_traced``."""

    output_names = ("logits", "h", "c") + GATE_NAMES

    def __init__(self, model: LSTMLM):
        super().__init__()
        rnn = model.rnn
        if rnn.bidirectional:
            raise ValueError("a language model's LSTM reads left to right: this one is bidirectional")
        self.model = model.eval()

    def forward(self, x: Tensor, h: Tensor, c: Tensor):
        m = self.model
        # (9.6) e_t = E x_t
        inp = m.E(x)                                                              # (B, d_emb)
        hs, cs, gates = [], [], {g: [] for g in GATE_NAMES}
        for layer in range(m.rnn.num_layers):
            # (9.22)-(9.29), the cell's own step; a layer's h_t is the next layer's input (the stack of Fig. 9.10)
            (h_t, c_t), trace = m.rnn.cell(layer).forward_traced(inp, (h[layer], c[layer]))
            hs.append(h_t)
            cs.append(c_t)
            for g in GATE_NAMES:
                gates[g].append(trace[g])
            inp = h_t
        # (9.8) y_t = softmax(V h_t): the logits
        logits = m.V(inp)                                                         # (B, V)
        return (logits, torch.stack(hs), torch.stack(cs), *(torch.stack(gates[g]) for g in GATE_NAMES))


class EncoderGraph(nn.Module):
    """The encoder of an ``EncoderDecoderTransformer``: src (B, S) with no padding -> memory (B, S, d_model) and its
    self-attention weights (B, L, H, S, S)."""

    output_names = ("memory", "attention")

    def __init__(self, model: EncoderDecoderTransformer):
        super().__init__()
        self.model = model.eval()

    def forward(self, src: Tensor):
        m = self.model
        x = _embed(m.E_src, m.pos_src, src)                                       # (B, S, d_model)
        weights = []
        for block in m.encoder:
            x, (w, _, _, _), _ = _block(block, x, False)                          # bidirectional
            weights.append(w)
        return m.ln_enc(x), torch.stack(weights, dim=1)                           # (B, S, d), (B, L, H, S, S)


class DecoderGraph(nn.Module):
    """The decoder of an ``EncoderDecoderTransformer`` over a whole prefix: tgt_in (B, T) (starting with <s>) and the
    encoder's memory (B, S, d_model) -> logits (B, T, V_tgt), self-attention (B, L, H, T, T) and cross-attention
    (B, L, H, T, S) weights."""

    output_names = ("logits", "self_attention", "cross_attention")

    def __init__(self, model: EncoderDecoderTransformer):
        super().__init__()
        self.model = model.eval()

    def forward(self, tgt_in: Tensor, memory: Tensor):
        m = self.model
        y = _embed(m.E_tgt, m.pos_tgt, tgt_in)                                    # (B, T, d_model)
        self_w, cross_w = [], []
        for block in m.decoder:
            y, (w, _, _, _), cross = _block(block, y, True, memory)
            self_w.append(w)
            cross_w.append(cross)
        logits = m.V(m.ln_dec(y))                                                 # (B, T, V_tgt)
        return logits, torch.stack(self_w, dim=1), torch.stack(cross_w, dim=1)
