"""Chapter 5: attention. Score functions, soft lookup, encoder-decoder with attention, and self-attention
(SLP 3rd ed. draft, ch. 9, (9.30)-(9.39)).

Shapes, batch first: B batch, T_q query positions, T_k key positions, d_k key/query width, d_v value width.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

__all__ = ["causal_mask", "masked_softmax", "attention", "DotScore", "GeneralScore", "AdditiveScore",
           "SoftAttention", "SelfAttentionExample", "we_wash_our_cats", "SeedBeamScorer", "beam_steps",
           "Seq2SeqConfig", "Seq2Seq", "Seq2SeqState", "Seq2SeqDecoder", "inverse_sigmoid_decay",
           "PairTask", "pair_task", "date_pairs", "exact_match",
           "translation_pairs", "translate", "bleu", "paired_bootstrap"]


def causal_mask(tq: int, tk: int | None = None) -> np.ndarray:
    """(T_q, T_k) bool, True where query i may attend to key j (j <= i): the decoder's mask, SLP Fig. 9.17.

    Before the softmax the masked scores (the upper triangle) are set to -inf, so (9.31) sums over j <= i only.
    """
    tk = tq if tk is None else tk
    for name, n in (("tq", tq), ("tk", tk)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"{name} must be a positive int (a number of positions), got {n!r}")
    return np.tril(np.ones((int(tq), int(tk)), dtype=bool))


# ----------------------------------------------------------------------------------------------------------------
# Soft lookup: scores -> softmax over keys -> weighted sum of values
# ----------------------------------------------------------------------------------------------------------------
def _check_qkv(q, k, v) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch tensor, got {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}; convert with .float()")
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., T, d) with a time axis and a width axis, got shape "
                             f"{tuple(t.shape)}; for a single vector use {name}.unsqueeze(0)")
        if t.shape[-2] == 0 or t.shape[-1] == 0:
            raise ValueError(f"{name} is empty (shape {tuple(t.shape)}): attention needs at least one position "
                             f"and a width of at least 1")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"queries and keys must have the same width d_k to take dot products: q is (..., T_q, "
                         f"{q.shape[-1]}), k is (..., T_k, {k.shape[-1]}); project them to one width (W^Q, W^K)")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"keys and values must have the same length T_k (one value per key): k has "
                         f"{k.shape[-2]} positions, v has {v.shape[-2]}")
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the leading (batch/head) dims of q {tuple(q.shape[:-2])}, k {tuple(k.shape[:-2])} "
                         f"and v {tuple(v.shape[:-2])} do not broadcast; give the same batch size") from None


def _check_attn_mask(mask, scores_shape: torch.Size) -> Tensor:
    if isinstance(mask, np.ndarray):
        mask = torch.from_numpy(mask)
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = may attend), got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    tq, tk = scores_shape[-2:]
    if mask.dim() < 2 or mask.shape[-1] != tk or mask.shape[-2] not in (1, tq):
        raise ValueError(f"mask must broadcast to the scores' shape (..., T_q, T_k) = {tuple(scores_shape)}, got "
                         f"{tuple(mask.shape)}; for a (B, T_k) padding mask pass mask[:, None, :], for a causal "
                         f"mask causal_mask(T_q, T_k)")
    try:
        full = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        full = None
    if full is None or full != scores_shape:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
                         f"{tuple(scores_shape)} (..., T_q, T_k)")
    if not bool(mask.any(-1).all()):
        raise ValueError("a query row of the mask is all False: that query may attend to nothing, and its softmax "
                         "would be 0/0. Give every query at least one key (e.g. drop empty source sequences)")
    return mask


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """(9.31)-(9.32) softmax over the last axis (keys), with masked scores set to -inf first: their weight is exactly 0."""
    if mask is not None:
        mask = _check_attn_mask(mask, scores.shape).to(scores.device)
        scores = scores.masked_fill(~mask, -math.inf)
    return torch.softmax(scores, dim=-1)


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, scale: float | None = None
              ) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention, (9.37)-(9.39): softmax(Q K^T / sqrt(d_k)) V, batch first, any leading dims.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> output (..., T_q, d_v), weights (..., T_q, T_k).
    ``mask`` (bool, broadcast to (..., T_q, T_k)) is True where a query may attend to a key. ``scale`` defaults to
    1/sqrt(d_k); 1.0 gives the unscaled dot product of (9.30)/(9.35). The transformer chapter reuses this function.
    """
    _check_qkv(q, k, v)
    d_k = q.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    # (9.37)/(9.38) score(x_i, x_j) = q_i . k_j / sqrt(d_k), all pairs at once: (..., T_q, T_k)
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    # (9.31)-(9.32) alpha_ij = softmax_j(score(x_i, x_j)), masked keys get weight 0
    weights = masked_softmax(scores, mask)
    # (9.36)/(9.39) y_i = sum_j alpha_ij v_j: (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    output = torch.matmul(weights, v)
    return output, weights


# ----------------------------------------------------------------------------------------------------------------
# Score functions for encoder-decoder attention: query (..., T_q, d_q) x keys (..., T_k, d_k) -> (..., T_q, T_k)
# ----------------------------------------------------------------------------------------------------------------
class DotScore(nn.Module):
    """score(h_dec, h_enc) = h_dec . h_enc (Luong et al., 2015, "dot"): no parameters, widths must match."""

    def __init__(self, d_q: int | None = None, d_k: int | None = None):
        super().__init__()
        if d_q is not None and d_k is not None and d_q != d_k:
            raise ValueError(f"dot scores need the query and key widths to match, got d_q={d_q}, d_k={d_k}; "
                             f"use GeneralScore or AdditiveScore for different widths")

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        if query.shape[-1] != keys.shape[-1]:
            raise ValueError(f"dot scores need the query and key widths to match, got {query.shape[-1]} and "
                             f"{keys.shape[-1]}")
        return torch.matmul(query, keys.transpose(-2, -1))  # (..., T_q, d) @ (..., d, T_k) -> (..., T_q, T_k)


class GeneralScore(nn.Module):
    """score(h_dec, h_enc) = h_dec^T W_a h_enc (Luong et al., 2015, "general", bilinear)."""

    def __init__(self, d_q: int, d_k: int):
        super().__init__()
        self.W_a = nn.Linear(d_k, d_q, bias=False)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        # W_a h_enc for every key: (..., T_k, d_q), then dot with each query -> (..., T_q, T_k)
        return torch.matmul(query, self.W_a(keys).transpose(-2, -1))


class AdditiveScore(nn.Module):
    """score(s, h_j) = v_a^T tanh(W_a s + U_a h_j) (Bahdanau, Cho & Bengio, 2015; Luong's "concat")."""

    def __init__(self, d_q: int, d_k: int, d_attn: int | None = None):
        super().__init__()
        d_attn = d_q if d_attn is None else d_attn
        self.W_a = nn.Linear(d_q, d_attn, bias=False)
        self.U_a = nn.Linear(d_k, d_attn, bias=True)
        self.v_a = nn.Linear(d_attn, 1, bias=False)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        wq = self.W_a(query).unsqueeze(-2)   # (..., T_q, 1, d_attn)
        uk = self.U_a(keys).unsqueeze(-3)    # (..., 1, T_k, d_attn)
        return self.v_a(torch.tanh(wq + uk)).squeeze(-1)  # (..., T_q, T_k, 1) -> (..., T_q, T_k)


SCORES = {"dot": DotScore, "general": GeneralScore, "additive": AdditiveScore}


class SoftAttention(nn.Module):
    """Encoder-decoder attention: scores of one kind, softmax over source positions, context c_t = sum_j a_tj h_j."""

    def __init__(self, score: str, d_q: int, d_k: int, d_attn: int | None = None):
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(map(repr, SCORES))}; got {score!r}")
        self.kind = score
        self.score = (AdditiveScore(d_q, d_k, d_attn) if score == "additive" else SCORES[score](d_q, d_k))

    def forward(self, query: Tensor, keys: Tensor, values: Tensor | None = None, mask: Tensor | None = None
                ) -> tuple[Tensor, Tensor]:
        """query (..., T_q, d_q), keys (..., T_k, d_k), values (default keys), mask (..., T_q or 1, T_k) ->
        (context (..., T_q, d_v), weights (..., T_q, T_k))."""
        values = keys if values is None else values
        _check_qkv(query if self.kind == "dot" else keys, keys, values)
        if not isinstance(query, Tensor) or query.dim() < 2 or query.shape[-2] == 0:
            raise ValueError(f"query must be a non-empty tensor (..., T_q, d_q), got "
                             f"{tuple(query.shape) if isinstance(query, Tensor) else type(query).__name__}")
        scores = self.score(query, keys)            # (..., T_q, T_k)
        weights = masked_softmax(scores, mask)      # (..., T_q, T_k)
        return torch.matmul(weights, values), weights  # (..., T_q, d_v)


# ----------------------------------------------------------------------------------------------------------------
# Seed 003's worked example: "We wash our cats"
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SelfAttentionExample:
    """Every number of the worked example for one query row: raw scores, scaled scores, weights, output."""
    tokens: tuple[str, ...]
    raw: Tensor      # (T,) q_1 . k_j
    scaled: Tensor   # (T,) q_1 . k_j / sqrt(d_k)
    weights: Tensor  # (T,) softmax of the scaled scores
    output: Tensor   # (d_v,) sum_j alpha_1j v_j
    causal_weights: Tensor  # (T,) the same row under the causal mask: only k_1 survives


def we_wash_our_cats(v: Tensor | None = None, d_k: int = 64) -> SelfAttentionExample:
    """Seed 003's example, query "We" against the keys of "We wash our cats": q_1 . k = 13, 24, 20, 12, d_k = 64.

    Builds q_1 and K of width d_k whose dot products are exactly the seed's, runs them through ``attention`` (the
    bidirectional, encoder row: "We" sees all four words) and again under the causal mask. ``v`` (4, d_v) are the
    value vectors; by default a seeded random (4, 4).
    """
    tokens = ("We", "wash", "our", "cats")
    raw = torch.tensor([13.0, 24.0, 20.0, 12.0], dtype=torch.float64)
    q = torch.zeros(1, d_k, dtype=torch.float64)
    q[0, 0] = 1.0                                     # q_1 = e_1, so q_1 . k_j is k_j's first coordinate
    k = torch.zeros(4, d_k, dtype=torch.float64)
    k[:, 0] = raw
    if v is None:
        v = torch.randn(4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    v = torch.as_tensor(v, dtype=torch.float64)
    out, w = attention(q, k, v)                                      # (1, d_v), (1, 4)
    _, w_causal = attention(q, k, v, mask=torch.from_numpy(causal_mask(4))[:1])  # row 1 of the causal mask
    return SelfAttentionExample(tokens, raw, raw / math.sqrt(d_k), w[0], out[0], w_causal[0])


# ----------------------------------------------------------------------------------------------------------------
# Seed 004's beam-search example: greedy says "How will you", a beam of 3 finds "How are you"
# ----------------------------------------------------------------------------------------------------------------
class SeedBeamScorer:
    """A toy next-word model with the probabilities of seed 004's worked example (the slide gives joint
    percentages; the conditionals below are chosen so that every product rounds to the slide's number).

    Words not named in a row share the rest of its probability equally among ``n_fillers`` filler words, so no
    filler outranks a named word. ``next_token_logits(context_ids)`` returns log-probabilities (V,), the score
    function that ``seqviz.decode`` takes.
    """

    TABLE: dict[tuple[str, ...], dict[str, float]] = {
        (): {"How": 0.75, "What": 0.03, "You": 0.01},                   # How 75%, What 3%, You 1%
        ("How",): {"will": 0.36, "are": 0.32, "do": 0.16},              # How will 27%, How are 24%, How do 12%
        ("How", "will"): {"you": 0.08},                                 # How will you 2%
        ("How", "are"): {"you": 0.42},                                  # How are you 10%
        ("How", "do"): {"you": 0.67},                                   # How do you 8%
        ("How", "will", "you"): {"</s>": 0.5},
        ("How", "are", "you"): {"</s>": 0.6, "doing": 0.3},             # How are you </s> 6%, ... doing 3%
        ("How", "do", "you"): {"do": 0.875},                            # How do you do 7%
        ("How", "are", "you", "doing"): {"</s>": 0.9},
        ("How", "do", "you", "do"): {"</s>": 0.5},
    }
    DEFAULT = {"</s>": 0.5}  # any other context: stop with probability 1/2

    def __init__(self, n_fillers: int = 30):
        named = ["<s>", "</s>"] + sorted({w for row in self.TABLE.values() for w in row} - {"</s>"})
        self.fillers = [f"w{i}" for i in range(n_fillers)]
        self.itos = named + self.fillers
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.bos, self.eos = self.stoi["<s>"], self.stoi["</s>"]

    def probs(self, words: tuple[str, ...]) -> dict[str, float]:
        """The next-word distribution after ``words`` (without <s>) as {word: p}, fillers included."""
        row = dict(self.TABLE.get(tuple(words), self.DEFAULT))
        rest = (1.0 - sum(row.values())) / len(self.fillers)
        row.update({w: rest for w in self.fillers})
        return row

    def next_token_logits(self, context_ids) -> Tensor:
        words = tuple(self.itos[int(i)] for i in context_ids if int(i) != self.bos)
        p = torch.zeros(len(self.itos), dtype=torch.float64)        # <s> gets probability 0 (-inf)
        for w, pw in self.probs(words).items():
            p[self.stoi[w]] = pw
        return torch.log(p)

    def decode(self, ids) -> str:
        return " ".join(self.itos[int(i)] for i in ids)


def beam_steps(scorer, bos: int, beam_size: int, max_steps: int, stop_id: int | None = None
               ) -> list[list[tuple[list[int], float]]]:
    """The beam after each step 1..max_steps, as ``seqviz.decode.beam_search`` keeps it: a list (one per step) of
    ``(ids, probability)`` best first, finished hypotheses included. Beam search is deterministic, so the beam
    after t steps is the answer of a search limited to t new tokens."""
    from seqviz.decode import beam_search
    steps = []
    for t in range(1, max_steps + 1):
        beam = beam_search(scorer.next_token_logits, [bos], beam_size, t, stop_id=stop_id)
        steps.append([(ids, math.exp(lp)) for ids, lp in beam])
        if stop_id is not None and all(ids[-1] == stop_id for ids, _ in beam):
            break
    return steps


# ----------------------------------------------------------------------------------------------------------------
# Encoder-decoder (seq2seq) with optional attention
# ----------------------------------------------------------------------------------------------------------------
_ATTN_KINDS = (None, "dot", "general", "additive")


@dataclass
class Seq2SeqConfig:
    """An encoder-decoder of GRU or LSTM layers (seqviz.lstm, chapter 4), with or without attention."""
    src_vocab: int                  # source vocabulary size
    tgt_vocab: int                  # target vocabulary size (V of the output layer)
    pad_id: int = 0                 # padding id of both vocabularies (source and decoder input)
    bos_id: int = 2                 # <s> of the target vocabulary: the decoder's first input
    eos_id: int = 3                 # </s> of the target vocabulary: generation stops after it
    d_emb: int = 32                 # embedding width (source and target)
    d_h: int = 64                   # hidden width of encoder and decoder
    num_layers: int = 1             # layers of encoder and of decoder
    cell: str = "gru"               # "gru" or "lstm"
    attention: str | None = "general"  # None (the final state is all), "dot", "general" or "additive"
    context: str = "output"         # where c_t enters: "output" (Luong: after the RNN) or "input" (Bahdanau)
    input_feeding: bool = False     # Luong's input feeding: the decoder also reads h~_{t-1} (sequential training)
    bidirectional: bool = False     # a bidirectional encoder (directions summed, so widths stay d_h)
    dropout: float = 0.0            # on embeddings and decoder outputs
    teacher_forcing: float = 1.0    # probability of feeding the gold previous word (1 = teacher forcing)
    impl: str = "fused"             # "fused" runs torch.nn.GRU/LSTM on our parameters, "scratch" our cells

    @classmethod
    def tiny(cls, src_vocab: int, tgt_vocab: int, **kw) -> "Seq2SeqConfig":
        """Trains the date task in well under a minute on a laptop CPU."""
        return cls(src_vocab, tgt_vocab, **{"d_emb": 32, "d_h": 64, "bidirectional": True, **kw})

    @classmethod
    def small(cls, src_vocab: int, tgt_vocab: int, **kw) -> "Seq2SeqConfig":
        """Short-sentence translation (trans-de-en, <= 10 words a side) on one CPU thread: 20-25 s an epoch."""
        return cls(src_vocab, tgt_vocab, **{"d_emb": 128, "d_h": 256, "bidirectional": True, "dropout": 0.3, **kw})

    @classmethod
    def full(cls, src_vocab: int, tgt_vocab: int, **kw) -> "Seq2SeqConfig":
        """For real translation (trans-de-en), minutes on a GPU."""
        return cls(src_vocab, tgt_vocab, **{"d_emb": 256, "d_h": 512, "num_layers": 2, "bidirectional": True,
                                            "dropout": 0.2, **kw})


@dataclass
class Seq2SeqState:
    """Everything the decoder needs between steps; rows are hypotheses (beams) and reorder together."""
    dec: object          # decoder RNN state (L, B, d_h) or an LSTM's (h, c)
    enc: Tensor          # encoder outputs (B, S, d_h)
    mask: Tensor         # source padding mask (B, S), True = real token
    feed: Tensor         # the previous attentional output h~_{t-1} (B, d_h) (zeros at the start)


def inverse_sigmoid_decay(epoch: int, k: float = 5.0) -> float:
    """Scheduled sampling's coin weight after ``epoch`` epochs, eps_i = k / (k + exp(i / k)) (Bengio et al., 2015):
    near 1 (teacher forcing) early, falling towards 0 (the model's own predictions)."""
    if k < 1:
        raise ValueError(f"k must be >= 1 (eps_0 = k / (k + 1)), got {k}")
    return k / (k + math.exp(epoch / k))


class Seq2Seq(nn.Module):
    """Encoder-decoder for sequence transduction: encode the source, hand over the final state, decode from <s>.

    ``forward(src (B, S), tgt (B, T), mask=src mask (B, S)) -> (logits (B, T, V), loss)``, where ``tgt`` holds the
    targets (ending in </s>, IGNORE_INDEX past it: ``PairBatches.y``) and the decoder reads <s> + tgt[:, :-1]
    (teacher forcing) or, with probability ``1 - teacher_forcing`` per row and step, its own previous prediction
    (scheduled sampling). With attention, each decoder step looks back at every encoder output (Luong et al., 2015;
    Bahdanau et al., 2015); ``return_attention=True`` adds the weights (B, T, S).
    """

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        from seqviz._checks import _check_choice, _check_positive
        from seqviz.lstm import GRU, LSTM
        c = self.config = config
        _check_positive(src_vocab=c.src_vocab, tgt_vocab=c.tgt_vocab, d_emb=c.d_emb, d_h=c.d_h,
                        num_layers=c.num_layers)
        _check_choice("cell", c.cell, ("gru", "lstm"))
        _check_choice("attention", c.attention, _ATTN_KINDS)
        _check_choice("context", c.context, ("output", "input"))
        if c.context == "input" and c.attention is None:
            raise ValueError("context='input' feeds the attention context into the decoder: it needs an attention "
                             "kind ('dot', 'general' or 'additive')")
        self._check_rate("teacher_forcing", c.teacher_forcing)
        self._check_rate("dropout", c.dropout)
        Layer = GRU if c.cell == "gru" else LSTM
        self.src_emb = nn.Embedding(c.src_vocab, c.d_emb, padding_idx=c.pad_id)
        self.tgt_emb = nn.Embedding(c.tgt_vocab, c.d_emb, padding_idx=c.pad_id)
        self.encoder = Layer(c.d_emb, c.d_h, c.num_layers, bidirectional=c.bidirectional, merge="sum", impl=c.impl)
        # Bahdanau: the decoder RNN reads [y_{t-1}; c_t]; Luong with input feeding reads [y_{t-1}; h~_{t-1}]
        d_dec_in = c.d_emb + (c.d_h if self._feeds(c) else 0)
        self.decoder = Layer(d_dec_in, c.d_h, c.num_layers, impl=c.impl)
        self.attn = SoftAttention(c.attention, c.d_h, c.d_h) if c.attention is not None else None
        # h~_t = tanh(W_c [c_t; s_t]) (Luong et al., 2015, eq. 5); without attention h~_t = s_t
        self.combine = nn.Linear(2 * c.d_h, c.d_h) if c.attention is not None else None
        self.out = nn.Linear(c.d_h, c.tgt_vocab)
        self.drop = nn.Dropout(c.dropout)

    @staticmethod
    def _feeds(c: Seq2SeqConfig) -> bool:
        """Does the decoder RNN read a vector besides y_{t-1} (Bahdanau's c_t, or Luong's fed h~_{t-1})?"""
        return c.attention is not None and (c.context == "input" or c.input_feeding)

    @staticmethod
    def _check_rate(name: str, p) -> float:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
        return float(p)

    # -- encoder -----------------------------------------------------------------------------------------------
    def encode(self, src: Tensor, mask: Tensor | None = None) -> Seq2SeqState:
        """Run the encoder once: -> the decoder's start state (final encoder state, outputs, mask)."""
        from seqviz._checks import _check_ids, _check_mask
        _check_ids(src, self.config.src_vocab, "src")
        B, S = src.shape
        if mask is None:
            mask = torch.ones(B, S, dtype=torch.bool, device=src.device)
        _check_mask(mask, (B, S))
        enc, state = self.encoder(self.drop(self.src_emb(src)), None, mask)   # (B, S, d_h), (L*K, B, d_h)
        L, K = self.config.num_layers, self.encoder.num_directions
        if K == 2:   # sum the two directions' final states: (L*2, B, d_h) -> (L, 2, B, d_h) -> (L, B, d_h)
            state = _map(lambda s: s.reshape(L, 2, B, -1).sum(1), state)
        feed = enc.new_zeros(B, self.config.d_h)                                   # (B, d_h)
        return Seq2SeqState(state, enc, mask, feed)

    # -- one decoder step --------------------------------------------------------------------------------------
    def _step(self, y_prev: Tensor, st: Seq2SeqState) -> tuple[Tensor, Seq2SeqState, Tensor | None]:
        """y_prev (B,) -> logits (B, V), next state, attention weights (B, S) or None."""
        c = self.config
        e = self.drop(self.tgt_emb(y_prev))                                        # (B, d_emb)
        w = None
        if not self._feeds(c):
            inp = e
        elif c.context == "input":
            # Bahdanau: c_t from the previous decoder state s_{t-1}, fed into the RNN with y_{t-1}
            s_prev = _h_top(st.dec)                                                # (B, d_h)
            ctx, w = self.attn(s_prev[:, None, :], st.enc, mask=st.mask[:, None, :])   # (B, 1, d_h), (B, 1, S)
            inp = torch.cat([e, ctx[:, 0]], -1)                                    # (B, d_emb + d_h)
        else:
            inp = torch.cat([e, st.feed], -1)                                      # input feeding: [y; h~_{t-1}]
        out, dec = self.decoder(inp[:, None, :], st.dec)                           # (B, 1, d_h)
        s_t = out[:, 0]                                                            # (B, d_h)
        if self.attn is None:
            h = s_t
        else:
            if c.context == "output":
                # Luong: c_t from the current state s_t
                ctx, w = self.attn(s_t[:, None, :], st.enc, mask=st.mask[:, None, :])  # (B, 1, d_h), (B, 1, S)
            # h~_t = tanh(W_c [c_t; s_t])
            h = torch.tanh(self.combine(torch.cat([ctx[:, 0], s_t], -1)))          # (B, d_h)
        logits = self.out(self.drop(h))                                            # (B, V)
        return logits, Seq2SeqState(dec, st.enc, st.mask, h), (None if w is None else w[:, 0])

    # -- training ------------------------------------------------------------------------------------------------
    def forward(self, src: Tensor, tgt: Tensor, mask: Tensor | None = None, *, teacher_forcing: float | None = None,
                return_attention: bool = False, generator: torch.Generator | None = None):
        """-> (logits (B, T, V), loss) or, with ``return_attention``, (logits, loss, weights (B, T, S))."""
        import torch.nn.functional as F

        from seqviz._checks import IGNORE_INDEX, _check_targets
        from seqviz.data.batches import shift_right
        c = self.config
        ratio = self._check_rate("teacher_forcing", c.teacher_forcing if teacher_forcing is None
                                 else teacher_forcing)
        st = self.encode(src, mask)
        if not isinstance(tgt, Tensor) or tgt.dim() != 2 or tgt.shape[0] != src.shape[0] or tgt.shape[1] == 0:
            raise ValueError(f"tgt must be target ids (B, T) with B = {src.shape[0]} and T >= 1, got "
                             f"{tuple(getattr(tgt, 'shape', ())) or type(tgt).__name__}")
        _check_targets(tgt, tuple(tgt.shape), c.tgt_vocab)
        gold_in = shift_right(tgt, c.bos_id, c.pad_id)                              # (B, T): <s> y_1 .. y_{T-1}
        B, T = tgt.shape
        if ratio == 1.0 and not self._feeds(c):
            return self._forward_parallel(gold_in, tgt, st, return_attention)
        logits, weights = [], []
        y_prev = gold_in[:, 0]
        for t in range(T):
            if t > 0 and ratio < 1.0:
                # the seed's weighted coin toss, one per row: gold with probability `ratio`, else own prediction
                coin = torch.rand(B, generator=generator, device=src.device) < ratio   # (B,)
                y_prev = torch.where(coin, gold_in[:, t], logits[-1].argmax(-1))
            elif t > 0:
                y_prev = gold_in[:, t]
            z, st, w = self._step(y_prev, st)
            logits.append(z)
            weights.append(w)
        logits_t = torch.stack(logits, 1)                                           # (B, T, V)
        # the loss skips IGNORE_INDEX: padding past </s> is never scored
        loss = F.cross_entropy(logits_t.reshape(B * T, -1), tgt.reshape(B * T), ignore_index=IGNORE_INDEX)
        if return_attention:
            w = torch.stack(weights, 1) if self.attn is not None else None         # (B, T, S)
            return logits_t, loss, w
        return logits_t, loss

    def _forward_parallel(self, gold_in: Tensor, tgt: Tensor, st: Seq2SeqState, return_attention: bool):
        """Teacher forcing with nothing fed back: the decoder RNN and the attention run over all T at once (the
        same numbers as the step loop, tested)."""
        import torch.nn.functional as F

        from seqviz._checks import IGNORE_INDEX
        B, T = tgt.shape
        s, _ = self.decoder(self.drop(self.tgt_emb(gold_in)), st.dec)             # (B, T, d_h)
        w = None
        if self.attn is not None:
            ctx, w = self.attn(s, st.enc, mask=st.mask[:, None, :])               # (B, T, d_h), (B, T, S)
            # h~_t = tanh(W_c [c_t; s_t]) for every t
            s = torch.tanh(self.combine(torch.cat([ctx, s], -1)))                 # (B, T, d_h)
        logits = self.out(self.drop(s))                                           # (B, T, V)
        loss = F.cross_entropy(logits.reshape(B * T, -1), tgt.reshape(B * T), ignore_index=IGNORE_INDEX)
        return (logits, loss, w) if return_attention else (logits, loss)

    # -- decoding ------------------------------------------------------------------------------------------------
    def start(self, src: Tensor, mask: Tensor | None = None) -> "Seq2SeqDecoder":
        """Encode once and return an incremental decoder (``step`` / ``reorder_state``) for ``seqviz.decode``."""
        return Seq2SeqDecoder(self, self.encode(src, mask))

    @torch.no_grad()
    def greedy(self, src: Tensor, mask: Tensor | None = None, max_len: int = 50, return_attention: bool = False):
        """Batched greedy decoding: -> list of id lists (without <s>, with </s> when reached), and optionally the
        attention weights (B, T_out, S) of each step."""
        was = self.training
        self.eval()
        st = self.encode(src, mask)
        B = src.shape[0]
        y = torch.full((B,), self.config.bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out, ws = [], []
        for _ in range(max_len):
            z, st, w = self._step(y, st)
            y = z.argmax(-1)
            out.append(y)
            ws.append(w)
            done |= y == self.config.eos_id
            if bool(done.all()):
                break
        self.train(was)
        ids = torch.stack(out, 1).tolist()                                          # (B, T_out)
        seqs = [row[:row.index(self.config.eos_id) + 1] if self.config.eos_id in row else row for row in ids]
        if return_attention:
            return seqs, (torch.stack(ws, 1) if self.attn is not None else None)
        return seqs


class Seq2SeqDecoder:
    """The incremental-decoding contract of ``seqviz.decode`` for one encoded batch of sources.

    ``step(ids (B, t_new), state | None) -> (logits (B, V) of the last position, state)``: with ``state=None`` the
    rows start from the encoded sources (row b of the ids reads source ``b % n_sources``, so a beam of k
    hypotheses for one source is k rows). ``reorder_state(state, index)`` selects or duplicates rows.
    ``next_token_logits(context)`` serves the older score-function decoders (one source).
    """

    def __init__(self, model: Seq2Seq, encoded: Seq2SeqState):
        self.model, self.encoded = model, encoded

    def _initial(self, B: int) -> Seq2SeqState:
        n = self.encoded.enc.shape[0]
        rows = torch.arange(B, device=self.encoded.enc.device) % n                 # (B,)
        return self.reorder_state(self.encoded, rows)

    @torch.no_grad()
    def step(self, ids: Tensor, state: Seq2SeqState | None = None) -> tuple[Tensor, Seq2SeqState]:
        ids = torch.as_tensor(ids, dtype=torch.long).to(self.encoded.enc.device)
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ValueError(f"ids must have shape (B, t_new) with t_new >= 1, got {tuple(ids.shape)}")
        st = self._initial(ids.shape[0]) if state is None else state
        z = None
        for t in range(ids.shape[1]):
            z, st, _ = self.model._step(ids[:, t], st)
        return z, st

    @staticmethod
    def reorder_state(state: Seq2SeqState, index: Tensor) -> Seq2SeqState:
        index = torch.as_tensor(index, dtype=torch.long).to(state.enc.device)
        return Seq2SeqState(_map(lambda s: s.index_select(1, index), state.dec), state.enc.index_select(0, index),
                            state.mask.index_select(0, index), state.feed.index_select(0, index))

    def next_token_logits(self, context_ids) -> Tensor:
        """Logits (V,) after ``context_ids`` (starting with <s>) for the first source of the batch.

        The state after each context is remembered, so a search that extends contexts one token at a time costs
        one decoder step per call (the encoder ran once, in ``Seq2Seq.start``)."""
        ctx = tuple(int(i) for i in context_ids)
        if not ctx:
            raise ValueError("context_ids is empty: start the context with <s> (config.bos_id)")
        cache = self.__dict__.setdefault("_cache", {})
        if ctx[:-1] in cache:
            state = cache[ctx[:-1]][1]
            z, st = self.step(torch.tensor([[ctx[-1]]]), state)
        else:
            z, st = self.step(torch.tensor([list(ctx)]), None)                      # (1, t) from the start
        cache[ctx] = (z, st)
        return z[0]


def _map(fn, state):
    return fn(state) if isinstance(state, Tensor) else tuple(fn(s) for s in state)


def _h_top(state) -> Tensor:
    """The top layer's h of a decoder state (L, B, d_h) or (h, c): (B, d_h)."""
    return (state if isinstance(state, Tensor) else state[0])[-1]


# ----------------------------------------------------------------------------------------------------------------
# Chapter helpers: a pair task ready to train, exact match
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class PairTask:
    """A transduction task ready to train: vocabularies, training/validation batches, held-out pairs as ids.

    Targets end in </s> (the decoder must learn to stop); sources carry no markers.
    """
    src_vocab: object                 # seqviz.data.Vocab of the source tokens
    tgt_vocab: object                 # seqviz.data.Vocab of the target tokens
    train: object                     # PairBatches (shuffled, bucketed by source length)
    valid: object                     # PairBatches
    test_src: list[list[int]]         # held-out source ids
    test_tgt: list[list[int]]         # held-out target ids, each ending with </s>
    test_text: list[tuple[str, str]]  # the held-out pairs as text

    def config(self, preset: str = "tiny", **kw) -> Seq2SeqConfig:
        """A Seq2SeqConfig sized for these vocabularies with their special ids."""
        from seqviz._checks import _check_choice
        _check_choice("preset", preset, ("tiny", "small", "full"))
        ids = dict(pad_id=self.src_vocab.pad_id, bos_id=self.tgt_vocab.bos_id, eos_id=self.tgt_vocab.eos_id)
        if self.src_vocab.pad_id != self.tgt_vocab.pad_id:
            raise ValueError("source and target vocabularies must share the padding id")
        return getattr(Seq2SeqConfig, preset)(len(self.src_vocab), len(self.tgt_vocab), **{**ids, **kw})


def pair_task(train: list[tuple[list[str], list[str]]], valid, test, batch_size: int = 64, *, seed: int = 0,
              min_freq: int = 1, test_text=None) -> PairTask:
    """Vocabularies from the training pairs (lists of tokens) and batches of ids for each split."""
    from seqviz.data import PairBatches, Vocab
    if not train:
        raise ValueError("no training pairs")
    sv = Vocab.build([s for s, _ in train], min_freq=min_freq)
    tv = Vocab.build([t for _, t in train], min_freq=min_freq)

    def ids(pairs):
        return ([sv.encode(list(s)) for s, _ in pairs], [tv.encode(list(t)) + [tv.eos_id] for _, t in pairs])

    tr = PairBatches(*ids(train), batch_size, sv.pad_id, shuffle=True, seed=seed, bucket=True)
    va = PairBatches(*ids(valid), 4 * batch_size, sv.pad_id)
    ts, tt = ids(test)
    text = test_text if test_text is not None else [("".join(s), "".join(t)) for s, t in test]
    return PairTask(sv, tv, tr, va, ts, tt, list(text))


def date_pairs(n_train: int = 6000, n_valid: int = 300, n_test: int = 500, batch_size: int = 64, *,
               seed: int = 0, forms=None) -> PairTask:
    """The date-normalisation task (``seqviz.data.tasks``) as characters -> characters, ready to train."""
    from seqviz.data.tasks import date_task
    t = date_task(n_train, n_valid, n_test, seed=seed, forms=forms)
    split = {k: [(list(e.source), list(e.target)) for e in v] for k, v in t.items()}
    return pair_task(split["train"], split["valid"], split["test"], batch_size, seed=seed,
                     test_text=[(e.source, e.target) for e in t["test"]])


def translation_pairs(corpus, num_merges: int = 4000, batch_size: int = 64, *, seed: int = 0,
                      max_tokens: int = 60, max_words: int | None = None) -> tuple[PairTask, dict]:
    """Sentence pairs (``SentencePair`` records of a Corpus, e.g. ``load_corpus("trans_de_en")``) as BPE pieces.

    One BPE per language is learned on its training side (Sennrich et al., 2016); pairs longer than ``max_tokens``
    pieces on either side are dropped from training only. ``max_words`` keeps, in every split (test included), only
    the pairs of at most that many words (split at whitespace) on each side: short sentences, a task a small model
    learns on a CPU. Returns the task and ``{"src": BPE, "tgt": BPE}``.
    """
    from seqviz.data.bpe import BPE
    if max_words is not None and (isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 1):
        raise ValueError(f"max_words must be a positive int (words per side) or None (no limit), got {max_words!r}")

    def short(pairs) -> list:
        pairs = list(pairs)
        if max_words is None:
            return pairs
        return [p for p in pairs if len(p.source.split()) <= max_words and len(p.target.split()) <= max_words]

    train = list(corpus.train)
    if not train or not hasattr(train[0], "source"):
        raise ValueError("translation_pairs needs a corpus of SentencePair records, such as trans_de_en")
    train = short(train)
    if not train:
        raise ValueError(f"no training pair has at most max_words={max_words} words on each side; raise max_words")
    bpe = {"src": BPE.learn((p.source for p in train), num_merges),
           "tgt": BPE.learn((p.target for p in train), num_merges)}

    def enc(pairs, drop_long: bool):
        out = [(bpe["src"].encode(p.source), bpe["tgt"].encode(p.target)) for p in pairs]
        return [(s, t) for s, t in out if not drop_long or (len(s) <= max_tokens and len(t) <= max_tokens)]

    test = short(corpus.test)
    task = pair_task(enc(train, True), enc(short(corpus.valid), False), enc(test, False), batch_size, seed=seed,
                     test_text=[(p.source, p.target) for p in test])
    return task, bpe


@torch.no_grad()
def translate(model: Seq2Seq, task: PairTask, beam_size: int = 1, *, n: int | None = None,
              max_len: int | None = None, length_penalty: float = 1.0) -> list[str]:
    """Decode the first ``n`` held-out sources (all by default) as text: batched greedy for ``beam_size=1``, else
    ``seqviz.decode.beam_search`` per sentence with the beam scored as one batch. ``max_len`` caps the output
    pieces (default: twice the source's plus 10, so a model that never says </s> stops)."""
    from seqviz.data import pad_batch
    from seqviz.decode import beam_search
    src = task.test_src[:n]
    device = next(model.parameters()).device
    itos, eos = task.tgt_vocab.itos, task.tgt_vocab.eos_id
    outs: list[list[int]] = []
    if beam_size == 1:
        for i in range(0, len(src), 256):
            x, mask = pad_batch(src[i:i + 256], task.src_vocab.pad_id)             # (B, S) x2
            cap = max_len or 2 * x.shape[1] + 10
            outs.extend(model.greedy(x.to(device), mask.to(device), max_len=cap))
    else:
        model.eval()
        for s in src:
            dec = model.start(torch.tensor([s], device=device))
            outs.append(beam_search(dec, [task.tgt_vocab.bos_id], beam_size, max_len or 2 * len(s) + 10, stop_id=eos,
                                    length_penalty=length_penalty)[0][0])
    return ["".join(itos[i] for i in o if i != eos).strip() for o in outs]


from seqviz.metrics import _sacrebleu, bleu, exact_match, paired_bootstrap  # noqa: E402  (moved; helpers update callers)
