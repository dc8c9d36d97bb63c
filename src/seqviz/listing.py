"""A listing of the package's own code for a chapter: the model, without its input checks.

The chapters show the package's source rather than a copy that could drift (style rule 11). Most forward passes open
with checks that turn bad input into a clear error; they matter to a user and distract a reader. :func:`listing`
returns an object's source with those checks replaced by one comment, ``# input checks elided``, so the page shows
the model and says what it left out. A statement is an input check when it is

- an ``if`` whose body only raises (and that has no ``else``), or an ``if`` whose body holds only input checks;
- a call, as a statement of its own, of a function or method whose name starts with ``_check``.

Runs of checks (with the blank lines and comments between them) become one comment at the first check's indent.
The source is read with :func:`inspect.getsource`, so it works wherever the package is installed (a wheel, Colab).
"""
from __future__ import annotations

import ast
import inspect
import textwrap

__all__ = ["listing", "elide_checks", "ELIDED"]

#: the comment that stands where input checks were left out
ELIDED = "# input checks elided"


def _is_check(node: ast.stmt) -> bool:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        f = node.value.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        return name.startswith("_check")
    if isinstance(node, ast.If) and not node.orelse:
        return all(isinstance(s, ast.Raise) or _is_check(s) for s in node.body)
    return False


def _check_spans(body: list[ast.stmt]) -> list[tuple[int, int]]:
    """(first line, last line) of every input check in ``body`` and in the bodies nested in it, 1-based."""
    spans = []
    for node in body:
        if _is_check(node):
            spans.append((node.lineno, node.end_lineno))
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], (ast.stmt, ast.ExceptHandler)):
                if field == "handlers":
                    for h in inner:
                        spans += _check_spans(h.body)
                else:
                    spans += _check_spans(inner)
    return spans


def elide_checks(source: str) -> str:
    """``source`` (Python, e.g. one function or class) with its input checks replaced by :data:`ELIDED`."""
    if not isinstance(source, str):
        raise TypeError(f"source must be Python source text, got {type(source).__name__}")
    source = textwrap.dedent(source)
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise ValueError(f"source is not valid Python ({e.msg}, line {e.lineno}); pass a whole function or class"
                         ) from None
    lines = source.splitlines()
    spans = sorted(_check_spans(tree.body))
    merged: list[list[int]] = []
    for a, b in spans:
        between = lines[merged[-1][1]:a - 1] if merged else None    # the lines after the last run, before this one
        if merged and all(not s.strip() or s.strip().startswith("#") for s in between):
            merged[-1][1] = b
        else:
            merged.append([a, b])
    out, i = [], 0
    for a, b in merged:
        out += lines[i:a - 1]
        first = lines[a - 1]
        out.append(first[:len(first) - len(first.lstrip())] + ELIDED)
        i = b
    out += lines[i:]
    return "\n".join(out) + "\n"


def listing(obj):
    """The source of ``obj`` (a function, method or class of the package) without its input checks, as Markdown:
    a Python code block the notebook and the book both highlight. Show it from a ``remove-input`` cell."""
    from IPython.display import Markdown

    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as e:
        raise TypeError(f"cannot read the source of {obj!r} ({e}); pass a function, method or class defined in a "
                        f".py file") from None
    return Markdown("```python\n" + elide_checks(source) + "```")
