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

__all__ = ["check", "verdict", "call", "as_tensor"]


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
