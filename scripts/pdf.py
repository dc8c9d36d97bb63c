"""The book as one PDF (issue 24, item 4; issue 33, item 8): `make pdf`, or `python scripts/pdf.py [--out PDF]`.

Jupyter Book 1 builds the PDF with its LaTeX builder (`jupyter-book build SRC --builder pdflatex`, xelatex through
sphinx-jupyterbook-latex; Debian TeX Live, installed by `make pdf`). The book renders the outputs stored in the
notebooks, and a stored widget is only a reference to its saved state plus a text repr (``<...AttentionHeatmap
object at 0x...>``), which is what LaTeX would print. So this script builds from a copy, never touching the tracked
tree:

1. copy the book's sources (``_config.yml``, ``_toc.yml``, ``book/``, ``notebooks/``, and ``src/``'s code, which the
   chapters quote) into ``_build/pdf-src/``, and add the print settings (:func:`print_config`) to the copy's
   ``_config.yml``;
2. in the copied notebooks, replace what print cannot show:
   - a seqviz widget -> a PNG of its own ``.to_figure()``, rebuilt from the notebook's saved widget state
     (:func:`seqviz.widgets.saved.figure_from_state`), at a print size where its smallest label is at least
     :data:`MIN_LABEL_PT` (:func:`fit_for_print`);
   - a ``Tab``/``Box`` of widgets -> each child in turn (a ``Tab``'s titles as captions);
   - a tqdm progress bar (an ``HBox`` of an ``HTML``, a ``FloatProgress`` and an ``HTML``) -> its final text line;
   - HTML outputs (the measured tables) and every Markdown table -> LaTeX tables that fit the page
     (:func:`table_layout`, :func:`latex_table`);
   - the architecture diagrams (SVG, which LaTeX cannot include) -> PDF, drawn by the same
     ``book/figures/make_figures.py`` functions, and the copies' ``figures/NAME.svg`` references -> ``NAME.pdf``;
   - a page the book executes at build time (``mystnb.execution_mode: force``: book/measured.ipynb) is executed here
     first, from the repository root, and then treated like the others;
3. build (``--check`` instead lists what breaks the print convention below), copy the PDF to
   ``_build/pdf/seqviz.pdf``, and write ``_build/pdf/seqviz.json``: what was replaced, the
   smallest printed label of every widget figure, and the LaTeX log's overfull boxes inside tables
   (:func:`overfull_in_tables`); tests/test_pdf.py reads it.

What print leaves out or says instead (the convention chapter authors follow; tests/test_pdf.py enforces it):

- **Interaction instructions** ("hover over a cell", "drag the slider", "click a column"): put them in a markdown cell
  of their own tagged ``html-only``. The HTML book, the notebook and the slides show it (the slides as speaker
  notes); print drops it. In a ``.md`` page use Sphinx's own ``{only} html`` directive around the sentence.
  tests/test_pdf.py fails on any printed markdown sentence with "hover", "drag", "click", "mouse" or "slider"
  (:data:`INSTRUCTION`; "move the ... slider" too) outside such a cell or block.
- **What the figure shows, for print**: the code cell that makes a widget (or a figure whose reading needs the mouse)
  carries the sentence in its metadata, ``"seqviz": {"print": "The heatmap shows ... at step 3."}`` (Markdown, math
  allowed). Print sets it as a paragraph right under the figure; the HTML book and the notebook do not show it (cell
  metadata); the slides put it in the speaker notes. Every ``html-only`` cell must sit next to (or one markdown cell
  away from) a code cell with a widget output that carries this sentence, so no figure loses its explanation. In a
  ``.md`` page the sentence goes in an ``{only} latex`` block.
- **Check cells are not printed**: a code cell whose first line is ``# checked`` or an ``assert``, whose statements
  are all ``assert``, or that is tagged ``remove-input``/``remove-cell``/``hide-input`` and asserts anything
  (:func:`is_check_cell`). The book may keep a hidden check's one-line output; print drops the whole cell.
- **Tables**: every table (Markdown in a cell or page, HTML in an output) is typeset by :func:`latex_table` in
  ``\\footnotesize`` with column widths from its content, so it fits the text width: long words break at ``_``, ``/``,
  ``,``, ``=`` and every :data:`MAX_PIECE` characters, a table with few rows and too many columns is printed
  transposed, a long one wide one is split into column groups that each repeat the first column. Backticks become
  code font (never literal), and a ``--`` stays two hyphens (text and code alike).

The LaTeX settings of the HTML-independent kind (xelatex, the ``bbm.sty`` stub, ``\\tag`` inside Sphinx's
unnumbered-equation wrapper, no xindy, no second set of section numbers) live in ``_config.yml``; the print-only ones
(tables, smart quotes) are added to the copy by :func:`print_config` and ``book/latex/seqviz-print.sty``.
"""
from __future__ import annotations

import argparse
import ast
import base64
import copy
import html
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "_build" / "pdf-src"
OUT = ROOT / "_build" / "pdf" / "seqviz.pdf"
COPIED = ["_config.yml", "_toc.yml", "book", "notebooks", "src"]  # src: the chapters {literalinclude} its code
IGNORED = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "_build", "*.pyc", "*.pt", "*.egg-info")
VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"
DPI = 150  # print resolution of the widget figures
TARGET = "seqviz"  # _config.yml's latex.latex_documents.targetname, without .tex
NOT_PRINTED = {"remove-cell", "remove-output", "hide-cell", "hide-output"}  # tags whose outputs the PDF leaves out
STY = ROOT / "book" / "latex" / "seqviz-print.sty"

# ---- the print convention ---------------------------------------------------------------------------------------
HTML_ONLY = "html-only"  # tag of a markdown cell that print leaves out (interaction instructions)
PRINT_KEY = "print"  # metadata.seqviz.print of a code cell: what its figure shows, printed under it
INSTRUCTION = re.compile(r"\b(hover\w*|drag\w*|click\w*|mouse\w*|move the [^.;:]{0,40}?sliders?)\b", re.I)
HIDDEN_INPUT = {"remove-input", "remove-cell", "hide-input"}


def _source(x) -> str:
    return "".join(x) if isinstance(x, list) else (x or "")


def _tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def is_check_cell(cell: dict) -> bool:
    """Whether a code cell is a check (nbval's proof behind the lesson): its first line is ``# checked`` or an
    ``assert``, all its statements are ``assert``, or it is hidden (``remove-input``, ``remove-cell``,
    ``hide-input``) and asserts."""
    if cell.get("cell_type") != "code":
        return False
    text = _source(cell.get("source"))
    first = next((line.strip() for line in text.split("\n") if line.strip()), "")
    if first.lower().startswith("# checked") or re.match(r"assert\b", first):
        return True
    try:
        body = ast.parse(text).body
    except SyntaxError:  # IPython magics: not a plain check
        return False
    if body and all(isinstance(s, ast.Assert) for s in body):
        return True
    return bool(_tags(cell) & HIDDEN_INPUT) and any(isinstance(n, ast.Assert) for n in ast.walk(ast.Module(body, [])))


def print_sentence(cell: dict) -> str | None:
    """The ``metadata.seqviz.print`` sentence of a code cell (what its figure shows, for print), or None."""
    meta = cell.get("metadata", {}).get("seqviz", {})
    text = meta.get(PRINT_KEY) if isinstance(meta, dict) else None
    if text is not None and (not isinstance(text, str) or not text.strip()):
        raise ValueError(f"metadata.seqviz.{PRINT_KEY} must be a non-empty sentence (Markdown), got {text!r}")
    return text.strip() if text else None


def has_widget(cell: dict) -> bool:
    return any(VIEW in o.get("data", {}) for o in cell.get("outputs", []))


ONLY = re.compile(r"^(?P<fence>`{3,}|:{3,})\{only\}[ \t]*(?P<expr>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                  re.M | re.S)


def printed_markdown(text: str) -> str:
    """A ``.md`` page's text as print reads it: ``{only} html`` blocks dropped, ``{only} latex`` blocks kept."""
    return ONLY.sub(lambda m: m.group("body") if "latex" in m.group("expr") else "", text)


def _sentences_with_instructions(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code fences
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code: `drag=...` is a name, not an instruction
    return [s.strip() for s in re.split(r"(?<=[.!?:;])\s+|\n\s*\n", text) if INSTRUCTION.search(s)]


def instructions_in_print(nb: dict) -> list[tuple[int, str]]:
    """(cell index, sentence) of every markdown sentence print would show that tells the reader to hover, drag,
    click, use the mouse or a slider (cells tagged ``html-only`` or ``remove-cell`` are not printed)."""
    out = []
    for k, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "markdown" or _tags(cell) & {HTML_ONLY, "remove-cell"}:
            continue
        out += [(k, s) for s in _sentences_with_instructions(printed_markdown(_source(cell.get("source"))))]
    return out


def unexplained_html_only(nb: dict) -> list[int]:
    """Indices of ``html-only`` cells with no code cell nearby (the neighbouring cells, or one markdown cell further)
    that has a widget output and a ``seqviz.print`` sentence: print would lose what the figure shows."""
    cells = nb.get("cells", [])
    bad = []
    for k, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown" or HTML_ONLY not in _tags(cell):
            continue
        near = [j for d in (-1, 1) for j in (k + d, k + 2 * d) if 0 <= j < len(cells)]
        near = [j for j in near if abs(j - k) == 1 or cells[(j + k) // 2].get("cell_type") == "markdown"]
        if not any(cells[j]["cell_type"] == "code" and has_widget(cells[j]) and print_sentence(cells[j])
                   for j in near):
            bad.append(k)
    return bad


def book_sources(root: Path = ROOT) -> list[Path]:
    """The pages print shows: chapter notebooks, the book's notebooks and Markdown pages."""
    return (sorted((root / "notebooks").glob("*.ipynb")) + sorted((root / "book").glob("*.ipynb"))
            + sorted((root / "book").glob("*.md")))


def print_problems(path: Path) -> list[str]:
    """What breaks the print convention in one page: instructions print would show, and ``html-only`` cells with no
    widget carrying a ``seqviz.print`` sentence next to them."""
    if path.suffix == ".md":
        text = printed_markdown(path.read_text(encoding="utf-8"))
        return [f"prints {s!r}" for s in _sentences_with_instructions(text)]
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ([f"cell {k} prints {s!r}" for k, s in instructions_in_print(nb)]
            + [f"cell {k} is html-only, but no widget next to it has a seqviz.print sentence"
               for k in unexplained_html_only(nb)])


HOW = ("put the instruction in a markdown cell of its own tagged `html-only` and give the widget's code cell "
       "`\"seqviz\": {\"print\": \"what the figure shows\"}` in its metadata (a .md page: `{only} html` and "
       "`{only} latex` blocks); scripts/pdf.py's docstring has the convention")


# ---- tables -----------------------------------------------------------------------------------------------------
LINEWIDTH_PT = 469.755  # \textwidth of the book's LaTeX class (letter paper, 10 pt; the log prints it)
TABLE_FONT_PT = 8.0  # \footnotesize
CHAR_EM = {"text": 0.56, "bold": 0.62, "code": 0.58}  # generous average character widths (FreeSerif, DejaVu Mono)
CAPS_EXTRA_EM = 0.12  # what a capital letter adds to CHAR_EM (text and bold)
CELL_PAD_PT = 8.0  # \tabcolsep = 4pt on each side
MAX_PIECE = 14  # characters after which a word with no natural break point may break anyway


@dataclass
class Table:
    header: list[str]  # Markdown inline text of each column's head ("" for none)
    rows: list[list[str]]

    def __post_init__(self):
        width = max([len(self.header)] + [len(r) for r in self.rows])
        self.header = self.header + [""] * (width - len(self.header))
        self.rows = [r + [""] * (width - len(r)) for r in self.rows]


def _cut(word: str) -> list[str]:
    """A word cut where print may break it: after ``_ / = | ;``, after ``,`` or ``:`` not followed by a digit (so
    175,869 and 06:51:05 hold together), and every MAX_PIECE characters of a run with no such place (a hash)."""
    out = []
    for part in re.findall(r".*?(?:[_/=|;]|[,:](?!\d)|$)", word):
        out += [part[i:i + MAX_PIECE] for i in range(0, len(part), MAX_PIECE)]
    return [p for p in out if p]


def pieces(text: str) -> list[str]:
    """The unbreakable pieces of a cell's plain text: its words, cut by :func:`_cut`."""
    return [p for word in text.split() for p in _cut(word)]


def _plain(md: str) -> tuple[str, str]:
    """(plain text, kind) of a Markdown cell for width estimates: kind is "code" if it is all code."""
    kind = "code" if re.fullmatch(r"\s*`[^`]*`\s*", md or "") else "text"
    text = re.sub(r"\$([^$]*)\$", lambda m: re.sub(r"\\[a-zA-Z]+|[{}^_]", "", m.group(1)), md or "")
    return re.sub(r"[`*\\]", "", text), kind


def _width(text: str, kind: str) -> float:
    """A generous width in pt: capitals count wider than the average character (a bold "ROUGE-L" head is about 0.7 em
    a letter, which the average alone left 2.4 pt short of)."""
    caps = sum(ch.isupper() for ch in text) if kind != "code" else 0
    return (len(text) * CHAR_EM[kind] + caps * CAPS_EXTRA_EM) * TABLE_FONT_PT


def column_widths(columns: list[list[tuple[str, str]]], width: float = LINEWIDTH_PT) -> list[float] | None:
    """Widths in pt of columns of (plain text, kind) cells that fit ``width``: each at least its longest piece, the
    rest shared in proportion to how much more each column's longest cell needs; None where even the pieces do not
    fit side by side."""
    mins = [max([_width(p, k) for t, k in col for p in pieces(t)] + [TABLE_FONT_PT]) + CELL_PAD_PT for col in columns]
    nats = [max([_width(t, k) for t, k in col] + [0.0]) + CELL_PAD_PT for col in columns]
    nats = [max(n, m) for n, m in zip(nats, mins)]
    if sum(mins) > width:
        return None
    if sum(nats) <= width:
        return nats
    extra, want = width - sum(mins), [n - m for n, m in zip(nats, mins)]
    return [m + extra * w / sum(want) for m, w in zip(mins, want)]


def _columns(t: Table) -> list[list[tuple[str, str]]]:
    cols = []
    for j in range(len(t.header)):
        head = _plain(t.header[j])
        cols.append([(head[0], "bold")] + [_plain(r[j]) for r in t.rows])
    return cols


def transpose(t: Table) -> Table:
    """Heads down the first column, each row a column (a one-row table becomes a list of name and value)."""
    first = [""] * len(t.rows) if not t.header[0] else [r[0] for r in t.rows]
    if t.header[0]:
        return Table([t.header[0]] + first, [[h] + [r[j] for r in t.rows] for j, h in enumerate(t.header) if j])
    return Table([""] * (len(t.rows) + 1), [[h] + [r[j] for r in t.rows] for j, h in enumerate(t.header)])


def split_columns(t: Table, width: float = LINEWIDTH_PT) -> list[Table]:
    """``t`` cut into tables of as many columns as fit side by side, each repeating the first column."""
    cols = _columns(t)
    groups, current = [], []
    for j in range(1, len(t.header)):
        if current and column_widths([cols[0]] + [cols[i] for i in current + [j]], width) is None:
            groups.append(current)
            current = []
        current.append(j)
    groups.append(current)
    return [Table([t.header[0]] + [t.header[j] for j in g], [[r[0]] + [r[j] for j in g] for r in t.rows])
            for g in groups]


TRANSPOSE_ROWS = 3  # a table of at most this many rows that does not fit is printed transposed


def table_layout(t: Table, width: float = LINEWIDTH_PT) -> list[tuple[Table, list[float]]]:
    """The rule that makes a table fit the page: as it is if its columns fit; else transposed if it has at most
    TRANSPOSE_ROWS rows and the transposed one fits; else split into column groups that each repeat the first
    column. Returns (table, column widths in pt) for each printed part."""
    widths = column_widths(_columns(t), width)
    if widths is not None:
        return [(t, widths)]
    if len(t.rows) <= TRANSPOSE_ROWS:
        tt = transpose(t)
        widths = column_widths(_columns(tt), width)
        if widths is not None:
            return [(tt, widths)]
    parts = split_columns(t, width)
    out = []
    for part in parts:
        widths = column_widths(_columns(part), width)
        if widths is None:  # one column beside the first is still too wide: give both half the width
            widths = [width / len(part.header)] * len(part.header)
        out.append((part, widths))
    return out


def _latex_escape(text: str) -> str:
    text = "".join({"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "%": r"\%",
                    "#": r"\#", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}", "`": ""}
                   .get(c, c) for c in text)
    return text.replace("--", "-{}-").replace("--", "-{}-")  # a command's `--` never becomes a dash


def _breakable(text: str) -> str:
    """LaTeX for plain text with a break allowed where :func:`_cut` cuts."""
    return " ".join(r"\allowbreak{}".join(_latex_escape(p) for p in _cut(word)) for word in text.split(" "))


def _inline_parser():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    return MarkdownIt("commonmark").use(dollarmath_plugin, double_inline=True)


def markdown_to_latex(md: str) -> str:
    """LaTeX for a table cell's inline Markdown: text, ``code`` (typewriter), **bold**, *italic*, $math$, links as
    their text. Backticks never print; ``--`` stays two hyphens."""
    tokens = _inline_parser().parseInline(md or "")
    out = []
    for tok in (tokens[0].children or []) if tokens else []:
        t = tok.type
        if t == "text":
            out.append(_breakable(tok.content))
        elif t == "code_inline":
            out.append(r"\texttt{" + _breakable(tok.content) + "}")
        elif t in ("math_inline", "math_inline_double"):
            out.append(f"${tok.content}$")
        elif t == "strong_open":
            out.append(r"\textbf{")
        elif t == "em_open":
            out.append(r"\emph{")
        elif t in ("strong_close", "em_close"):
            out.append("}")
        elif t in ("softbreak", "hardbreak"):
            out.append(" ")
        elif t == "html_inline":
            continue
        # link_open/close: the text between them is printed as text
    return "".join(out)


def latex_table(t: Table, width: float = LINEWIDTH_PT) -> str:
    """The table as LaTeX longtables in ``\\footnotesize`` that fit ``width`` (see :func:`table_layout`)."""
    blocks = []
    for part, widths in table_layout(t, width):
        spec = "".join(r">{\raggedright\arraybackslash}p{%.1fpt}" % (w - CELL_PAD_PT) for w in widths)
        lines = [r"\begin{seqviztable}{" + spec + "}", r"\toprule"]
        if any(part.header):
            lines.append(" & ".join(r"\textbf{" + markdown_to_latex(h) + "}" if h else "" for h in part.header)
                         + r" \\ \midrule")
        lines.append(r"\endhead")
        lines += [" & ".join(markdown_to_latex(c) for c in row) + r" \\" for row in part.rows]
        lines += [r"\bottomrule", r"\end{seqviztable}"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _raw_latex(tex: str) -> str:
    return f"\n````{{raw}} latex\n{tex}\n````\n"


def _md_tables(text: str):
    """(first line, end line, Table) of every pipe table in a Markdown text (markdown-it's GFM table rule)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out, current, row, in_head = [], None, None, False
    for tok in tokens:
        if tok.type == "table_open":
            current, begin = Table([], []), tok.map
        elif tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and current is not None and row is not None:
            row.append(tok.content)
        elif tok.type == "tr_close" and current is not None:
            if in_head:
                current.header = row
            else:
                current.rows.append(row)
            row = None
        elif tok.type == "table_close" and current is not None:
            current.__post_init__()
            out.append((begin[0], begin[1], current))
            current = None
    return out


def tables_to_latex(text: str) -> str:
    """A Markdown text with each pipe table replaced by a ``{raw} latex`` block of :func:`latex_table`."""
    found = _md_tables(text)
    if not found:
        return text
    lines = text.split("\n")
    for begin, end, table in reversed(found):
        lines[begin:end] = _raw_latex(latex_table(table)).split("\n")
    return "\n".join(lines)


# ---- figures ----------------------------------------------------------------------------------------------------
MIN_LABEL_PT = 7.0  # the smallest label a printed figure may have
TEXTHEIGHT_IN = 8.5  # what \sphinxincludegraphics leaves of a page for a figure's height, about
LINEWIDTH_IN = LINEWIDTH_PT / 72.27


def label_sizes(fig) -> list[float]:
    """Font sizes in pt of the figure's visible, non-empty texts (tick labels, titles, legends, annotations)."""
    from matplotlib.text import Text

    fig.draw_without_rendering()
    return [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
            and t.get_window_extent().width > 0]


def _printed_inches(fig) -> tuple[float, float]:
    """Width and height in inches of the PNG that savefig(bbox_inches="tight") writes (its natural print size)."""
    fig.draw_without_rendering()
    box = fig.get_tightbbox()
    return box.width + 0.2, box.height + 0.2  # pad_inches=0.1 on each side


def print_scale(width_in: float, height_in: float) -> float:
    """How much LaTeX shrinks a figure of this natural size to fit the text block (1 when it fits)."""
    return min(1.0, LINEWIDTH_IN / width_in, TEXTHEIGHT_IN / height_in)


def fit_for_print(fig) -> float:
    """Resize ``fig`` so that printed within the text block its smallest label is at least MIN_LABEL_PT: a width or
    height that LaTeX would shrink too far is reduced (the labels keep their pt sizes; the other side stays), where
    shrinking can do it. Returns the smallest label's printed size in pt."""
    sizes = label_sizes(fig)
    if not sizes:
        return math.inf
    smallest = min(sizes)
    target = MIN_LABEL_PT * 1.02  # a little room: the tight box moves as the canvas shrinks
    limit = (LINEWIDTH_IN * smallest / target, TEXTHEIGHT_IN * smallest / target)
    for _ in range(4):
        w, h = _printed_inches(fig)
        if smallest * print_scale(w, h) >= MIN_LABEL_PT:
            break
        size = fig.get_size_inches()  # the tight box is about the canvas size: shrink each side it exceeds
        fig.set_size_inches(max(0.3 * size[0], min(size[0], size[0] * limit[0] / w)),
                            max(0.3 * size[1], min(size[1], size[1] * limit[1] / h)))
    w, h = _printed_inches(fig)
    return smallest * print_scale(w, h)


# ---- widget outputs ---------------------------------------------------------------------------------------------
def _png_output(fig) -> dict:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": base64.b64encode(buf.getvalue()).decode("ascii")}}


def _text_output(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text if text.endswith("\n") else text + "\n"}


def _markdown_output(md: str) -> dict:
    return {"output_type": "display_data", "metadata": {}, "data": {"text/markdown": md}}


def _html_text(value: str) -> str:
    """Text of a small HTML fragment (tqdm's labels): tags dropped, entities decoded, figure spaces made spaces."""
    return html.unescape(re.sub(r"<[^>]+>", "", value or "")).replace("\u2007", " ").replace("\u200b", "")


class WidgetPrinter:
    """Turns the widget outputs of one notebook into outputs print can show, from the notebook's saved state."""

    def __init__(self, nb: dict, where: str):
        self.models = nb.get("metadata", {}).get("widgets", {}).get(STATE, {}).get("state", {})
        self.where = where
        self.counts: dict[str, int] = {}
        self.labels: list[tuple[str, float]] = []  # (widget class, smallest printed label in pt) per figure

    def _model(self, ref: str) -> dict | None:
        return self.models.get(ref[len("IPY_MODEL_"):] if ref.startswith("IPY_MODEL_") else ref)

    def outputs(self, model_id: str) -> list[dict]:
        from seqviz.widgets.saved import QUIZ_ID, WIDGET_CLASSES, figure_from_state

        m = self._model(model_id)
        if m is None:
            raise SystemExit(f"{self.where}: widget {model_id} has no saved state; save the notebook with its "
                             f"widget state (JupyterLab: Settings > Save Widget State Automatically)")
        s, name = m.get("state", {}), m.get("model_name")
        if name == "AnyModel" and s.get("_anywidget_id") == QUIZ_ID:                  # a question: its text
            from seqviz.widgets.saved import quiz_from_state

            self.counts["Quiz"] = self.counts.get("Quiz", 0) + 1
            question, answer = quiz_from_state(m).to_markdown()
            return [_markdown_output(f"{question}\n\n*Answer* {answer}")]
        if name == "AnyModel" and s.get("_anywidget_id") in WIDGET_CLASSES:
            kind = WIDGET_CLASSES[s["_anywidget_id"]]
            self.counts[kind] = self.counts.get(kind, 0) + 1
            fig = figure_from_state(m)
            self.labels.append((kind, round(fit_for_print(fig), 2)))
            return [_png_output(fig)]
        children = [c for c in s.get("children", [])]
        if name == "HBoxModel" and [self._model(c).get("model_name") for c in children] == \
                ["HTMLModel", "FloatProgressModel", "HTMLModel"]:                     # a tqdm bar
            left, bar, right = (self._model(c)["state"] for c in children)
            frac = (bar.get("value", 0) - bar.get("min", 0)) / max(bar.get("max", 1) - bar.get("min", 0), 1e-12)
            filled = max(0, min(20, round(20 * frac)))
            self.counts["progress bar"] = self.counts.get("progress bar", 0) + 1
            return [_text_output(f"{_html_text(left.get('value'))}|{'#' * filled}{' ' * (20 - filled)}|"
                                 f"{_html_text(right.get('value'))}")]
        if name in ("TabModel", "AccordionModel", "HBoxModel", "VBoxModel", "BoxModel", "GridBoxModel"):
            titles = list(s.get("titles") or [])
            out = []
            for i, c in enumerate(children):
                if i < len(titles) and titles[i]:
                    out.append(_markdown_output(f"**{_md_escape(titles[i])}**"))
                out.extend(self.outputs(c))
            return out
        if name in ("HTMLModel", "LabelModel", "HTMLMathModel"):
            return [_text_output(_html_text(s.get("value", "")))]
        # any other control (a slider, a button) does nothing on paper
        self.counts["other"] = self.counts.get("other", 0) + 1
        return [_text_output(f"[interactive {name[:-5] if name.endswith('Model') else name}: see the HTML book]")]


# ---- HTML outputs -> Markdown with LaTeX tables ----------------------------------------------------------------
def _md_escape(text: str) -> str:
    """Markdown-escape text taken from HTML; backticks stay, so `x` in a results table prints as code, not `x`."""
    return re.sub(r"([\\*_\[\]$|<>#])", r"\\\1", text)


class _HTMLToMarkdown(HTMLParser):
    """The few HTML shapes the book's outputs use: tables (with caption), paragraphs, headings, emphasis, code."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.text: list[str] = []
        self.rows: list[list[str]] | None = None
        self.cell: list[str] | None = None
        self.header_rows = 0
        self.caption: list[str] | None = None
        self.in_head = False

    def _sink(self) -> list[str]:
        return self.cell if self.cell is not None else self.caption if self.caption is not None else self.text

    def _flush(self, wrap: str = "") -> None:
        t = re.sub(r"\s+", " ", "".join(self.text)).strip()
        if t:
            self.blocks.append(f"{wrap}{t}{wrap[::-1] if wrap else ''}")
        self.text = []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._flush()
            self.rows, self.header_rows = [], 0
        elif tag == "caption":
            self.caption = []
        elif tag == "thead":
            self.in_head = True
        elif tag == "tr" and self.rows is not None:
            self.rows.append([])
        elif tag in ("td", "th") and self.rows is not None:
            self.cell = []
        elif tag in ("em", "i"):
            self._sink().append("*")
        elif tag in ("strong", "b"):
            self._sink().append("**")
        elif tag == "code":
            self._sink().append("`")
        elif tag in ("p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "br"):
            self._flush()

    def handle_endtag(self, tag):
        if tag == "table" and self.rows is not None:
            rows = [r for r in self.rows if r]
            if rows:
                head = rows[0] if self.header_rows else []
                table = Table(head, rows[1:] if self.header_rows else rows)
                self.blocks.append(_raw_latex(latex_table(table)))
            self.rows = None
        elif tag == "caption" and self.caption is not None:
            cap = re.sub(r"\s+", " ", "".join(self.caption)).strip()
            if cap:
                self.blocks.append(f"*{cap}*")
            self.caption = None
        elif tag == "thead":
            self.in_head = False
        elif tag == "tr" and self.rows is not None and self.in_head:
            self.header_rows += 1
        elif tag in ("td", "th") and self.cell is not None and self.rows is not None:
            self.rows[-1].append(re.sub(r"\s+", " ", "".join(self.cell)).strip())
            self.cell = None
        elif tag in ("em", "i"):
            self._sink().append("*")
        elif tag in ("strong", "b"):
            self._sink().append("**")
        elif tag == "code":
            self._sink().append("`")
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._flush("**")
        elif tag in ("p", "div"):
            self._flush()

    def handle_data(self, data):
        self._sink().append(_md_escape(data))

    def markdown(self) -> str:
        self._flush()
        return "\n\n".join(self.blocks)


def html_to_markdown(fragment: str) -> str:
    """MyST Markdown for an HTML output: its tables as ``{raw} latex`` blocks of :func:`latex_table`."""
    p = _HTMLToMarkdown()
    p.feed(fragment)
    p.close()
    return p.markdown()


# ---- one notebook -----------------------------------------------------------------------------------------------
def execute_in_place(path: Path) -> None:
    """Run a notebook the book executes at build time, from the repository root (it reads bench/results there)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env_root = os.environ.get("SEQVIZ_ROOT")
    os.environ["SEQVIZ_ROOT"] = str(ROOT)
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    finally:
        if env_root is None:
            os.environ.pop("SEQVIZ_ROOT", None)
        else:
            os.environ["SEQVIZ_ROOT"] = env_root
    nb.metadata.setdefault("mystnb", {})["execution_mode"] = "off"
    nbformat.write(nb, path)


def diagrams_as_pdf(src: Path) -> dict[str, str]:
    """Draw book/figures' diagrams as PDF next to their SVGs in the copy (LaTeX includes PDF, not SVG), with the
    functions and settings of make_figures.py; returns {"figures/NAME.svg": "figures/NAME.pdf"}."""
    import importlib.util

    import matplotlib

    here = src / "book" / "figures"
    spec = importlib.util.spec_from_file_location("make_figures", here / "make_figures.py")
    mf = importlib.util.module_from_spec(spec)
    sys.modules["make_figures"] = mf  # its dataclasses look their module up
    try:
        spec.loader.exec_module(mf)
    finally:
        sys.modules.pop("make_figures", None)
    done = {}
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(mf.RC)
        for f in mf.FIGURES:
            f.draw().fig.savefig(here / f"{f.name}.pdf", format="pdf", metadata={"Creator": "seqviz scripts/pdf.py"})
            done[f"figures/{f.name}.svg"] = f"figures/{f.name}.pdf"
    missing = sorted(p.name for p in here.glob("*.svg") if f"figures/{p.name}" not in done)
    if missing:
        raise SystemExit(f"pdf: {missing} in book/figures are not drawn by make_figures.py; LaTeX cannot include SVG")
    return done


def _svg_refs(text: str, svgs: dict[str, str]) -> str:
    return re.sub(r"figures/[\w.-]+\.svg", lambda m: svgs.get(m.group(0), m.group(0)), text)


def print_ready_nb(nb: dict, rel: str, svgs: dict[str, str] | None = None) -> dict[str, int]:
    """Rewrite one notebook (in memory) for print by the convention of this module's docstring; returns what was
    replaced and, under "labels", the smallest printed label of each widget figure."""
    printer = WidgetPrinter(nb, rel)
    counts = {"HTML table": 0, "check cells": 0, "html-only cells": 0, "print sentences": 0, "tables": 0}
    printed = 0
    for cell in nb.get("cells", []):
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if cell.get("cell_type") == "markdown":
            text = _source(cell.get("source"))
            if HTML_ONLY in tags:
                tags.append("remove-cell")
                counts["html-only cells"] += 1
                continue
            new = tables_to_latex(_svg_refs(text, svgs) if svgs else text)
            counts["tables"] += len(_md_tables(text))
            cell["source"] = new
            continue
        if cell.get("cell_type") != "code":
            continue
        if is_check_cell(cell):
            if "remove-cell" not in tags:
                tags.append("remove-cell")
            counts["check cells"] += 1
            continue
        new = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if VIEW in data:
                new.extend(printer.outputs(data[VIEW]["model_id"]))
            elif "text/html" in data and not any(k in data for k in ("image/png", "image/jpeg", "text/latex",
                                                                        "text/markdown")):
                out = copy.deepcopy(out)
                out["data"] = {"text/markdown": html_to_markdown(_source(data["text/html"]))}
                # myst-nb renders a text/markdown output as CommonMark unless told: MyST, for the {raw} latex tables
                cell["metadata"].setdefault("mystnb", {})["markdown_format"] = "myst"
                counts["HTML table"] += 1
                new.append(out)
            else:
                new.append(out)
        sentence = print_sentence(cell)
        if sentence:
            new.append(_markdown_output(sentence))
            cell["metadata"].setdefault("mystnb", {})["markdown_format"] = "myst"
            counts["print sentences"] += 1
        cell["outputs"] = new
        if not NOT_PRINTED & set(tags):
            printed += sum("image/png" in o.get("data", {}) for o in new)
    nb.get("metadata", {}).pop("widgets", None)  # nothing left refers to it
    counts.update(printer.counts)
    counts = {k: v for k, v in counts.items() if v}
    counts["figures printed"] = printed  # PNG outputs (widget figures included) in cells the PDF shows
    counts["labels"] = printer.labels
    return counts


def print_ready(path: Path, rel: str, svgs: dict[str, str] | None = None) -> dict[str, int]:
    """:func:`print_ready_nb` on a copied notebook file, written back."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    counts = print_ready_nb(nb, rel, svgs)
    path.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return counts


def copied() -> list[str]:
    """The book's sources: COPIED, plus the folders of _config.yml's local Sphinx extensions."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extra = dict.fromkeys(((config.get("sphinx") or {}).get("local_extensions") or {}).values())
    return COPIED + [p for p in extra if p not in COPIED]


def print_config(config: dict) -> dict:
    """The copy's _config.yml with the print-only settings: ``book/latex/seqviz-print.sty`` (tables) loaded after
    the book's preamble, and smart quotes without dashes, so a ``--`` in text stays two hyphens."""
    config = copy.deepcopy(config)
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["smartquotes_action"] = "qe"  # quotes and ellipses; Sphinx's default "qDe" also makes -- a dash
    extra = sphinx.setdefault("latex_additional_files", [])
    if "book/latex/seqviz-print.sty" not in extra:
        extra.append("book/latex/seqviz-print.sty")
    elements = sphinx.setdefault("latex_elements", {})
    elements["preamble"] = (elements.get("preamble") or "") + "\n\\usepackage{seqviz-print}\n"
    return config


def prepare(src: Path = SRC) -> dict[str, dict[str, int]]:
    """Copy the book into ``src`` and make every page print-ready; returns per notebook what was replaced."""
    import yaml

    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for name in copied():
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=IGNORED)
        else:
            shutil.copy2(p, src / name)
    config = yaml.safe_load((src / "_config.yml").read_text(encoding="utf-8"))
    (src / "_config.yml").write_text(yaml.safe_dump(print_config(config), sort_keys=False, allow_unicode=True),
                                     encoding="utf-8")
    svgs = diagrams_as_pdf(src)
    for md in sorted(src.rglob("*.md")):
        text = md.read_text(encoding="utf-8")
        new = tables_to_latex(_svg_refs(text, svgs))
        if new != text:
            md.write_text(new, encoding="utf-8")
    report = {}
    for path in sorted(src.rglob("*.ipynb")):
        rel = str(path.relative_to(src))
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        if meta.get("mystnb", {}).get("execution_mode") == "force":
            t = time.time()
            execute_in_place(path)
            print(f"pdf: executed {rel} ({time.time() - t:.1f} s), as the book does at build time", flush=True)
        report[rel] = print_ready(path, rel, svgs)
    return report


# ---- the LaTeX log ----------------------------------------------------------------------------------------------
TABLE_ENVS = ("seqviztable", "longtable", "tabulary", "tabular", "tabularx")
OVERFULL = re.compile(r"^Overfull \\hbox \(([\d.]+)pt too wide\) (?:in paragraph|in alignment|detected) at lines? "
                      r"(\d+)(?:--(\d+))?", re.M)


def table_spans(tex: str) -> list[tuple[int, int]]:
    """(first, last) line numbers (1-based) of every table environment in a .tex file."""
    begin = re.compile(r"\\begin\{(" + "|".join(TABLE_ENVS) + r")\}")
    end = re.compile(r"\\end\{(" + "|".join(TABLE_ENVS) + r")\}")
    spans, stack = [], []
    for n, line in enumerate(tex.split("\n"), 1):
        for _ in begin.findall(line):
            stack.append(n)
        for _ in end.findall(line):
            if stack:
                first = stack.pop()
                if not stack:
                    spans.append((first, n))
    return spans


def overfull_in_tables(tex: str, log: str, tolerance_pt: float = 1.0) -> list[tuple[float, int]]:
    """(points too wide, .tex line) of every overfull box over ``tolerance_pt`` that TeX reports inside a table."""
    spans = table_spans(tex)
    out = []
    for m in OVERFULL.finditer(log):
        pt, line = float(m.group(1)), int(m.group(2))
        if pt > tolerance_pt and any(a <= line <= b for a, b in spans):
            out.append((pt, line))
    return out


def write_report(report: dict, out: Path, seconds: float, latex_dir: Path | None = None) -> Path:
    """``_build/pdf/seqviz.json`` next to the PDF: what the print-ready copy replaced, per notebook, how many
    figures the PDF must hold, each widget figure's smallest printed label, and the overfull boxes in tables."""
    widgets = {k for counts in report.values() for k in counts} - {
        "figures printed", "HTML table", "progress bar", "other", "labels", "check cells", "html-only cells",
        "print sentences", "tables"}
    labels = [(nb, *figure) for nb, counts in report.items() for figure in counts.get("labels", [])]
    summary = {
        "pdf": out.name,
        "seconds": round(seconds, 1),
        "figures_printed": sum(c.get("figures printed", 0) for c in report.values()),
        "widget_figures": sum(c.get(k, 0) for c in report.values() for k in widgets),
        "other_widgets": sum(c.get("other", 0) for c in report.values()),
        "smallest_label_pt": min((pt for _, _, pt in labels), default=None),
        "labels_pt": labels,  # (notebook, widget, smallest printed label in pt)
        "notebooks": report,
    }
    if latex_dir is not None:
        tex = (latex_dir / f"{TARGET}.tex").read_text(encoding="utf-8", errors="replace")
        log = (latex_dir / f"{TARGET}.log").read_text(encoding="utf-8", errors="replace")
        summary["tables"] = len(table_spans(tex))
        summary["overfull_in_tables"] = overfull_in_tables(tex, log)
        m = re.search(r"seqviz-print: textwidth=([\d.]+)pt", log)
        summary["textwidth_pt"] = float(m.group(1)) if m else None
    path = out.with_suffix(".json")
    path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return path


def build(src: Path = SRC, out: Path = OUT) -> Path:
    """`jupyter-book build SRC --builder pdflatex`, then the PDF to ``out``."""
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb if jb.exists() else "jupyter-book"), "build", str(src), "--builder", "pdflatex"]
    print("pdf:", " ".join(cmd), flush=True)
    t = time.time()
    env = dict(os.environ, SEQVIZ_ROOT=str(ROOT))
    rc = subprocess.run(cmd, cwd=src, env=env).returncode
    pdf = src / "_build" / "latex" / f"{TARGET}.pdf"
    if not pdf.is_file():
        raise SystemExit(f"pdf: no {pdf} (jupyter-book exited {rc}); the LaTeX log is "
                         f"{src / '_build' / 'latex' / (TARGET + '.log')}")
    if rc != 0:  # e.g. xelatex stopped half-way: what it wrote is not the book
        raise SystemExit(f"pdf: jupyter-book exited {rc}; the LaTeX log is {src / '_build' / 'latex' / (TARGET + '.log')}")
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(pdf, out)
    print(f"pdf: {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.time() - t:.0f} s", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=Path, default=SRC, help="where the print-ready copy of the book goes")
    ap.add_argument("--out", type=Path, default=OUT, help="where the PDF goes")
    ap.add_argument("--prepare-only", action="store_true", help="make the print-ready copy, do not run LaTeX")
    ap.add_argument("--check", action="store_true", help="list what breaks the print convention in the book's "
                    "pages (instructions to hover, drag, click; html-only cells without a print sentence); exit 1 "
                    "if anything does")
    args = ap.parse_args(argv)
    if args.check:
        bad = 0
        for path in book_sources():
            for problem in print_problems(path):
                bad += 1
                print(f"{path.relative_to(ROOT)}: {problem}")
        print(f"pdf: {bad} places break the print convention" + (f": {HOW}" if bad else ""))
        return 1 if bad else 0
    import matplotlib

    matplotlib.use("Agg")
    t = time.time()
    report = prepare(args.src)
    for rel, counts in report.items():
        shown = {k: n for k, n in counts.items() if k != "labels" and n}
        if shown:
            print(f"pdf: {rel}: " + ", ".join(f"{n} {k}" for k, n in sorted(shown.items())), flush=True)
    print(f"pdf: print-ready copy in {args.src} ({time.time() - t:.1f} s)", flush=True)
    if not args.prepare_only:
        build(args.src, args.out)
        path = write_report(report, args.out, time.time() - t, args.src / "_build" / "latex")
        summary = json.loads(path.read_text(encoding="utf-8"))
        print(f"pdf: {summary['tables']} tables, {len(summary['overfull_in_tables'])} overfull boxes in them; "
              f"smallest figure label {summary['smallest_label_pt']} pt", flush=True)
        print(f"pdf: done in {time.time() - t:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
