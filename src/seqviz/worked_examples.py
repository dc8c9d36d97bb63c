"""The worked examples of chapters 5 and 6, with the numbers of the lecture's slides: self-attention for "We wash our
cats" (seed 003, chapter 6) and a beam of 3 that finds "How are you" where greedy says "How will you" (seed 004).

Toy inputs chosen so that every printed number matches the slide; the models themselves live in ``seqviz.attention``
(the maths these examples run through) and ``seqviz.decode`` (the beam search).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from seqviz.attention import attention, causal_mask
from seqviz.decode import beam_search

__all__ = ["SelfAttentionExample", "we_wash_our_cats", "SeedBeamScorer", "beam_steps"]


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
    steps = []
    for t in range(1, max_steps + 1):
        beam = beam_search(scorer.next_token_logits, [bos], beam_size, t, stop_id=stop_id)
        steps.append([(ids, math.exp(lp)) for ids, lp in beam])
        if stop_id is not None and all(ids[-1] == stop_id for ids, _ in beam):
            break
    return steps
