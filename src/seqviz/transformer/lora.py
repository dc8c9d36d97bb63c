"""Low-rank adapters (LoRA, Hu et al. 2021): fine-tune a large pretrained model by training a few small matrices.

A pretrained linear layer y = W x (W frozen, (d_out, d_in)) becomes

    y = W x + (alpha / r) B A x,     A (r, d_in) random, B (d_out, r) zero at the start,

so the adapted model starts *equal* to the pretrained one (B A = 0) and fine-tuning learns a change of rank r to W:
r (d_in + d_out) weights instead of d_in d_out. After training, B A can be folded into W (``merge``). Only A and B are
saved (``adapter_state``): a few MB, next to the pretrained file they adapt.

Shapes: x (..., d_in) -> y (..., d_out).
"""
from __future__ import annotations

import math
from typing import Iterable

import torch
from torch import Tensor, nn

__all__ = ["LoRALinear", "add_lora", "adapter_state", "load_adapter_state", "lora_parameters"]


class LoRALinear(nn.Module):
    """``base`` (an nn.Linear, frozen) plus a rank-r update: y = W x + (alpha / r) B (A x)."""

    def __init__(self, base: nn.Linear, r: int = 8, alpha: float = 16.0, generator: torch.Generator | None = None):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"LoRA adapts an nn.Linear, got {type(base).__name__}")
        if not isinstance(r, int) or r < 1 or r > min(base.in_features, base.out_features):
            raise ValueError(f"the rank r must be an int in [1, {min(base.in_features, base.out_features)}], got {r!r}")
        self.base, self.r, self.alpha = base, r, float(alpha)
        for p in base.parameters():
            p.requires_grad_(False)
        # A as nn.Linear's default (Kaiming-uniform) initialisation; B zero: B A = 0, the model starts unchanged
        bound = 1.0 / math.sqrt(base.in_features)
        A = torch.empty(r, base.in_features).uniform_(-bound, bound, generator=generator)
        self.A = nn.Parameter(A.to(base.weight.device))                                        # (r, d_in)
        self.B = nn.Parameter(torch.zeros(base.out_features, r, device=base.weight.device))    # (d_out, r)

    @property
    def scale(self) -> float:
        return self.alpha / self.r

    @property
    def weight(self) -> Tensor:
        """The effective W + (alpha / r) B A (d_out, d_in), e.g. for code that reads ``.weight``."""
        return self.base.weight + self.scale * self.B @ self.A

    def forward(self, x: Tensor) -> Tensor:
        # y = W x + (alpha/r) B A x, with A x first: (..., r), never the full (d_out, d_in) product
        return self.base(x) + self.scale * ((x @ self.A.T) @ self.B.T)          # (..., d_out)

    @torch.no_grad()
    def merge(self) -> nn.Linear:
        """The base layer with B A folded in: W <- W + (alpha / r) B A (same outputs, no extra cost)."""
        self.base.weight += self.scale * self.B @ self.A
        return self.base


def add_lora(model: nn.Module, targets: Iterable[str], r: int = 8, alpha: float = 16.0,
             layers: Iterable[int] | None = None, seed: int = 0) -> list[str]:
    """Freeze every parameter of ``model`` and replace each nn.Linear whose attribute name is in ``targets`` (e.g.
    ``("W_Q", "W_V")``) inside ``model.blocks[l]`` for l in ``layers`` (default: all) by a ``LoRALinear``. Returns
    the adapted modules' names. A is drawn from ``seed`` (never the global random state)."""
    targets = tuple(targets)
    if not targets:
        raise ValueError("name at least one linear layer to adapt, e.g. targets=('W_Q', 'W_V')")
    blocks = getattr(model, "blocks", None)
    if blocks is None:
        raise TypeError(f"{type(model).__name__} has no .blocks to adapt")
    layers = range(len(blocks)) if layers is None else list(layers)
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    done = []
    for l in layers:
        if not 0 <= l < len(blocks):
            raise ValueError(f"layer {l} does not exist: the model has {len(blocks)} blocks")
        for name, module in list(blocks[l].named_modules()):
            for child_name, child in list(module.named_children()):
                if child_name in targets and isinstance(child, nn.Linear):
                    setattr(module, child_name, LoRALinear(child, r, alpha, gen))
                    done.append(f"blocks.{l}.{name + '.' if name else ''}{child_name}")
    if not done:
        raise ValueError(f"no nn.Linear named {targets} in the chosen blocks: look at model.blocks[0] for names")
    return done


def lora_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The trainable A and B matrices of every LoRALinear in ``model``."""
    return [p for m in model.modules() if isinstance(m, LoRALinear) for p in (m.A, m.B)]


def adapter_state(model: nn.Module) -> dict[str, Tensor]:
    """Only the adapters' A and B, by name: what a fine-tuned checkpoint needs beside the pretrained file."""
    return {k: v.detach().clone() for k, v in model.state_dict().items() if k.endswith((".A", ".B"))}


def load_adapter_state(model: nn.Module, state: dict[str, Tensor]) -> None:
    """Put saved A and B matrices into a model already adapted with the same ``add_lora`` call."""
    own = {k for k in model.state_dict() if k.endswith((".A", ".B"))}
    if set(state) != own:
        missing, extra = sorted(own - set(state)), sorted(set(state) - own)
        raise ValueError(f"the adapter does not fit this model: missing {missing[:3]}, unexpected {extra[:3]}; "
                         f"adapt the model with the recipe the adapter was trained with")
    model.load_state_dict(state, strict=False)
