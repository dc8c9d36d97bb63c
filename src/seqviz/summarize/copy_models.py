"""Two summarizers that wear the copy head, at the same parameter budget (chapter 8's comparison):

- :class:`CopyEncoderDecoder`: chapter 7's ``EncoderDecoderTransformer``; the copy head points at the encoder's
  outputs (what cross-attention reads);
- :class:`CopyLM`: chapter 7's ``TransformerLM`` in SLP §9.9's format x_1..x_m δ y_1..y_n </s>; the copy head
  points at the LM's own final states at the article's positions.

Both follow the package's interface ``forward(x, targets, mask) -> (logits, loss)``: ``x`` (B, S) the article's
*extended* ids (:class:`~seqviz.summarize.words.SourceIds`), ``targets`` (B, T) the headline's extended ids then
</s> (IGNORE_INDEX after it and at the words the loss leaves out: :func:`~seqviz.summarize.pairs.encode_pairs`),
``mask`` (B, S) True at article words. The model maps extended ids to ``<unk>`` where an embedding reads them. With
``copy=False`` the head is absent and the loss is plain cross-entropy over the vocabulary (a word the vocabulary lacks
cannot be written: its target is ignored).

Shapes: B batch, S article positions, T headline positions, V vocabulary, d = d_model.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz._checks import IGNORE_INDEX
from seqviz.transformer import EncoderDecoderConfig, EncoderDecoderTransformer, TransformerConfig, TransformerLM

from seqviz.summarize.pointer import CopyHead, CopyOut, copy_distribution, copy_target_logprob
from seqviz.summarize.words import WORD_SPECIALS

__all__ = ["CopyConfig", "CopyEncoderDecoder", "CopyLM", "build_copy_model"]

PAD, UNK, BOS, EOS, DELIM = range(len(WORD_SPECIALS))


@dataclass
class CopyConfig:
    """Sizes of a copy summarizer. ``arch`` "encdec": ``num_layers`` blocks on each side; "lm": 2 ``num_layers``
    decoder blocks, so both have about the same number of parameters."""

    vocab_size: int
    arch: str = "encdec"         # "encdec" (chapter 7's encoder-decoder) or "lm" (SLP §9.9's decoder-only δ format)
    copy: bool = True            # wear the pointer-generator head
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 2          # per side for "encdec"; the LM gets twice as many
    dropout: float = 0.1
    max_source: int = 80         # article words read (the lead: 58 % of BBC headline words are in its first 60)
    max_summary: int = 16        # headline words (BBC: 99 % have at most 10)
    max_target: int | None = None  # the longest target it trains on, in words, where longer than a headline
                                 # (pretraining's gap sentences); None: max_summary. Sizes the position tables

    def __post_init__(self):
        if self.arch not in ("encdec", "lm"):
            raise ValueError(f"arch must be 'encdec' or 'lm', got {self.arch!r}")
        for name in ("vocab_size", "d_model", "num_heads", "num_layers", "max_source", "max_summary"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"CopyConfig.{name} must be a positive int, got {v!r}")
        v = self.max_target
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"CopyConfig.max_target must be a positive int or None (= max_summary), got {v!r}")
        if self.vocab_size <= len(WORD_SPECIALS):
            raise ValueError(f"vocab_size={self.vocab_size} leaves no room for words beside the specials")

    @property
    def target_positions(self) -> int:
        """Decoder positions the longest training target needs: its words and </s>."""
        return max(self.max_summary, self.max_target or 0) + 1


def _in_vocab(ids: Tensor, V: int) -> Tensor:
    """Extended ids -> ids an embedding can read: V + k (an article-only word) becomes <unk>."""
    return torch.where(ids >= V, torch.full_like(ids, UNK), ids)


def _shift_right(targets: Tensor, V: int) -> Tensor:
    """The decoder's input <s> y_1 .. y_{T-1} from targets (B, T): copied words and ignored targets read <unk> (a
    headline word the loss leaves out is still a word there; after </s> nothing is scored, and the decoder is causal,
    so what those positions read changes nothing)."""
    y = torch.where(targets == IGNORE_INDEX, torch.full_like(targets, UNK), _in_vocab(targets, V))
    return torch.cat([torch.full_like(y[:, :1], BOS), y[:, :-1]], 1)                # (B, T)


class _CopyModel(nn.Module):
    config: CopyConfig

    def states(self, x: Tensor, mask: Tensor, y_in: Tensor, memory: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(h (B, T, d) the decoder's states at the headline positions, memory (B, S, d) what the head points at);
        ``memory``: the article's part, from :meth:`read_article` (a decoder reads the article once, not per step)."""
        raise NotImplementedError

    def read_article(self, x: Tensor, mask: Tensor) -> Tensor | None:
        """What :meth:`states` computes from the article alone, to pass back as its ``memory`` while the headline
        grows (the encoder's outputs); None when the article and the headline are read in one pass (the LM)."""
        return None

    def vocab_logits(self, h: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, x: Tensor, targets: Tensor | None = None, mask: Tensor | None = None,
                y_in: Tensor | None = None):
        V = self.config.vocab_size
        if mask is None:
            mask = x != PAD
        if y_in is None:
            if targets is None:
                raise ValueError("give targets (teacher forcing reads them shifted right) or y_in")
            y_in = _shift_right(targets, V)
        h, memory = self.states(x, mask, y_in)
        logits = self.vocab_logits(h)                                             # (B, T, V)
        if targets is None:
            return logits, None
        keep = (targets != IGNORE_INDEX) & (targets != UNK)                       # <unk> is never a target
        if not bool(keep.any()):
            raise ValueError("no target to score: every target is ignored or <unk>")
        if self.copy is None:
            t = torch.where(keep & (targets < V), targets, torch.full_like(targets, IGNORE_INDEX))
            return logits, F.cross_entropy(logits.reshape(-1, V), t.reshape(-1), ignore_index=IGNORE_INDEX)
        out = self.copy(h, memory, mask)
        logp = copy_target_logprob(logits, out, x, torch.where(keep, targets, torch.full_like(targets, -1)))
        return logits, -(logp * keep).sum() / keep.sum()

    def distribution(self, x: Tensor, mask: Tensor, y_in: Tensor, n_ext: int, prior: Tensor | None = None,
                     memory: Tensor | None = None, last: bool = False) -> tuple[Tensor, CopyOut | None]:
        """p (B, T, V + n_ext) over the extended vocabulary at every headline position, and the head's CopyOut;
        ``prior`` (B, S) re-weights the copy attention (bottom-up, see :class:`CopyHead`); ``memory`` from
        :meth:`read_article`; ``last``: only the last position (T = 1), all a decoder's step needs (each position's
        output depends on its own state alone, so it equals the last row of the full result)."""
        h, memory = self.states(x, mask, y_in, memory)
        if last:
            h = h[:, -1:]                                                         # (B, 1, d)
        logits = self.vocab_logits(h)
        if self.copy is None:
            return F.pad(logits.softmax(-1), (0, n_ext)), None
        out = self.copy(h, memory, mask, prior)
        return copy_distribution(logits, out, x, n_ext), out


class CopyEncoderDecoder(_CopyModel):
    """Chapter 7's encoder-decoder (one embedding for article, headline and output layer) with a copy head on the
    decoder's final states, pointing at the encoder's outputs."""

    def __init__(self, config: CopyConfig):
        super().__init__()
        self.config = c = config
        self.net = EncoderDecoderTransformer(EncoderDecoderConfig(
            c.vocab_size, c.vocab_size, BOS, PAD, max_len=max(c.max_source, c.target_positions), d_model=c.d_model,
            num_heads=c.num_heads, num_layers=c.num_layers, dropout=c.dropout, eos_id=EOS))
        self.net.E_src.weight = self.net.E_tgt.weight                             # one embedding, tied to the output
        self.copy = CopyHead(c.d_model) if c.copy else None

    def read_article(self, x, mask):
        memory, _ = self.net.encode(_in_vocab(x, self.config.vocab_size), mask)   # (B, S, d)
        return memory

    def states(self, x, mask, y_in, memory=None):
        if memory is None:
            memory = self.read_article(x, mask)                                   # (B, S, d)
        h, _, _, _ = self.net._decode(y_in, memory, mask, False, None, 0, False)  # (B, T, d)
        return h, memory

    def vocab_logits(self, h):
        return self.net.V(h)


class CopyLM(_CopyModel):
    """SLP §9.9's decoder-only summarizer: row b reads x_1..x_{m_b} δ y_1..y_{T-1} (right-padded); the headline
    states are those from δ on; the copy head points at the states of the article positions j < m_b."""

    def __init__(self, config: CopyConfig):
        super().__init__()
        self.config = c = config
        # one sequence holds the article (at most max_source words), then δ and the target but its </s>
        self.net = TransformerLM(TransformerConfig(c.vocab_size, max_len=c.max_source + c.target_positions,
                                                   d_model=c.d_model, num_heads=c.num_heads,
                                                   num_layers=2 * c.num_layers, dropout=c.dropout))
        self.copy = CopyHead(c.d_model) if c.copy else None

    def states(self, x, mask, y_in, memory=None):                               # memory: read_article's None
        B, S = x.shape
        T = y_in.shape[1]
        m = mask.sum(1)                                                           # (B,) article lengths
        y_in = torch.cat([torch.full_like(y_in[:, :1], DELIM), y_in[:, 1:]], 1)    # δ in place of <s>
        ar = torch.arange(S + T, device=x.device)
        seq = torch.full((B, S + T), PAD, dtype=torch.long, device=x.device)       # (B, S + T)
        pos = m[:, None] + torch.arange(T, device=x.device)[None, :]               # (B, T) where δ y.. sit
        seq[:, :S] = torch.where(mask, _in_vocab(x, self.config.vocab_size), PAD)
        seq.scatter_(1, pos, y_in)
        real = (ar[None, :] < (m + T)[:, None])                                    # (B, S + T) no padding read
        h, _, _ = self.net._run(seq, real, False, None, 0, False)                 # (B, S + T, d)
        h_sum = h.gather(1, pos[..., None].expand(B, T, h.shape[-1]))              # (B, T, d)
        return h_sum, h[:, :S]

    def vocab_logits(self, h):
        return self.net.V(h)


def build_copy_model(config: CopyConfig) -> _CopyModel:
    return CopyEncoderDecoder(config) if config.arch == "encdec" else CopyLM(config)
