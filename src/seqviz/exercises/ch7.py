"""Chapter 7's "build it" check: the distribution that sampling with a temperature and top-k draws the next token
from, softmax(top_k(z) / T), compared with the package's own (``seqviz.decode.top_k_filter`` and
``softmax_with_temperature``, which ``sample_next`` and ``generate`` draw from) on seeded random next-token scores."""
from __future__ import annotations

from typing import Callable

import torch

from seqviz.decode import softmax_with_temperature, top_k_filter
from seqviz.exercises._base import as_tensor, call, check, close, differs, verdict

__all__ = ["check_sampling_distribution"]


def _reference(z: torch.Tensor, T: float, k: int) -> torch.Tensor:
    """The package's distribution: the k highest scores kept, divided by T, softmax (float64)."""
    return softmax_with_temperature(top_k_filter(z, k), T)


def _kept(z: torch.Tensor, k: int, lowest: bool = False) -> torch.Tensor:
    """The mask of the k highest (``lowest``: lowest) scores, as a bool tensor (V,)."""
    mask = torch.zeros_like(z, dtype=torch.bool)
    mask[torch.topk(z, min(k, z.numel()), largest=not lowest).indices] = True
    return mask


def _cases() -> list[tuple[torch.Tensor, float, int]]:
    """Seeded next-token scores (no ties) with temperatures below and above 1 and cuts from 1 to the whole vocabulary."""
    g = torch.Generator().manual_seed(7)
    cases = []
    for V, T, k in ((10, 0.5, 3), (16, 2.0, 5), (84, 0.7, 10), (12, 1.5, 1), (20, 0.8, 19), (8, 2.5, 8)):
        z = 3 * torch.randn(V, generator=g, dtype=torch.float64)
        cases.append((z, T, k))
    return cases


def _mistake(got: torch.Tensor, z: torch.Tensor, T: float, k: int) -> str:
    """The usual mistake that explains ``got`` for one case, else where it differs."""
    V = z.numel()
    got = got.detach().double()
    keep = _kept(z, k)
    cut = torch.where(keep, torch.softmax(z, 0), torch.zeros_like(z))           # the untempered probabilities, cut
    tempered = torch.softmax(z / T, 0)                                          # tempered, not cut
    total = float(got.sum())
    if close(got, cut / cut.sum() / T) or close(got, cut / T) or close(got, torch.softmax(z, 0) / T):
        return (f"the probabilities are divided by T (they sum to {total:.3f}, not 1): the temperature divides the "
                f"logits, softmax(z / T), before the softmax")
    if close(got, cut / cut.sum()):
        return ("the temperature has no effect: dividing the probabilities by T and renormalising gives them back "
                "unchanged; divide the logits, softmax(z / T)")
    if close(got, _reference(z * T, 1.0, k)):
        return "the logits are multiplied by T: divide them, softmax(z / T) (T < 1 sharpens, T > 1 flattens)"
    n = int((got.abs() > 1e-12).sum())
    if k < V and close(got, tempered):
        return (f"every token keeps its probability: the cut is missing, so this samples from the full distribution; "
                f"keep the top_k = {k} highest logits and give the other {V - k} probability 0")
    if k < V and close(got, torch.where(keep, tempered, torch.zeros_like(z))):
        return (f"not renormalised after the cut: the {k} kept probabilities sum to {total:.3f}, not 1; take the "
                f"softmax of the kept logits alone (the others set to -inf), or divide the kept ones by their sum")
    for j, what in ((k - 1, "one too few"), (k + 1, "one too many")):
        if 1 <= j <= V and j != k and close(got, _reference(z, T, j)):
            return (f"{j} tokens kept, {what}: top-k keeps exactly k = {k} (torch.topk(z, k), or z >= the k-th "
                    f"largest logit)")
    if k < V and close(got, softmax_with_temperature(torch.where(_kept(z, k, lowest=True), z,
                                                                 torch.full_like(z, float("-inf"))), T)):
        return f"the {k} lowest logits are kept: top-k keeps the {k} highest (torch.topk's largest=True)"
    if abs(total - 1) > 1e-3 or bool((got < 0).any()):
        return (f"this is not a distribution (it sums to {total:.3f}{', with negative entries' if (got < 0).any() else ''}"
                f"): return probabilities, softmax of the kept logits divided by T")
    if k < V and n != k:
        return f"{n} tokens have probability, top-k keeps exactly k = {k}"
    return differs("the distribution", got, _reference(z, T, k), "compare your steps with softmax(top_k(z) / T)")


@check
def check_sampling_distribution(fn: Callable) -> bool:
    """Check ``fn(logits, temperature, top_k) -> p``: the distribution that sampling with a temperature and top-k
    draws the next token from. ``logits`` (V,) the next-token scores z (float64), ``temperature`` T > 0, ``top_k``
    an int from 1 to V; ``p`` (V,) the softmax of the k highest logits divided by T, and 0 for every other token:
    the distribution ``seqviz.decode.sample_next`` draws from (``torch.multinomial(p, 1, generator=g)``). Compared
    with the package's for six cases of seeded random scores, T from 0.5 to 2.5, k from 1 to V."""
    for z, T, k in _cases():
        name = f"[V = {z.numel()}, T = {T}, top_k = {k}]"
        got, err = call(fn, z.clone(), T, k)
        if err:
            return verdict(False, err)
        got, err = as_tensor(got, "p")
        if err:
            return verdict(False, err)
        if tuple(got.shape) != tuple(z.shape):
            return verdict(False, f"p has shape {tuple(got.shape)}: return one probability per token, shape "
                                  f"{tuple(z.shape)} {name}")
        if not close(got, _reference(z, T, k)):
            return verdict(False, f"{_mistake(got, z, T, k)} {name}")
    return verdict(True, "softmax(top_k(z) / T) equals the package's for 6 cases")
