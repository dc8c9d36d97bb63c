"""What every exercise check shares: calling the student's function, and the verdict.

A check prints "✓ ..." and returns True for a right answer; for a wrong one it raises ``AssertionError`` with a
message that names the usual mistake (so an autograder such as nbgrader can use ``check_...(fn)`` as a test cell as it
is); for a function that still raises ``NotImplementedError`` it prints that it is not written yet and returns False,
so a chapter runs top to bottom while its exercises are unsolved (``assert check_...(fn)`` makes that a failure too).
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np
import torch

__all__ = ["check", "verdict", "call", "as_tensor", "TOLERANCE", "tolerance", "close", "differs"]

#: The one rule on precision for every check: (rtol, atol) by floating dtype, a few hundred units of rounding of each.
#: atol is per unit of the reference's largest magnitude (at least 1): rounding errors grow with the size of the
#: numbers summed, not with each entry's own size.
TOLERANCE = {torch.float64: (1e-9, 1e-11), torch.float32: (1e-5, 1e-6),
             torch.float16: (5e-3, 5e-4), torch.bfloat16: (4e-2, 4e-3)}


class NotWrittenYet(Exception):
    """The student's function still raises NotImplementedError."""


def check(fn: Callable) -> Callable:
    """Decorate a check: a function not written yet is reported, not raised (returns False)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NotWrittenYet as e:
            print(f"✗ {e}")
            return False
    return wrapper


def verdict(ok: bool, message: str) -> bool:
    """True after printing "✓ message" when ``ok``; else raise AssertionError(message): a wrong answer."""
    if not ok:
        raise AssertionError(message)
    print("✓ " + message)
    return True


def call(fn: Callable, *args):
    """(result, None) or (None, a message saying why the call failed); NotWrittenYet while it raises
    NotImplementedError."""
    if not callable(fn):
        return None, f"expected a function, got {type(fn).__name__}"
    try:
        return fn(*args), None
    except NotImplementedError:
        raise NotWrittenYet(f"{getattr(fn, '__name__', 'the function')} is not written yet:\n  replace its "
                            "`raise NotImplementedError`") from None       # two lines: each fits a printed page
    except Exception as e:                                         # the student's bug, reported as the verdict
        return None, f"{getattr(fn, '__name__', 'the function')} raised {type(e).__name__}: {e}"


def as_tensor(x, what: str):
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    if not isinstance(x, torch.Tensor):
        return None, f"{what} should be a tensor, got {type(x).__name__}"
    return x, None


def tolerance(*tensors: torch.Tensor) -> tuple[float, float]:
    """(rtol, atol) for comparing these tensors: the coarsest of their floating dtypes' TOLERANCE (a result is judged
    at its own precision, and never finer than the reference's); float64's when none is floating."""
    return max((TOLERANCE.get(t.dtype, TOLERANCE[torch.float64]) for t in tensors), key=lambda ra: ra[0])


def _scale(want: torch.Tensor) -> float:
    return max(1.0, float(want.detach().abs().double().max())) if want.numel() else 1.0


def close(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Whether the student's ``got`` equals ``want`` (the reference, or what a usual mistake computes) up to the
    rounding of their dtypes (``tolerance``): the same shape, and |got - want| <= atol * max(1, max|want|) +
    rtol * |want| everywhere. Every check compares floating results with this and nothing else."""
    if tuple(got.shape) != tuple(want.shape):
        return False
    rtol, atol = tolerance(got, want)
    return bool(torch.allclose(got.detach().double(), want.detach().double(), rtol=rtol, atol=atol * _scale(want)))


def differs(what: str, got: torch.Tensor, want: torch.Tensor, advice: str) -> str:
    """The message for a result that no usual mistake explains: how far it is from ``want`` and where. A near miss
    (within 1e-3 of the values' size) is told so, and not that its steps are wrong: most of them are right, and
    one small thing differs; otherwise ``advice`` (compare the steps with the equations) follows."""
    diff = (got.detach().double() - want.detach().double()).abs()
    bad = ~torch.isfinite(got.detach().double())
    if bool(bad.any()):
        at = tuple(int(i) for i in bad.nonzero()[0])
        return (f"{what} holds {float(got.detach().double()[at])} (at index {at[0] if len(at) == 1 else at}) where "
                f"the package's is {float(want.detach().double()[at]):.3g}: look for a division by zero, a log of 0 "
                f"or an overflow")
    d = float(diff.max())
    at = tuple(int(i) for i in (diff == diff.max()).nonzero()[0]) if diff.numel() else ()
    where = f" (at index {at[0] if len(at) == 1 else at})" if at else ""
    coarse = str(max((got, want), key=lambda t: tolerance(t)[0]).dtype).removeprefix("torch.")
    rtol, atol = tolerance(got, want)
    if d <= 1e-3 * _scale(want):
        return (f"{what} differs from the package's by up to {d:.3g}{where}: close, but more than {coarse} rounding "
                f"explains (about {atol * _scale(want):.1g} + {rtol:g} × |value|), so most steps are right; look for "
                f"one small difference: a term or constant left out or changed, or a step done in lower precision "
                f"(compute in float32 or float64)")
    return f"{what} differs from the package's by up to {d:.3g}{where}; {advice}"
