"""Lecture mode: every chapter as a slide deck, made from the same notebook (issue 24, item 3; issue 33, item 7).

    python scripts/slides.py --set [NB ...]     # write `slideshow` cell metadata (default: every notebooks/NN_*.ipynb)
    python scripts/slides.py --check [NB ...]   # exit 1 and list the notebooks whose metadata is missing or stale
    python scripts/slides.py --build OUTDIR     # static reveal.js decks of every chapter, from the stored outputs

**The rule that makes a chapter into slides** (:func:`plan`; one idea per slide, the prose in the speaker notes):

1. *Which cells.* Everything before the ``## Exercises`` heading. Left out, as the book leaves them out: cells tagged
   ``remove-cell`` or ``hide-cell``, check cells (``pdf.is_check_cell``: first line ``# checked`` or an ``assert``,
   only ``assert`` statements, or a hidden cell that asserts), the set-up code before the first section, empty
   cells; the input of cells tagged ``remove-input``/``hide-input`` and the outputs of cells tagged
   ``remove-output``/``hide-output``; stderr and progress bars (a code cell left with nothing to show but long code
   goes to the notes). An author can override a cell with a tag ``slideshow-slide``, ``slideshow--`` (join the
   slide before), ``slideshow-notes`` or ``slideshow-skip``.
2. *Headings make slides.* Each ``#``, ``##`` and ``###`` heading starts a slide titled with it (a cell holding
   several headings gives several slides). The slide shows the heading, the *lead* of its first paragraph (its
   first sentence; a bold lead such as ``**Teacher forcing.**`` with the sentence after it: a bold lead-in never
   stands alone), and the cell's *display blocks*: equations (``$$``, ``\\begin{align}``, ``{math}``), figures and images, tables, lists (a long
   item shows its first sentence), code blocks of at most CODE_LINES lines. A lead that does not end its sentence
   (it ends in ":" or "is" or runs into an equation) keeps what it introduces: a quoted example after it is shown,
   and after an equation the paragraph that ends the sentence ("where ...") shows that sentence. Every paragraph
   goes to the speaker notes in full, with admonitions, dropdowns and long code blocks.
3. *Prose between code.* A markdown cell without a heading starts a slide (titled with the section's heading) when it
   has display blocks, shown as in 2; a cell of prose only, and a cell tagged ``html-only`` (interaction instructions,
   see scripts/pdf.py), goes to the speaker notes of the slide before it.
4. *Code cells.* Each shown code cell starts a slide titled with the section's heading: its code (at most
   CODE_LINES lines, else the code goes to the notes) and its outputs: text, tables, figures, and widgets, live as in
   the book. A figure takes the slide's height; a widget gets a slide of its own, in a slide-sized view (rule 5);
   the cell's ``seqviz.print`` sentence (what its figure shows, scripts/pdf.py) goes to the notes. A code cell right
   after a markdown cell's slide joins that slide when both fit (no widget, at most one figure); a code cell with
   nothing to show but more than CODE_LINES lines of code goes to the notes.
5. *Slides that would not fit* are split where their blocks end (estimated heights at the deck's WIDTH x HEIGHT, the
   title repeated, no new cell); a text output, table or list longer than a slide is cut into slides of whole lines,
   rows (the head repeated) or items. In the browser, a slide without a widget that is still taller or wider than
   its box is scaled down (no further than MIN_SCALE); a wide printed line first gets a smaller font, then wraps.
   A widget's slide never scrolls: the widget shows a slide-sized view (SLIDE_VIEW: traits set in the deck's copy of
   its state; CSS below for the LSTM heatmap's height, the positional panels' size, the attention heatmap's cells and
   the attention steps' rows), scaled down to fit if need
   be, but no further than keeps its smallest text at WIDGET_TEXT_PX on a PROJECTOR-sized window.

The decks are one flat sequence of slides (ArrowRight and Space walk them all, in order; reveal's navigation is
"linear"), WIDTH x HEIGHT = 800 x 450 logical pixels, which reveal scales to the window: at 1,280 x 720 everything is
drawn 1.6 times its size, so a widget's 10 px labels read at 16 px, as its 688 px book column reads at a desk. Speaker
notes (press S) come from reveal's notes plugin. Citations are rendered from book/references.bib in the book's
author-year style ("[Vaswani et al., 2017]", {cite:t} "Vaswani et al. [2017]").

**What a chapter author writes** (usually nothing more than the book needs): a ``##`` or ``###`` heading where a
slide should start; a first sentence (or a bold lead, ``**Teacher forcing.** ...``) that states the slide's idea;
equations as ``$$ ... \\tag{9.22} $$`` and figures as ``{figure}``, which the slide shows; interaction instructions
in a markdown cell tagged ``html-only`` and the widget cell's ``"seqviz": {"print": "..."}`` sentence
(scripts/pdf.py), which go to the notes; a ``slideshow-...`` tag where the rule chooses badly. Then ``python scripts/slides.py --set
notebooks/NN_name.ipynb`` (tests/test_slides.py fails until the stored metadata is current).

**Live mode (RISE).** ``--set`` writes each cell's ``metadata.slideshow.slide_type`` from the same rule, so
jupyterlab-rise (``make lab``, Alt+R) presents the running notebook with the same slides: ``slide`` for a cell that
starts a slide in the static deck, ``notes`` for a cell whose text goes to its notes, ``skip`` for a cell left out
(and ``-`` where an author joins a cell to the slide before). RISE shows whole cells, so its slides keep their prose
(``scroll`` is on); tests/test_slides.py checks the stored metadata is current and that the static deck starts its
slides at exactly the cells marked ``slide``. ``--set`` is idempotent and changes nothing but
``metadata.slideshow`` and the notebook's ``metadata.rise`` (a theme with bundled fonts, so RISE stays offline).
jupyterlab-rise 0.43.1 does not render ipywidgets 8 widgets (jupyterlab-contrib/rise#119): present a widget from the
notebook view or the static deck.

The static decks need `npm ci` (reveal.js, pinned in package.json) and the book's vendored widget JS
(`scripts/vendor_js.py`, `make vendor`); the pages load both by relative paths (OUTDIR/reveal.js/ and
OUTDIR/../vendor/) and request nothing off the machine.
"""
from __future__ import annotations

import argparse
import ast
import copy
import html
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts/pdf.py: the cell conventions
import pdf  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
BIB = ROOT / "book" / "references.bib"
NODE_REVEAL = ROOT / "node_modules" / "reveal.js"
VENDOR = ROOT / "_vendor" / "vendor"
SLIDE_TYPES = ("slide", "-", "notes", "skip")  # the flat deck has no subslides or fragments
HIDDEN_TAGS = {"remove-cell", "hide-cell"}
NO_INPUT = {"remove-input", "hide-input"}
NO_OUTPUT = {"remove-output", "hide-output"}
HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
LABEL = re.compile(r"^\(\S+\)=\s*$")  # a MyST target line, `(sec-name)=`, that belongs to the heading after it
EXERCISES = re.compile(r"^##\s+Exercises\b")
STATE = "application/vnd.jupyter.widget-state+json"
VIEW = "application/vnd.jupyter.widget-view+json"

# The deck's logical size and what fits in it (pixels at that size; CSS below sets the fonts they assume).
WIDTH, HEIGHT = 800, 450
BODY_H = 352  # HEIGHT less the padding, a one-line title and the slide number's strip
TITLE_LINE = 34  # an h2 of 24 px; a title of more than TITLE_CHARS characters takes two lines
TITLE_CHARS = 52
TITLE_SLIDE = 60  # the chapter's title slide sets its title lower and larger
TEXT_LINE, TEXT_CHARS = 26, 70  # 19 px prose: line height, characters per line (generous)
ITEM_LINE, ITEM_CHARS = 25, 64  # list items
MONO_LINE, MONO_CHARS = 17, 96  # 12.5 px code and printed output
MATH_LINE = 44  # a displayed equation's line
FLEX_MIN = 190  # the least height a figure may be given beside other blocks
CODE_LINES = 14  # longer code goes to the notes
ITEM_MAX = 110  # a list item longer than this shows its first sentence
MIN_SCALE = 0.7  # the browser may scale a slide's content down this far to fit
PROJECTOR = (1280, 720)  # the window a lecturer projects the deck in: reveal draws WIDTH x HEIGHT at REVEAL_SCALE
MARGIN = 0.02  # reveal's margin around the slide (a fraction of its size)
REVEAL_SCALE = min(PROJECTOR[0] / WIDTH, PROJECTOR[1] / HEIGHT) / (1 + MARGIN)
WIDGET_TEXT_PX = 16.0  # the least size of a widget's text on the projected slide: a widget is scaled no smaller
# A widget's view on a slide, where its book view is taller than a slide (issue 39, item 3): these traits are set in
# the deck's copy of the chapter's widget state (the book keeps its own). The beam trees hide their pruned
# candidates (a column of 10-40 nodes a step becomes the beam's 5: the kept, finished and greedy nodes stay).
# The next-word bars show at most 12 tokens (the slider still reaches k_max).
SLIDE_VIEW = {"seqviz.widgets.beam_tree.BeamTree": {"show_pruned": lambda shown: False},
              "seqviz.widgets.next_token.NextTokenDistribution": {"top_k": lambda k: min(k, 12)}}


def chapter_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


_text = pdf._source  # a notebook string field, stored as one string or a list of lines


def _source(cell: dict) -> str:
    return _text(cell.get("source"))


def _lines_outside_fences(text: str):
    """(index, line) of every line of ``text`` that is not inside a ``` or ~~~ or ::: fence."""
    fence = None
    for i, line in enumerate(text.split("\n")):
        m = re.match(r"^\s*(`{3,}|~{3,}|:{3,})", line)
        if m:
            mark = m.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and line.strip() == mark:
                fence = None
            continue
        if fence is None:
            yield i, line


def headings(text: str) -> list[tuple[int, int]]:
    """(line index, level) of every ATX heading of a markdown text (headings inside code fences do not count)."""
    return [(i, len(m.group(1))) for i, line in _lines_outside_fences(text) if (m := HEADING.match(line))]


def parts(text: str) -> list[str]:
    """A markdown text cut in front of each heading of level 1-3 after its first line (a MyST target `(label)=`
    right above a heading goes with it), so that each section and subsection opens a part of its own."""
    lines = text.split("\n")
    cuts = []
    for i, level in headings(text):
        if level > 3:
            continue
        j = i
        while j > 0 and LABEL.match(lines[j - 1]):
            j -= 1
        if any(line.strip() for line in lines[:j]):
            cuts.append(j)
    bounds = [0] + cuts + [len(lines)]
    return [p for a, b in zip(bounds, bounds[1:]) if (p := "\n".join(lines[a:b]).strip("\n")).strip()]


def _opening_heading(text: str) -> tuple[int, str] | None:
    """(level, title) of the heading that opens a part (after MyST targets), or None."""
    for line in text.split("\n"):
        if not line.strip() or LABEL.match(line):
            continue
        m = HEADING.match(line)
        return (len(m.group(1)), m.group(2)) if m and len(m.group(1)) <= 3 else None
    return None


def exercises_start(cells: list[dict]) -> tuple[int, int] | None:
    """(index of the cell holding the ``## Exercises`` heading, line of the heading in it), or None."""
    for k, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        text = _source(cell)
        lines = text.split("\n")
        for i, _ in headings(text):
            if EXERCISES.match(lines[i]):
                return k, i
    return None


# ---- Markdown blocks -----------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _md():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = (MarkdownIt("commonmark", {"html": True}).enable("table").use(dollarmath_plugin, double_inline=True)
          .use(amsmath_plugin).use(colon_fence_plugin))

    def math_inline(self, tokens, idx, options, env):
        return f'<span class="math">\\({html.escape(tokens[idx].content)}\\)</span>'

    def math_block(self, tokens, idx, options, env):
        return f'<div class="math">\\[{html.escape(tokens[idx].content)}\\]</div>\n'

    md.add_render_rule("math_inline", math_inline)
    md.add_render_rule("math_inline_double", math_block)
    md.add_render_rule("math_block", math_block)
    md.add_render_rule("math_block_label", math_block)
    md.add_render_rule("amsmath", math_block)
    return md


def render_markdown(text: str) -> str:
    return _md().render(text)


@dataclass
class Block:
    """What a slide shows: ``kind`` "md" (Markdown), "code" (source), "output" (a notebook output); ``height`` its
    estimated height at the deck's size (0 for a figure or widget, which takes what is left)."""

    kind: str
    body: object
    height: float
    flexible: bool = False
    alone: bool = False  # a widget: a slide of its own


@dataclass
class Slide:
    title: str
    level: int
    cell: int  # index of the notebook cell the slide comes from
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # Markdown
    continued: bool = False  # a slide that a split made (same cell, same title)

    def height(self) -> float:
        return sum(b.height for b in self.blocks)


ABBREVIATIONS = re.compile(r"(?:\b(?:e\.g|i\.e|cf|vs|al|etc|Fig|Eq|Sec|ch|approx|resp|p|pp|No)|\b[A-Z])\.$")


def first_sentence(text: str) -> str:
    """The first sentence of a Markdown paragraph (math and code spans kept whole; "e.g." and initials do not end
    it); a paragraph that opens with a bold phrase ending in ".", ":" or "?" gives that phrase and the sentence after
    it (a bold lead-in never stands alone)."""
    text = " ".join(text.split())
    bold = re.match(r"\*\*([^*]+?[.:?])\*\*", text)
    if bold:
        rest = text[bold.end():].strip()
        return f"{bold.group(0)} {first_sentence(rest)}" if rest else bold.group(0)
    masked = re.sub(r"\$[^$]*\$|`[^`]*`|\([^()]*\)", lambda m: "x" * len(m.group(0)), text)
    for m in re.finditer(r"[.!?](?=[*_)\]\"'”’]*\s+[A-Z$*`(\[“\"]|[*_)\]\"'”’]*$)", masked):
        if not ABBREVIATIONS.search(masked[:m.end()]):
            end = m.end()
            while end < len(text) and text[end] in "*_)]\"'”’":
                end += 1
            return text[:end]
    return text


def ends_sentence(text: str) -> bool:
    """Whether a Markdown sentence is whole: it ends in ".", "!" or "?" (before closing marks and emphasis)."""
    return bool(re.search(r"[.!?][*_)\]\"'”’]*$", text.strip()))


def _lines_of(text: str, chars: int) -> int:
    return sum(max(1, -(-len(line) // chars)) for line in text.split("\n"))


def _plain_len(md: str) -> str:
    return re.sub(r"\$([^$]*)\$", lambda m: "x" * max(1, len(m.group(1)) // 3), re.sub(r"[*`]", "", md))


def markdown_blocks(text: str) -> tuple[tuple[int, str] | None, Block | None, list[Block], list[str]]:
    """(heading, lead, display blocks, notes) of one markdown part (already rewritten by :func:`myst_to_markdown`)
    by rule 2 of the module docstring."""
    lines = text.split("\n")
    tokens = _md().parse(text)
    lead: Block | None = None
    shown: list[Block] = []
    notes: list[str] = []
    seen_text = False
    open_sentence = False  # the lead stops mid-sentence or at a colon: what it introduces follows
    after_math = False  # the block just before is a displayed equation
    for n, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None or tok.nesting == -1 or tok.type == "heading_open":
            continue
        src = "\n".join(lines[tok.map[0]:tok.map[1]]).strip("\n")
        t = tok.type
        if t == "paragraph_open":
            if LABEL.match(src.strip()):
                continue
            if re.fullmatch(r"\s*!\[[^\]]*\]\([^)]*\)\s*", src):  # an image on its own
                shown.append(Block("md", src, 0, flexible=True))
                continue
            if not seen_text:
                first = first_sentence(src)
                lead = Block("md", first, TEXT_LINE * _lines_of(_plain_len(first), TEXT_CHARS) + 8)
                # a lead that is the whole paragraph and does not end its sentence ("SLP's example sentence is",
                # "The gate:", "... build one sequence") introduces what follows: that is shown too
                open_sentence = first == " ".join(src.split()) and not ends_sentence(first)
            elif open_sentence and after_math and re.match(r"[a-z]", src.lstrip()):
                # the sentence ran through a displayed equation and ends here ("where ...", "so ...")
                rest = first_sentence(src)
                shown.append(Block("md", rest, TEXT_LINE * _lines_of(_plain_len(rest), TEXT_CHARS) + 8))
                open_sentence = False
            else:
                open_sentence = False
            seen_text = True
            after_math = False
            notes.append(src)
        elif t in ("math_block", "math_block_label", "amsmath"):
            shown.append(Block("md", src, MATH_LINE * (tok.content.count("\\\\") + 1) + 10))
            after_math = True
        elif t in ("bullet_list_open", "ordered_list_open"):
            items, shortened = _list_items(tokens, n, lines)
            shown.append(Block("md", "\n".join(items),
                               sum(ITEM_LINE * _lines_of(_plain_len(i), ITEM_CHARS) + 4 for i in items) + 8))
            if shortened:
                notes.append(src)
            seen_text = True
        elif t == "table_open":
            rows = sum(1 for line in src.split("\n") if line.strip().startswith("|")) - 1
            shown.append(Block("md", src, 28 * max(rows, 1) + 10))
        elif t == "fence" and not tok.info.strip().startswith("{"):
            lines_of_code = tok.content.rstrip("\n").count("\n") + 1
            if lines_of_code <= CODE_LINES:
                shown.append(Block("md", src, MONO_LINE * lines_of_code + 16))
            else:
                notes.append(src)
        elif t == "html_block" and re.match(r"\s*<(figure|img)\b", src):
            shown.append(Block("md", src, 0, flexible=True))
        elif t == "hr":
            continue
        elif t == "blockquote_open" and open_sentence and not re.match(r">\s*\*\*", src):
            # the example an open lead introduces ("SLP's example sentence is" > the sentence): on the slide
            quoted = re.sub(r"^>\s?", "", src, flags=re.M)
            shown.append(Block("md", src, TEXT_LINE * _lines_of(_plain_len(quoted), TEXT_CHARS - 6) + 24))
            notes.append(src)
            open_sentence = after_math = False
        else:  # blockquotes (admonitions), <details> (dropdowns), other directives, raw HTML: the notes
            notes.append(src)
    return _opening_heading(text), lead, shown, notes


def _list_items(tokens, start: int, lines: list[str]) -> tuple[list[str], bool]:
    """The items of the top-level list opened at ``tokens[start]`` as Markdown lines, each longer than ITEM_MAX
    characters shortened to its first sentence; and whether any was shortened."""
    opening = tokens[start]
    ordered = opening.type == "ordered_list_open"
    items, shortened = [], False
    for t in tokens[start + 1:]:
        if t.level == opening.level and t.nesting == -1:
            break
        if t.type == "list_item_open" and t.level == opening.level + 1:
            body = "\n".join(lines[t.map[0]:t.map[1]]).strip()
            body = " ".join(re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", body).split())
            short = first_sentence(body) if len(body) > ITEM_MAX else body
            shortened = shortened or short != body
            items.append(f"{len(items) + 1}. {short}" if ordered else f"- {short}")
    return items, shortened


# ---- citations and MyST -----------------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def bibliography(path: Path = BIB) -> dict[str, tuple[str, str]]:
    """{key: (authors as the book cites them, year)} from a BibTeX file: "Elman", "Jurafsky and Martin",
    "Vaswani et al." (sphinxcontrib-bibtex's author_year style)."""
    from pybtex.database import parse_file
    from pybtex.richtext import Text

    out = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        last = [str(Text.from_latex(" ".join(p.prelast_names + p.last_names))) for p in people]
        names = (last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2
                 else f"{last[0]} et al." if last else str(Text.from_latex(entry.fields.get("title", key))))
        out[key] = (names, entry.fields.get("year", "n.d."))
    return out


def cite(keys: str, role: str = "p", bib: Path = BIB) -> str:
    """A {cite} role as the book renders it: "[Vaswani et al., 2017]"; {cite:t}: "Vaswani et al. [2017]"."""
    refs = bibliography(bib)
    found = []
    for key in (k.strip() for k in keys.split(",") if k.strip()):
        if key not in refs:
            raise ValueError(f"{{cite}}`{key}`: {bib.relative_to(ROOT) if bib.is_relative_to(ROOT) else bib} has no "
                             f"entry {key!r}; add it there (the book and the slides cite from that file)")
        found.append(refs[key])
    if role == "t":
        return ", ".join(f"{names} [{year}]" for names, year in found)
    return "[" + ", ".join(f"{names}, {year}" for names, year in found) + "]"


def _pyobject_source(path: Path, name: str) -> str | None:
    """The source of ``Class.method`` / ``function`` in ``path`` (what {literalinclude}'s :pyobject: shows)."""
    try:
        text = path.read_text(encoding="utf-8")
        body: list = ast.parse(text).body
    except (OSError, SyntaxError):
        return None
    node = None
    for part in name.split("."):
        node = next((n for n in body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == part), None)
        if node is None:
            return None
        body = node.body
    lines = text.split("\n")
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[start - 1:node.end_lineno])


DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<arg>[^\n]*)\n"
                       r"(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)


def myst_to_markdown(text: str, nb_dir: Path, figures: dict[Path, str]) -> str:
    """Rewrite the MyST that plain Markdown does not know into Markdown/HTML. ``figures`` collects
    {image file: name under OUTDIR/figures/} for the caller to copy."""

    def directive(m: re.Match) -> str:
        name, arg, body = m.group("name"), m.group("arg").strip(), m.group("body")
        opts = dict(re.findall(r"^:([\w-]+):[ \t]*(.*)$", body, re.M))
        content = re.sub(r"^:[\w-]+:.*\n?", "", body, flags=re.M).strip()
        if name == "literalinclude":
            code = _pyobject_source(nb_dir / arg, opts["pyobject"]) if "pyobject" in opts else None
            if code is None and (nb_dir / arg).is_file() and "pyobject" not in opts:
                code = (nb_dir / arg).read_text(encoding="utf-8")
            where = arg.replace("../src/", "")
            what = f"`{opts['pyobject']}` in " if "pyobject" in opts else ""
            return (f"{what}`{where}`:\n\n```python\n{code}\n```" if code is not None else f"(see {what}`{where}`)")
        if name in ("figure", "image"):
            src = (nb_dir / arg).resolve()
            figures.setdefault(src, src.name)
            alt = html.escape(opts.get("alt", ""), quote=True)
            cap = f"\n<figcaption>\n\n{content}\n\n</figcaption>" if content and name == "figure" else ""
            return f'<figure>\n<img src="figures/{figures[src]}" alt="{alt}">{cap}\n</figure>'
        if name == "dropdown":
            return f"<details><summary>{html.escape(arg)}</summary>\n\n{content}\n\n</details>"
        if name == "only":  # the slides are HTML: an `{only} html` block shows, an `{only} latex` one does not
            return content if "html" in arg else ""
        if name == "math":
            return f"$$\n{content}\n$$"
        title = arg or name.capitalize()  # note, tip, warning, admonition, margin, ...
        return "\n".join("> " + line for line in f"**{title}.** {content}".split("\n"))

    text = DIRECTIVE.sub(directive, text)
    text = re.sub(r"\{cite(?::(\w+))?\}`([^`]*)`", lambda m: cite(m.group(2), m.group(1) or "p"), text)
    text = re.sub(r"\{(?:doc|ref|numref)\}`([^`<]*?)\s*<[^`]*>`", r"\1", text)
    text = re.sub(r"\{(?:doc|ref|numref|term)\}`([^`]*)`", r"*\1*", text)
    text = re.sub(r"\{(?:eq)\}`([^`]*)`", r"(\1)", text)
    text = re.sub(r"^\(\S+\)=\s*$", "", text, flags=re.M)

    def link(m: re.Match) -> str:  # links to other chapters go to their decks, links to book pages to the book
        target = m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        path, _, frag = target.partition("#")
        if path.endswith(".ipynb") and "/" not in path:
            path = path[:-6] + ".slides.html"
        elif path.endswith((".ipynb", ".md")):
            path = "../notebooks/" + path.rsplit(".", 1)[0] + ".html"  # relative to the book's notebooks/ pages
        return f"[{m.group(1)}]({path}{'#' + frag if frag else ''})"

    return re.sub(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)", link, text)


# ---- the rule ---------------------------------------------------------------------------------------------------
def _shows_something(part: str) -> bool:
    """Whether a markdown part has a heading or display blocks (rules 2 and 3): it starts a slide."""
    head, _, shown, _ = markdown_blocks(myst_to_markdown(part, NOTEBOOKS, {}))
    return head is not None or bool(shown)


def cell_role(k: int, cell: dict, first_section: int, ex: tuple[int, int] | None) -> str:
    """A cell's ``slide_type`` by rules 1-4: "slide", "notes", "skip" (or an author's ``slideshow-`` tag)."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    text = _source(cell)
    override = [t[len("slideshow-"):] for t in tags if t.startswith("slideshow-")]
    if override:
        if override[0] not in SLIDE_TYPES:
            raise ValueError(f"cell {k}: tag 'slideshow-{override[0]}' names no slide type of the flat decks; use "
                             + ", ".join(f"slideshow-{t}" for t in SLIDE_TYPES))
        return override[0]
    if ex is not None and (k > ex[0] or (k == ex[0] and not any(line.strip() for line in
                                                                   text.split("\n")[:ex[1]]))):
        return "skip"
    if tags & HIDDEN_TAGS or cell["cell_type"] not in ("markdown", "code") or not text.strip():
        return "skip"
    if cell["cell_type"] == "code":
        if k < first_section or pdf.is_check_cell(cell):
            return "skip"
        if _shown_outputs(cell) or not tags & NO_INPUT and text.rstrip().count("\n") < CODE_LINES:
            return "slide"
        return "skip" if tags & NO_INPUT else "notes"  # long code and nothing printed: the code goes to the notes
    if pdf.HTML_ONLY in tags:
        return "notes"
    if ex is not None and k == ex[0]:
        text = "\n".join(text.split("\n")[:ex[1]])
    return "slide" if any(_shows_something(part) for part in parts(text)) else "notes"


def slide_types(cells: list[dict], metadata: dict | None = None) -> list[str]:
    """The ``slideshow.slide_type`` of every cell by the rule in this module's docstring: the roles :func:`plan`
    gives the cells, so the live slideshow and the static deck start their slides at the same cells.
    ``metadata``: the notebook's (its saved widget state tells a progress bar from a figure)."""
    return plan({"cells": cells, "metadata": metadata or {}})[1]


def _base_roles(cells: list[dict]) -> list[str]:
    ex = exercises_start(cells)
    first_section = next((k for k, c in enumerate(cells) if c["cell_type"] == "markdown"
                          and any(level == 2 for _, level in headings(_source(c)))), len(cells))
    return [cell_role(k, c, first_section, ex) for k, c in enumerate(cells)]


def _shown_outputs(cell: dict) -> list[dict]:
    """The outputs a slide may show: not stderr, not empty, none where the book hides them."""
    if set(cell.get("metadata", {}).get("tags", [])) & NO_OUTPUT:
        return []
    return [o for o in cell.get("outputs", []) if o.get("output_type") in ("display_data", "execute_result")
            and o.get("data") or o.get("output_type") == "stream" and o.get("name") != "stderr"
            and _text(o.get("text")).strip()]


def _progress_bar(model: dict, models: dict) -> bool:
    """Whether a saved widget model is a progress bar (tqdm's HBox around a FloatProgress): no slide shows it."""
    kids = (model.get("state", {}).get("children") or []) if model.get("model_name") == "HBoxModel" else []
    return any(models.get(str(k).removeprefix("IPY_MODEL_"), {}).get("model_name") == "FloatProgressModel"
               for k in kids)


def _output_block(out: dict, models: dict) -> Block | None:
    data = out.get("data", {})
    if out.get("output_type") == "stream":
        text = _text(out.get("text"))
        if not text.strip():
            return None
        return Block("output", out, MONO_LINE * _lines_of(text.rstrip("\n"), MONO_CHARS) + 14)
    if VIEW in data:
        model = models.get(data[VIEW].get("model_id"))  # a view with no saved state draws nothing
        return Block("output", out, 0, flexible=True, alone=True) if model and not _progress_bar(model, models) \
            else None
    if any(k in data for k in ("image/png", "image/jpeg", "image/svg+xml")):
        return Block("output", out, 0, flexible=True)
    if "text/html" in data:
        rows = len(re.findall(r"<tr\b", _text(data["text/html"])))
        text = re.sub(r"<[^>]+>", "", _text(data["text/html"]))
        return Block("output", out, 26 * rows + 16 if rows else TEXT_LINE * _lines_of(text.strip(), TEXT_CHARS))
    if "text/markdown" in data:
        return Block("output", out, TEXT_LINE * _lines_of(_text(data["text/markdown"]), TEXT_CHARS))
    if "text/latex" in data:
        return Block("output", out, MATH_LINE)
    if "text/plain" in data:
        text = _text(data["text/plain"])
        return Block("output", out, MONO_LINE * _lines_of(text, MONO_CHARS) + 14) if text.strip() else None
    return None


def _split_block(block: Block, budget: float) -> list[Block]:
    """A block taller than ``budget`` cut into blocks that fit: printed text into whole lines, a Markdown table into
    rows (its head repeated), a list into items; any other block stays whole (the browser scales it)."""
    if block.kind == "output" and (block.body.get("output_type") == "stream" or set(block.body.get("data", {}))
                                   == {"text/plain"}):
        out = block.body
        lines = _text(out.get("text") if out.get("output_type") == "stream" else out["data"]["text/plain"])
        units = [(line, MONO_LINE * max(1, -(-len(line) // MONO_CHARS))) for line in lines.rstrip("\n").split("\n")]
        make = lambda chunk: Block("output", {"output_type": "stream", "name": "stdout",  # noqa: E731
                                              "text": "\n".join(chunk) + "\n"}, 0)
        pad, head = 14, []
    elif block.kind == "md" and re.match(r"\s*\|", block.body):
        rows = block.body.strip().split("\n")
        head, units = rows[:2], [(row, 28) for row in rows[2:]]
        make = lambda chunk: Block("md", "\n".join(head + chunk), 0)  # noqa: E731
        pad = 28 + 10
    elif block.kind == "md" and re.match(r"\s*(?:-|\d+\.) ", block.body):
        units = [(item, ITEM_LINE * _lines_of(_plain_len(item), ITEM_CHARS) + 4) for item in block.body.split("\n")]
        make = lambda chunk: Block("md", "\n".join(chunk), 0)  # noqa: E731
        pad, head = 8, []
    else:
        return [block]
    out, chunk, used = [], [], pad
    for unit, h in units:
        if chunk and used + h > budget:
            out.append((chunk, used))
            chunk, used = [], pad
        chunk.append(unit)
        used += h
    out.append((chunk, used))
    blocks = []
    for chunk, used in out:
        b = make(chunk)
        b.height = used
        blocks.append(b)
    return blocks


def _budget(title: str, level: int) -> float:
    return BODY_H - (TITLE_LINE if len(title) > TITLE_CHARS else 0) - (TITLE_SLIDE if level == 1 else 0)


def plan(nb: dict, nb_dir: Path = NOTEBOOKS, figures: dict[Path, str] | None = None) -> tuple[list[Slide], list[str]]:
    """The deck of a notebook by the rule in this module's docstring (before :func:`paginate` splits slides that do
    not fit), and each cell's slide type."""
    cells = nb["cells"]
    models = nb.get("metadata", {}).get("widgets", {}).get(STATE, {}).get("state", {})
    figures = {} if figures is None else figures
    ex = exercises_start(cells)
    roles = _base_roles(cells)
    slides: list[Slide] = []
    title, level = "", 2
    from_markdown = False  # whether the last slide is a markdown cell's, which a short code cell may join
    for k, (cell, role) in enumerate(zip(cells, roles)):
        if role == "skip":
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell["cell_type"] == "markdown":
            text = _source(cell)
            if ex is not None and k == ex[0]:
                text = "\n".join(text.split("\n")[:ex[1]])
            for part in parts(text):
                part = myst_to_markdown(part, nb_dir, figures)
                head, lead, shown, notes = markdown_blocks(part)
                if role == "notes" or (head is None and not shown):
                    if slides:
                        slides[-1].notes.append(part)
                    continue
                if head is not None:
                    level, title = head
                blocks = ([lead] if lead else []) + shown
                if role == "-" and slides and head is None:
                    slides[-1].blocks += blocks
                    slides[-1].notes += notes
                    continue
                slides.append(Slide(title, level, k, blocks, notes))
                from_markdown = True
            continue
        # a code cell
        code = _source(cell).rstrip()
        blocks, notes = [], []
        if not tags & NO_INPUT:
            n = code.count("\n") + 1
            if n <= CODE_LINES:
                blocks.append(Block("code", code, MONO_LINE * n + 16))
            else:
                notes.append(f"```python\n{code}\n```")
        for out in _shown_outputs(cell):
            b = _output_block(out, models)
            if b is not None:
                blocks.append(b)
        sentence = pdf.print_sentence(cell)
        if sentence:
            notes.append(sentence)
        if role == "slide" and not blocks:  # e.g. long code whose only output is a progress bar
            roles[k] = role = "notes"
        if role == "slide" and slides and from_markdown and _fits_with(slides[-1], blocks) and not any(
                t.startswith("slideshow-") for t in tags):
            roles[k] = role = "-"  # rule 4: a short cell joins the slide of the text that introduces it
        if role in ("-", "notes"):
            if slides:
                slides[-1].blocks += blocks if role == "-" else []
                slides[-1].notes += notes
        else:
            slides.append(Slide(title, level if level > 1 else 2, k, blocks, notes))
        from_markdown = False
    return slides, roles


def _fits_with(slide: Slide, blocks: list[Block]) -> bool:
    """Whether a code cell's blocks fit on the slide before them: no widget, at most one figure, within the budget."""
    together = slide.blocks + blocks
    if not blocks or any(b.alone for b in together) or sum(b.flexible for b in together) > 1:
        return False
    return sum(b.height for b in together) + (FLEX_MIN if any(b.flexible for b in together) else 0) <= _budget(
        slide.title, slide.level)


def paginate(slides: list[Slide]) -> list[Slide]:
    """Rule 5: each slide cut where its blocks end into slides that fit BODY_H (a widget alone, a figure given at
    least FLEX_MIN), the title repeated; a printed text longer than a slide cut into slides of whole lines."""
    out = []
    for s in slides:
        budget = _budget(s.title, s.level)
        pages: list[list[Block]] = [[]]
        for block in s.blocks:
            for b in (_split_block(block, budget) if block.height > budget else [block]):
                page = pages[-1]
                used = sum(x.height for x in page)
                small_code = len(page) == 1 and page[0].kind == "code" and page[0].height <= MONO_LINE * 4 + 16
                if page and (b.alone and not small_code or any(x.alone for x in page)
                             or (b.flexible and budget - used < FLEX_MIN)
                             or (not b.flexible and used + b.height > budget - (FLEX_MIN if any(x.flexible for x in page)
                                                                                else 0))):
                    pages.append([])
                pages[-1].append(b)
        for n, page in enumerate(pages):
            if n == 0:
                out.append(Slide(s.title, s.level, s.cell, page, s.notes, s.continued))
            elif page:
                out.append(Slide(s.title, s.level, s.cell, page, [], True))
    return out


# ---- notebook metadata (live mode) ------------------------------------------------------------------------------
# Notebook-level settings for jupyterlab-rise (it reads `metadata.rise`): its default theme ("simple") fetches fonts
# from Google; "white" uses reveal.js's bundled fonts, so the live slideshow requests nothing off the machine.
RISE = {"theme": "white", "transition": "none", "scroll": True, "center": False}


def rise_stale(nb: dict) -> bool:
    """Whether the notebook's ``metadata.rise`` lacks one of :data:`RISE`'s settings (other keys are the author's)."""
    have = nb.get("metadata", {}).get("rise", {})
    return any(have.get(k) != v for k, v in RISE.items())


def stale_cells(nb: dict) -> list[int]:
    """Indices of the cells whose stored slide type differs from :func:`slide_types` (missing counts as stale)."""
    want = slide_types(nb["cells"], nb.get("metadata"))
    return [k for k, (cell, t) in enumerate(zip(nb["cells"], want))
            if cell.get("metadata", {}).get("slideshow", {}).get("slide_type") != t]


def set_metadata(nb: dict) -> int:
    """Write every cell's ``metadata.slideshow.slide_type`` and the notebook's ``metadata.rise`` settings; returns how
    many cells changed (plus one if the notebook's settings did)."""
    want = slide_types(nb["cells"], nb.get("metadata"))
    changed = stale_cells(nb)
    for k in changed:
        nb["cells"][k].setdefault("metadata", {}).setdefault("slideshow", {})["slide_type"] = want[k]
    if rise_stale(nb):
        nb.setdefault("metadata", {}).setdefault("rise", {}).update(RISE)
        return len(changed) + 1
    return len(changed)


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, nb: dict) -> None:
    """As nbformat writes a notebook (keys sorted), so a later save from Jupyter changes nothing."""
    path.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# ---- the static deck --------------------------------------------------------------------------------------------
def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def render_output(out: dict) -> str:
    data = out.get("data", {})
    if out.get("output_type") == "stream":
        return f'<pre class="sv-out">{html.escape(_strip_ansi(_text(out.get("text"))).rstrip())}</pre>'
    if VIEW in data:
        view = json.dumps(data[VIEW]).replace("</", "<\\/")
        return (f'<div class="sv-widget" role="region" aria-label="interactive figure">'
                f'<script type="{VIEW}">{view}</script></div>')
    if "image/svg+xml" in data:
        return f'<div class="sv-figure">{_text(data["image/svg+xml"])}</div>'
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            alt = html.escape(_text(data.get("text/plain", "")).strip("<>"), quote=True)
            src = f"data:{mime};base64,{_text(data[mime]).strip()}"
            return f'<div class="sv-figure"><img src="{src}" alt="{alt}"></div>'
    if "text/html" in data:
        return f'<div class="sv-html">{_text(data["text/html"])}</div>'
    if "text/markdown" in data:
        return f'<div class="sv-md">{render_markdown(_text(data["text/markdown"]))}</div>'
    if "text/latex" in data:
        return f'<div class="math">{html.escape(_text(data["text/latex"]))}</div>'
    return f'<pre class="sv-out">{html.escape(_strip_ansi(_text(data.get("text/plain", ""))).rstrip())}</pre>'


def _highlight(code: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(code, PythonLexer(), HtmlFormatter(nowrap=True))


def render_slide(s: Slide, cell_id: str) -> str:
    tag = "h1" if s.level == 1 else "h2" if s.level == 2 else "h3"
    body = []
    for b in s.blocks:
        if b.kind == "md":
            body.append(f'<div class="sv-md{" sv-flex" if b.flexible else ""}">{render_markdown(b.body)}</div>')
        elif b.kind == "code":
            body.append(f'<pre class="sv-code"><code>{_highlight(b.body)}</code></pre>')
        else:
            body.append(render_output(b.body))
    notes = "\n".join(render_markdown(n) for n in s.notes)
    classes = ["sv-slide", f"sv-level-{s.level}"] + (["sv-continued"] if s.continued else []) + (
        ["sv-has-widget"] if any(b.alone for b in s.blocks) else [])
    return (f'<section class="{" ".join(classes)}" data-cell="{s.cell}" data-cell-id="{html.escape(cell_id)}">\n'
            f'<{tag} class="sv-title">{_md().renderInline(s.title)}</{tag}>\n'
            f'<div class="sv-body"><div class="sv-content">\n' + "\n".join(body) + "\n</div></div>\n"
            + (f'<aside class="notes">\n{notes}\n</aside>\n' if notes else "") + "</section>")


CSS = """
.reveal { font-family: "Source Sans Pro", Helvetica, sans-serif; font-size: 19px; color: #222; }
.reveal .slides { text-align: left; }
.reveal .slides section.sv-slide { height: 100%; box-sizing: border-box; padding: 12px 20px 22px; display: flex;
  flex-direction: column; overflow: hidden; }
.reveal .sv-title { margin: 0 0 4px; color: #1a1a1a; text-transform: none; line-height: 1.15; font-weight: 600;
  letter-spacing: 0; flex: none; }
.reveal h1.sv-title { font-size: 34px; margin-top: 40px; }
.reveal h2.sv-title { font-size: 24px; }
.reveal h3.sv-title { font-size: 22px; }
.reveal .sv-body { flex: 1 1 0; min-height: 0; position: relative; overflow: hidden; padding-top: 4px; }
.reveal .sv-content { display: flex; flex-direction: column; gap: 6px; height: 100%; }
.reveal .sv-content > * { flex: none; margin: 0; }
.reveal .sv-content > .sv-figure, .reveal .sv-content > .sv-flex { flex: 1 1 0; min-height: 120px; display: flex;
  justify-content: center; }
.reveal .sv-figure img, .reveal .sv-flex img { max-width: 100%; max-height: 100%; object-fit: contain; margin: 0; }
.reveal .sv-flex figure { margin: 0; display: flex; flex-direction: column; align-items: center; max-height: 100%; }
.reveal .sv-flex figure img { min-height: 0; flex: 1 1 auto; }
.reveal .sv-flex figcaption { font-size: 14px; }
.reveal p { margin: 0 0 6px; line-height: 1.35; }
.reveal ul, .reveal ol { margin: 0 0 0 1.2em; display: block; font-size: 18px; line-height: 1.35; }
.reveal li { margin: 2px 0; }
.reveal table { font-size: 15px; border-collapse: collapse; margin: 0; }
.reveal table th, .reveal table td { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; }
.reveal pre { width: 100%; box-shadow: none; margin: 0; font-size: 12.5px; line-height: 1.35; }
.reveal pre.sv-code, .reveal pre.sv-out, .reveal .sv-md pre { font-family: "DejaVu Sans Mono", Menlo, Consolas,
  monospace; white-space: pre; overflow: hidden; padding: 6px 8px; border-radius: 3px; box-sizing: border-box; }
.reveal pre.sv-code, .reveal .sv-md pre { background: #f5f6f8; }
.reveal pre.sv-out { background: #fff; border-left: 3px solid #d0d4da; }
.reveal pre code { font-size: inherit; line-height: inherit; padding: 0; max-height: none; background: none;
  overflow: visible; white-space: inherit; display: inline; }
.reveal code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.9em; }
.reveal .math { text-align: center; }
.reveal blockquote { width: auto; margin: 0; font-size: 17px; }
.reveal .sv-widget { flex: none; overflow: visible; }
.reveal .sv-widget .seqviz { margin: 0; }
/* widgets in their slide view (rule 5): the LSTM's heatmap a pixel a unit, the positional panels smaller (the three
   side by side), the attention heatmap's cells at most 20 px (its labels stay 13 px), the attention steps' rows the 6
   keys the query weights most and a row for the rest (every key in its screen-reader table), the beam tree's table
   (the beam at the step shown, best first) for screen readers only: the tree, its read-out line and the speaker say
   it; no "save the figure" bar (the book's pages have it) */
.reveal { --sv-lstm-units-px: 128; --sv-pos-side: 150; --sv-pos-plot-w: 300; --sv-pos-plot-h: 150;
  --sv-slide-cell: 20px; --sv-steps-keys: 6; }
.reveal .sv-beam .sv-beam-table { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  clip-path: inset(50%); white-space: nowrap; }
.reveal .seqviz .sv-save { display: none; }
.reveal .sv-html { overflow: hidden; }
.reveal .sv-back { position: fixed; left: 1em; bottom: 0.6em; font-size: 14px; z-index: 40; }
.reveal .slide-number { font-size: 13px; }
.reveal .controls { color: #555; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · slides</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="reveal.js/dist/reset.css">
<link rel="stylesheet" href="reveal.js/dist/reveal.css">
<link rel="stylesheet" href="reveal.js/dist/theme/white.css">
<style>{css}</style>
<script src="{vendor}/require.js"></script>
<script src="{vendor}/seqviz-offline.js"></script>
<script>
window.MathJax = {{ tex: {{ inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]], processEscapes: false,
                           tags: "none" }},
                   options: {{ ignoreHtmlClass: "sv-out|sv-code|notes", processHtmlClass: "math" }} }};
</script>
<script defer src="{vendor}/mathjax/tex-mml-chtml.js"></script>
</head>
<body>
<div class="reveal"><div class="slides">
{slides}
</div></div>
<a class="sv-back" href="{chapter_page}">the chapter in the book</a>
{state}
<script>
document.addEventListener("DOMContentLoaded", function () {{
  if (!document.querySelector('script[type="application/vnd.jupyter.widget-view+json"]')) return;
  var s = document.createElement("script");
  s.src = "{vendor}/html-manager/embed-amd.js";
  document.body.appendChild(s);
}});
</script>
<script>
// Fit a slide's content to its box (rule 5 of scripts/slides.py): a wide printed line first gets a smaller font,
// then wraps; content still taller or wider than the box is scaled down, no further than MIN_SCALE.
var MIN_SCALE = {min_scale};
function reach(content) {{  // the box around what the content draws on screen (a widget as its box)
  var r = {{ top: Infinity, left: Infinity, bottom: -Infinity, right: -Infinity }};
  content.querySelectorAll(":scope > *, :scope *:not(.seqviz *):not(mjx-assistive-mml *)").forEach(function (el) {{
    if (el.matches("mjx-assistive-mml")) return;
    var b = el.getBoundingClientRect();
    if (b.width === 0 && b.height === 0) return;
    r.top = Math.min(r.top, b.top); r.left = Math.min(r.left, b.left);
    r.bottom = Math.max(r.bottom, b.bottom); r.right = Math.max(r.right, b.right);
  }});
  return r;
}}
var WIDGET_TEXT = {widget_text};
function smallestText(content) {{  // the smallest font size of the widgets' text shown (their canvases' own claim too)
  var least = Infinity;
  content.querySelectorAll(".seqviz[data-min-font]").forEach(function (w) {{
    least = Math.min(least, parseFloat(w.getAttribute("data-min-font")) || Infinity);
  }});
  var walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
  for (var n = walker.nextNode(); n; n = walker.nextNode()) {{
    var el = n.parentElement, shown = !!el && !!n.textContent.trim() && !!el.closest(".seqviz");
    if (shown && el.checkVisibility) {{
      shown = el.checkVisibility({{ contentVisibilityAuto: true, visibilityProperty: true }});
    }}
    for (var a = el; shown && a && a !== content; a = a.parentElement) {{
      var s = getComputedStyle(a);
      if (s.clip !== "auto" || s.clipPath !== "none") shown = false;  // visually hidden, for screen readers
    }}
    if (shown && el.getClientRects().length) least = Math.min(least, parseFloat(getComputedStyle(el).fontSize));
  }}
  return least === Infinity ? WIDGET_TEXT : least;
}}
function fit(slide) {{
  var body = slide && slide.querySelector(".sv-body"), content = body && body.firstElementChild;
  if (!content || !content.children.length) return;
  content.style.zoom = "";
  slide.querySelectorAll("pre").forEach(function (pre) {{
    pre.style.fontSize = ""; pre.style.whiteSpace = ""; pre.style.overflowWrap = "";
    var size = parseFloat(getComputedStyle(pre).fontSize), least = size * 0.8;
    while (pre.scrollWidth > pre.clientWidth + 1 && size > least) {{ size -= 0.5; pre.style.fontSize = size + "px"; }}
    if (pre.scrollWidth > pre.clientWidth + 1) {{
      pre.style.whiteSpace = "pre-wrap"; pre.style.overflowWrap = "anywhere";
    }}
  }});
  // a widget is scaled no further than keeps its smallest text at WIDGET_TEXT logical px (16 px when projected)
  var widget = slide.classList.contains("sv-has-widget");
  var least = widget ? Math.min(1, WIDGET_TEXT / smallestText(content)) : MIN_SCALE;
  var scale = 1;
  for (var i = 0; i < 5; i++) {{
    var b = body.getBoundingClientRect(), r = reach(content);
    var need = Math.min(1, b.height / Math.max(r.bottom - b.top, 1), b.width / Math.max(r.right - b.left, 1));
    if (need >= 0.995) break;
    scale = Math.max(least, scale * need);
    content.style.zoom = scale;
    if (scale === least) break;
  }}
  slide.setAttribute("data-fit", scale.toFixed(3));
}}
require({{ waitSeconds: 30 }}, ["reveal.js/dist/reveal.js", "reveal.js/plugin/notes/notes.js"],
  function (Reveal, RevealNotes) {{
    Reveal.initialize({{ controls: true, progress: true, history: true, hash: true, center: false,
                        transition: "none", slideNumber: "c/t", width: {width}, height: {height}, margin: {margin},
                        navigationMode: "linear", display: "flex", plugins: [RevealNotes] }});
    window.Reveal = Reveal;  // loaded as an AMD module, so not a global by itself (tests and the console use it)
    function refit() {{ fit(Reveal.getCurrentSlide()); }}
    // widgets size themselves from their container, which is hidden until its slide shows
    Reveal.on("ready", refit);
    Reveal.on("slidechanged", function () {{ window.dispatchEvent(new Event("resize")); refit(); }});
    if (window.ResizeObserver) {{
      var seen = new ResizeObserver(function () {{ window.requestAnimationFrame(refit); }});
      document.querySelectorAll(".reveal .sv-content").forEach(function (c) {{
        Array.prototype.forEach.call(c.children, function (el) {{ seen.observe(el); }});
      }});
    }}
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(refit);
  }});
</script>
</body>
</html>
"""


def _copy_reveal(out: Path) -> Path:
    """Copy the parts of node_modules/reveal.js the pages load into OUTDIR/reveal.js/ (about 1 MB)."""
    meta = NODE_REVEAL / "package.json"
    if not meta.is_file():
        raise SystemExit("node_modules/reveal.js is missing: run `npm ci` (or `make setup`); package.json pins it")
    dst = out / "reveal.js"
    if dst.exists():
        shutil.rmtree(dst)
    for part in ["dist/reveal.js", "dist/reveal.css", "dist/reset.css", "dist/theme/white.css",
                 "dist/theme/fonts/source-sans-pro", "plugin/notes/notes.js", "LICENSE"]:
        src, to = NODE_REVEAL / part, dst / part
        to.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, to)
    return dst


def _ensure_vendor(out: Path) -> str:
    """The book's vendored widget/MathJax JS must sit at OUTDIR/../vendor (where the built book serves it): copy
    _vendor/vendor there if the book is not built yet. Returns the relative URL the pages use."""
    target = out.parent / "vendor"
    if not (target / "html-manager" / "embed-amd.js").is_file():
        if not (VENDOR / "html-manager" / "embed-amd.js").is_file():
            raise SystemExit(f"{VENDOR} is missing: run `make vendor` (scripts/vendor_js.py) first")
        shutil.copytree(VENDOR, target, dirs_exist_ok=True)
    mode = json.loads((target / "versions.json").read_text()).get("mode")
    if mode != "offline":
        print(f"WARNING: {target} holds CDN forwarding files (no npm): the slides will need a network",
              file=sys.stderr)
    return "../vendor"


def slide_state(state: dict | None) -> dict | None:
    """A copy of a chapter's saved widget state with each widget in its slide view (:data:`SLIDE_VIEW`)."""
    if not state:
        return state
    out = copy.deepcopy(state)
    for model in out.get("state", {}).values():
        traits = model.get("state", {})
        for name, value in SLIDE_VIEW.get(str(traits.get("_anywidget_id", "")), {}).items():
            if name not in traits:
                raise ValueError(f"SLIDE_VIEW sets {name!r} of {traits['_anywidget_id']}, which has no such trait "
                                 f"in the saved state: fix SLIDE_VIEW in scripts/slides.py")
            traits[name] = value(traits[name])
    return out


def deck(nb: dict, path: Path, vendor: str, figures: dict[Path, str]) -> tuple[str, list[Slide]]:
    """The HTML page of one chapter's deck, and its slides."""
    from pygments.formatters import HtmlFormatter

    slides = paginate(plan(nb, path.parent, figures)[0])
    ids = [c.get("id", str(k)) for k, c in enumerate(nb["cells"])]
    state = slide_state(nb.get("metadata", {}).get("widgets", {}).get(STATE))
    state_tag = (f'<script type="{STATE}">{json.dumps(state).replace("</", "<" + chr(92) + "/")}</script>'
                 if state else "")
    title = next((s.title for s in slides if s.level == 1), path.stem)
    page = PAGE.format(title=html.escape(re.sub(r"[*`$]", "", title)), vendor=vendor,
                       css=CSS + HtmlFormatter().get_style_defs(".sv-code"),
                       slides="\n".join(render_slide(s, ids[s.cell]) for s in slides), state=state_tag,
                       chapter_page=f"../notebooks/{path.stem}.html", width=WIDTH, height=HEIGHT,
                       min_scale=MIN_SCALE, widget_text=f"{WIDGET_TEXT_PX / REVEAL_SCALE:.3f}", margin=MARGIN)
    return page, slides


def build(out: Path, notebooks: list[Path] | None = None) -> list[Path]:
    """Write every chapter's deck as OUTDIR/NN_name.slides.html (reveal.js, stored outputs, no execution) and an
    index."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    _copy_reveal(out)
    vendor = _ensure_vendor(out)
    figures: dict[Path, str] = {}
    written = []
    for path in notebooks or chapter_notebooks():
        page, _ = deck(_read(path), path, vendor, figures)
        target = out / f"{path.stem}.slides.html"
        target.write_text(page, encoding="utf-8")
        written.append(target)
    if figures:
        (out / "figures").mkdir(exist_ok=True)
        for src, name in figures.items():
            shutil.copy2(src, out / "figures" / name)
    items = "\n".join(f'<li><a href="{p.name}">{html.escape(p.name.split(".")[0])}</a></li>' for p in written)
    (out / "index.html").write_text(f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                                    f"<link rel=\"icon\" href=\"data:,\"><title>seqviz slides</title></head>\n"
                                    f"<body><h1>seqviz: slides</h1>\n<ul>\n{items}\n</ul></body></html>\n",
                                    encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--set", action="store_true", help="write slideshow metadata into the notebooks")
    mode.add_argument("--check", action="store_true", help="exit 1 if a notebook's slideshow metadata is missing or "
                      "stale")
    mode.add_argument("--build", type=Path, metavar="OUTDIR", help="export every chapter's slides into OUTDIR")
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: every notebooks/NN_*.ipynb")
    args = ap.parse_args(argv)
    paths = args.notebooks or chapter_notebooks()
    if args.build:
        t0 = time.perf_counter()
        written = build(args.build, paths)
        size = sum(p.stat().st_size for p in written)
        print(f"wrote {len(written)} slideshows to {args.build.resolve()}/ ({size / 1e6:.1f} MB) in "
              f"{time.perf_counter() - t0:.1f} s")
        return 0
    bad = 0
    for path in paths:
        nb = _read(path)
        if args.set:
            n = set_metadata(nb)
            if n:
                _write(path, nb)
            print(f"{path}: {n} cells changed")
        else:
            stale = stale_cells(nb)
            if stale or rise_stale(nb):
                bad += 1
                where = f"{len(stale)} cells (first: cell {stale[0]})" if stale else "the notebook's `rise` settings"
                print(f"{path}: slideshow metadata missing or stale in {where}: "
                      f"run `python scripts/slides.py --set {path}`")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
