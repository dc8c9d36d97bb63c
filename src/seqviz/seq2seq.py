"""Chapter 5: the recurrent encoder-decoder (seq2seq), with or without attention, and its decoder binding.

Encoder and decoder are GRU or LSTM layers (``seqviz.lstm``); the decoder may look back at every encoder output
through ``seqviz.attention.SoftAttention`` (Luong et al., 2015; Bahdanau et al., 2015; SLP 3rd ed. draft, ch. 9).
Training is teacher forcing or scheduled sampling (Bengio et al., 2015); decoding goes through ``seqviz.decode`` with
``model.bind(src)`` (the binding both encoder-decoders share) or batched ``greedy``; ``translate`` turns a task's
held-out sources into text for BLEU (``seqviz.metrics``).

Shapes, batch first: B batch, S source positions, T target positions, V target vocabulary, d_h hidden width.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz import evaluating
from seqviz._checks import IGNORE_INDEX, _check_choice, _check_ids, _check_mask, _check_positive, _check_targets
from seqviz.attention import SCORES, SoftAttention
from seqviz.data.batches import pad_batch, shift_right
from seqviz.decode import beam_search
from seqviz.lstm import GRU, LSTM

__all__ = ["Seq2SeqConfig", "Seq2SeqState", "inverse_sigmoid_decay", "Seq2Seq", "Seq2SeqDecoder", "ids_to_text",
           "translate"]

_ATTN_KINDS = (None, *SCORES)  # None, "dot", "general", "additive"


@dataclass
class Seq2SeqConfig:
    """An encoder-decoder of GRU or LSTM layers (seqviz.lstm, chapter 4), with or without attention."""
    src_vocab_size: int             # source vocabulary size
    tgt_vocab_size: int             # target vocabulary size (V of the output layer)
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
    def tiny(cls, src_vocab_size: int, tgt_vocab_size: int, **kw) -> "Seq2SeqConfig":
        """Trains the date task in well under a minute on a laptop CPU."""
        return cls(src_vocab_size, tgt_vocab_size, **{"d_emb": 32, "d_h": 64, "bidirectional": True, **kw})

    @classmethod
    def small(cls, src_vocab_size: int, tgt_vocab_size: int, **kw) -> "Seq2SeqConfig":
        """Short-sentence translation (trans-de-en, <= 10 words a side) on one CPU thread: 20-25 s an epoch."""
        return cls(src_vocab_size, tgt_vocab_size,
                   **{"d_emb": 128, "d_h": 256, "bidirectional": True, "dropout": 0.3, **kw})

    @classmethod
    def full(cls, src_vocab_size: int, tgt_vocab_size: int, **kw) -> "Seq2SeqConfig":
        """For real translation (trans-de-en), minutes on a GPU."""
        return cls(src_vocab_size, tgt_vocab_size,
                   **{"d_emb": 256, "d_h": 512, "num_layers": 2, "bidirectional": True, "dropout": 0.2, **kw})

    @classmethod
    def for_task(cls, task, preset: str = "tiny", **kw) -> "Seq2SeqConfig":
        """A preset sized for a ``seqviz.data.PairTask``'s vocabularies, with their special ids."""
        _check_choice("preset", preset, ("tiny", "small", "full"))
        if task.src_vocab.pad_id != task.tgt_vocab.pad_id:
            raise ValueError("source and target vocabularies must share the padding id")
        ids = dict(pad_id=task.src_vocab.pad_id, bos_id=task.tgt_vocab.bos_id, eos_id=task.tgt_vocab.eos_id)
        return getattr(cls, preset)(len(task.src_vocab), len(task.tgt_vocab), **{**ids, **kw})


@dataclass
class Seq2SeqState:
    """Everything the decoder needs between steps; rows are hypotheses (beams) and reorder together."""
    dec: object          # decoder RNN state (L, B, d_h) or an LSTM's (h, c)
    enc: Tensor          # encoder outputs (B, S, d_h)
    src_mask: Tensor     # source padding mask (B, S), True = real token
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
        c = self.config = config
        _check_positive(src_vocab_size=c.src_vocab_size, tgt_vocab_size=c.tgt_vocab_size, d_emb=c.d_emb, d_h=c.d_h,
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
        self.src_emb = nn.Embedding(c.src_vocab_size, c.d_emb, padding_idx=c.pad_id)
        self.tgt_emb = nn.Embedding(c.tgt_vocab_size, c.d_emb, padding_idx=c.pad_id)
        self.encoder = Layer(c.d_emb, c.d_h, c.num_layers, bidirectional=c.bidirectional, merge="sum", impl=c.impl)
        # Bahdanau: the decoder RNN reads [y_{t-1}; c_t]; Luong with input feeding reads [y_{t-1}; h~_{t-1}]
        d_dec_in = c.d_emb + (c.d_h if self._feeds(c) else 0)
        self.decoder = Layer(d_dec_in, c.d_h, c.num_layers, impl=c.impl)
        self.attn = SoftAttention(c.attention, c.d_h, c.d_h) if c.attention is not None else None
        # h~_t = tanh(W_c [c_t; s_t]) (Luong et al., 2015, eq. 5); without attention h~_t = s_t
        self.combine = nn.Linear(2 * c.d_h, c.d_h) if c.attention is not None else None
        self.out = nn.Linear(c.d_h, c.tgt_vocab_size)
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
        """Run the encoder once: -> the decoder's start state (final encoder state, outputs, source mask)."""
        _check_ids(src, self.config.src_vocab_size, "src")
        B, S = src.shape
        if mask is None:
            mask = torch.ones(B, S, dtype=torch.bool, device=src.device)
        _check_mask(mask, (B, S))
        enc, final = self.encoder(self.drop(self.src_emb(src)), None, mask)   # (B, S, d_h), (L*K, B, d_h)
        L, K = self.config.num_layers, self.encoder.num_directions
        if K == 2:   # sum the two directions' final states: (L*2, B, d_h) -> (L, 2, B, d_h) -> (L, B, d_h)
            final = _map(lambda s: s.reshape(L, 2, B, -1).sum(1), final)
        feed = enc.new_zeros(B, self.config.d_h)                                   # (B, d_h)
        return Seq2SeqState(final, enc, mask, feed)

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
            ctx, w = self.attn(s_prev[:, None, :], st.enc, mask=st.src_mask[:, None, :])   # (B, 1, d_h), (B, 1, S)
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
                ctx, w = self.attn(s_t[:, None, :], st.enc, mask=st.src_mask[:, None, :])  # (B, 1, d_h), (B, 1, S)
            # h~_t = tanh(W_c [c_t; s_t])
            h = torch.tanh(self.combine(torch.cat([ctx[:, 0], s_t], -1)))          # (B, d_h)
        logits = self.out(self.drop(h))                                            # (B, V)
        return logits, Seq2SeqState(dec, st.enc, st.src_mask, h), (None if w is None else w[:, 0])

    # -- training ------------------------------------------------------------------------------------------------
    def forward(self, src: Tensor, tgt: Tensor, mask: Tensor | None = None, *, teacher_forcing: float | None = None,
                return_attention: bool = False, generator: torch.Generator | None = None):
        """-> (logits (B, T, V), loss) or, with ``return_attention``, (logits, loss, weights (B, T, S))."""
        c = self.config
        ratio = self._check_rate("teacher_forcing", c.teacher_forcing if teacher_forcing is None
                                 else teacher_forcing)
        st = self.encode(src, mask)
        if not isinstance(tgt, Tensor) or tgt.dim() != 2 or tgt.shape[0] != src.shape[0] or tgt.shape[1] == 0:
            raise ValueError(f"tgt must be target ids (B, T) with B = {src.shape[0]} and T >= 1, got "
                             f"{tuple(getattr(tgt, 'shape', ())) or type(tgt).__name__}")
        _check_targets(tgt, tuple(tgt.shape), c.tgt_vocab_size)
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
        B, T = tgt.shape
        s, _ = self.decoder(self.drop(self.tgt_emb(gold_in)), st.dec)             # (B, T, d_h)
        w = None
        if self.attn is not None:
            ctx, w = self.attn(s, st.enc, mask=st.src_mask[:, None, :])               # (B, T, d_h), (B, T, S)
            # h~_t = tanh(W_c [c_t; s_t]) for every t
            s = torch.tanh(self.combine(torch.cat([ctx, s], -1)))                 # (B, T, d_h)
        logits = self.out(self.drop(s))                                           # (B, T, V)
        loss = F.cross_entropy(logits.reshape(B * T, -1), tgt.reshape(B * T), ignore_index=IGNORE_INDEX)
        return (logits, loss, w) if return_attention else (logits, loss)

    # -- decoding ------------------------------------------------------------------------------------------------
    def bind(self, src: Tensor, mask: Tensor | None = None) -> "Seq2SeqDecoder":
        """The decoder binding of ``src`` (B, S) or (S,) for ``seqviz.decode``: ``step`` / ``reorder_state``, with
        ``module`` = this model. The encoder runs lazily, on the first step, so it runs in decode's eval mode too."""
        return Seq2SeqDecoder(self, src, mask)

    @torch.no_grad()
    def greedy(self, src: Tensor, mask: Tensor | None = None, max_new_tokens: int | Sequence[int] = 50,
               return_attention: bool = False):
        """Batched greedy decoding in eval mode (the caller's mode restored, also on error): -> list of B id lists
        (without <s>, ending with </s> where it was reached), and optionally the attention weights (B, T_out, S).

        ``max_new_tokens`` caps the output tokens: one int for every row, or one per row (B,), so each sentence of a
        batch gets its own cap (a row stops at </s> or at its cap; the batch runs until every row has stopped, and
        the weights of a row past its end are those of the steps decoded after it)."""
        B = src.shape[0] if isinstance(src, Tensor) and src.dim() == 2 else None
        caps = _caps(max_new_tokens, B)                                           # (B,) or (1,)
        eos = self.config.eos_id
        with evaluating(self):
            st = self.encode(src, mask)
            B = src.shape[0]
            caps = caps.expand(B).to(src.device)                                  # (B,)
            y = torch.full((B,), self.config.bos_id, dtype=torch.long, device=src.device)
            done = torch.zeros(B, dtype=torch.bool, device=src.device)
            out, ws = [], []
            for t in range(int(caps.max())):
                z, st, w = self._step(y, st)
                y = z.argmax(-1)                                                  # (B,)
                out.append(y)
                ws.append(w)
                done |= (y == eos) | (caps <= t + 1)                              # at </s> or at its own cap
                if bool(done.all()):
                    break
        ids = torch.stack(out, 1).tolist()                                        # (B, T_out)
        seqs = [row[:cap] for row, cap in zip(ids, caps.tolist())]
        seqs = [row[:row.index(eos) + 1] if eos in row else row for row in seqs]
        if return_attention:
            return seqs, (torch.stack(ws, 1) if self.attn is not None else None)  # (B, T_out, S)
        return seqs


def _caps(max_new_tokens, B: int | None) -> Tensor:
    """``max_new_tokens`` (an int, or one per row) as a LongTensor (B,) or (1,), each a positive int."""
    if isinstance(max_new_tokens, (int, np.integer)) and not isinstance(max_new_tokens, bool):
        caps = torch.tensor([int(max_new_tokens)])
    else:
        try:
            caps = torch.as_tensor(list(max_new_tokens))
        except TypeError:
            caps = torch.tensor([])
        if caps.dim() != 1 or caps.dtype.is_floating_point or caps.dtype == torch.bool or \
                (B is not None and caps.numel() != B):
            raise ValueError(f"max_new_tokens must be a positive int or one positive int per source row "
                             f"({B if B is not None else 'B'} of them), got {max_new_tokens!r}")
        caps = caps.long()
    if caps.numel() == 0 or bool((caps < 1).any()):
        raise ValueError(f"max_new_tokens must be a positive int (output tokens to generate), got {max_new_tokens!r}")
    return caps


class Seq2SeqDecoder:
    """A ``Seq2Seq`` bound to its sources: the decoder binding ``seqviz.decode`` steps (``model.bind(src, mask)``).

    ``step(ids (B, t_new), state | None) -> (logits (B, V) of the last position, state)``: with ``state=None`` the
    sources are encoded (lazily, so inside decode's eval mode: ``module`` names the model whose mode decode switches);
    B rows read B sources, or a single source serves any B (a beam of k hypotheses is k rows).
    ``reorder_state(state, index)`` selects or duplicates rows. For the next-token scores after a whole context (the
    score-function interface), use ``seqviz.decode.next_token_logits_by_step(binding, context_ids)``.
    """

    def __init__(self, model: Seq2Seq, src: Tensor, mask: Tensor | None = None):
        src = torch.as_tensor(src)
        src = src.unsqueeze(0) if src.dim() == 1 else src                        # (S,) -> (1, S)
        _check_ids(src, model.config.src_vocab_size, "src")
        if mask is not None:
            mask = mask.unsqueeze(0) if mask.dim() == 1 else mask                 # (S,) -> (1, S)
            _check_mask(mask, tuple(src.shape))
        self.module, self.src, self.mask = model, src, mask

    def _initial(self, B: int) -> Seq2SeqState:
        """Encode the sources (on the model's device) for B rows."""
        n = self.src.shape[0]
        if n not in (1, B):
            raise ValueError(f"this binding holds {n} sources but step got {B} rows: give one row per source, or "
                             f"bind a single source to decode it as any number of rows (a beam)")
        device = next(self.module.parameters()).device
        mask = None if self.mask is None else self.mask.to(device)
        encoded = self.module.encode(self.src.to(device), mask)
        return encoded if n == B else self.reorder_state(encoded, torch.zeros(B, dtype=torch.long))

    @torch.no_grad()
    def step(self, ids: Tensor, state: Seq2SeqState | None = None) -> tuple[Tensor, Seq2SeqState]:
        ids = torch.as_tensor(ids)
        _check_ids(ids, self.module.config.tgt_vocab_size, "ids")                # (B, t_new)
        st = self._initial(ids.shape[0]) if state is None else state
        ids = ids.to(st.enc.device)
        z = None
        for t in range(ids.shape[1]):
            z, st, _ = self.module._step(ids[:, t], st)
        return z, st

    @staticmethod
    def reorder_state(state: Seq2SeqState, index: Tensor) -> Seq2SeqState:
        index = torch.as_tensor(index, dtype=torch.long).to(state.enc.device)    # (B',)
        return Seq2SeqState(_map(lambda s: s.index_select(1, index), state.dec), state.enc.index_select(0, index),
                            state.src_mask.index_select(0, index), state.feed.index_select(0, index))


def _map(fn, state):
    return fn(state) if isinstance(state, Tensor) else tuple(fn(s) for s in state)


def _h_top(state) -> Tensor:
    """The top layer's h of a decoder state (L, B, d_h) or (h, c): (B, d_h)."""
    return (state if isinstance(state, Tensor) else state[0])[-1]


# ----------------------------------------------------------------------------------------------------------------
# Translating a task's held-out sources
# ----------------------------------------------------------------------------------------------------------------
UNK_TEXT = "\u2047"   # "⁇", what an emitted <unk> becomes in text (SentencePiece shows it so too)


def ids_to_text(ids: Sequence[int], vocab) -> str:
    """The text of output ids: their pieces joined, without <pad>, <s> and </s>, and each <unk> written as "⁇".

    "⁇" is glued to the pieces around it (no spaces added), so the word it stands in is one token to sacrebleu's
    tokenizer that matches no reference word: an unknown piece never adds a match (dropping it could turn "do" <unk>
    "gs" into a matching "dogs"; the literal "<unk>" counted as the three tokens "< unk >"). Where the unknown piece
    began a word, the word before it loses its match too: the error is on the side of a lower score.
    """
    drop = {vocab.pad_id, vocab.bos_id, vocab.eos_id} - {None}
    return "".join(UNK_TEXT if i == vocab.unk_id else vocab.itos[i] for i in map(int, ids) if i not in drop).strip()


@torch.no_grad()
def translate(model, task, beam_size: int = 1, *, n: int | None = None,
              max_new_tokens: int | None = None, length_penalty: float = 1.0) -> list[str]:
    """Decode the first ``n`` held-out sources of a ``PairTask`` (all by default) with a ``Seq2Seq`` or an
    ``EncoderDecoderTransformer`` as text (``ids_to_text``): batched
    greedy for ``beam_size=1``, else ``seqviz.decode.beam_search`` per sentence with the beam scored as one batch.

    One length cap per sentence for both: ``max_new_tokens`` output pieces, by default twice the sentence's own
    source length plus 10 (so a model that never says </s> stops, and greedy and beam search are compared under the
    same caps), and never more than a transformer's ``config.max_len``. Decoding runs in eval mode and leaves the model in the mode it was in.
    """
    src = task.test_src[:n]
    limit = getattr(getattr(model, "config", None), "max_len", None)   # a transformer's target position table
    caps = [max_new_tokens or min(2 * len(s) + 10, limit or 2 * len(s) + 10) for s in src]
    device = next(model.parameters()).device
    bos, eos = task.tgt_vocab.bos_id, task.tgt_vocab.eos_id
    outs: list[list[int]] = []
    if beam_size == 1:
        for i in range(0, len(src), 256):
            x, mask = pad_batch(src[i:i + 256], task.src_vocab.pad_id)             # (B, S) x2
            chunk = caps[i:i + 256]       # one batch to the longest cap, each row cut at its own (greedy rows
            rows = model.greedy(x.to(device), mask.to(device), max_new_tokens=max(chunk))  # are independent)
            outs.extend(row[:cap] for row, cap in zip(rows, chunk))
    else:
        for s, cap in zip(src, caps):
            best, _ = beam_search(model.bind(torch.tensor([s])), [bos], beam_size, cap, stop_id=eos,
                                  length_penalty=length_penalty)[0]
            outs.append(best)
    return [ids_to_text(o, task.tgt_vocab) for o in outs]
