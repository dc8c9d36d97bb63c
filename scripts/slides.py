"""Lecture mode: every chapter as a slideshow, from the same notebook (issue 24, item 3).

Three jobs:

    python scripts/slides.py --set [NB ...]     # write `slideshow` cell metadata (default: every notebooks/NN_*.ipynb)
    python scripts/slides.py --check [NB ...]   # exit 1 and list the notebooks whose metadata is missing or stale
    python scripts/slides.py --build OUTDIR     # static reveal.js slides of every chapter, from the stored outputs

The metadata is what JupyterLab's slideshow extension (jupyterlab-rise, `make lab`, then the "Render as slideshow"
button or Alt+R) and `jupyter nbconvert --to slides` read; `--set` also writes the notebook's `rise` settings (RISE:
a theme with bundled fonts, so the live slideshow stays offline). jupyterlab-rise 0.43.1 does not render ipywidgets 8
widgets (its slideshow app lacks a module the widget manager needs: jupyterlab-contrib/rise#119): present a widget
from the notebook view or the static slides. It is chosen by rules (`slide_types`), so a chapter that
gains cells only needs `--set` again; `--set` is idempotent and changes nothing but `metadata.slideshow`, so outputs
and nbval are untouched. The rules, in order of precedence:

1. a cell tagged ``slideshow-TYPE`` (``slideshow-skip``, ``slideshow-fragment``, ...) gets TYPE: the author's override;
2. everything from the ``## Exercises`` heading on (exercises, their solutions and answers) is ``skip``; a cell where
   that heading comes after other text keeps its rule (the static export cuts its text at the heading);
3. ``skip``: cells the book hides (tags ``remove-cell``, ``hide-cell``), the set-up code before the first section
   (install cell, ``%matplotlib``), and nbval's check cells (first line ``# checked`` or ``assert``);
4. the title cell and every markdown cell that opens with a ``## `` heading start a ``slide`` (one per section N.M,
   and the Summary); a markdown cell that opens with ``###`` or that has a ``##`` heading further down starts a
   ``subslide`` or a ``slide`` respectively; any other markdown cell (prose) starts a ``subslide``;
5. a code cell right after a short markdown cell (at most SHORT characters) is a ``fragment`` of its slide (its code
   and output appear on the next key press); after longer prose, or after another code cell, it starts a
   ``subslide`` so that no slide holds more than one block of output.

The static export splits markdown cells at their section headings first (in memory only), so every section starts
its own slide even where a notebook keeps the end of one section and the heading of the next in one cell. It needs
`npm ci` (reveal.js, pinned in package.json) and the book's vendored widget JS (`scripts/vendor_js.py`, run by `make
vendor`); the pages load both by relative paths (OUTDIR/reveal.js/ and OUTDIR/../vendor/) and request nothing off the
machine. MyST that nbconvert does not know ({cite}, {doc}, {literalinclude}, {dropdown}, {figure}, admonitions) is
rewritten to plain Markdown/HTML in the copy that is exported.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
NODE_REVEAL = ROOT / "node_modules" / "reveal.js"
VENDOR = ROOT / "_vendor" / "vendor"
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
SHORT = 600  # characters of markdown after which a following code cell gets a slide of its own
HIDDEN_TAGS = {"remove-cell", "hide-cell"}
HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
LABEL = re.compile(r"^\(\S+\)=\s*$")  # a MyST target line, `(sec-name)=`, that belongs to the heading after it
EXERCISES = re.compile(r"^##\s+Exercises\b")


def chapter_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _lines_outside_fences(text: str):
    """(index, line) of every line of ``text`` that is not inside a ``` or ~~~ code fence."""
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


def _opening_line(text: str) -> int | None:
    """Index of the first line that is not blank and not a MyST target `(label)=` (None for an empty text)."""
    for i, line in enumerate(text.split("\n")):
        if line.strip() and not LABEL.match(line):
            return i
    return None


def exercises_start(cells: list[dict]) -> tuple[int, bool] | None:
    """(index of the cell holding the ``## Exercises`` heading, whether the heading opens that cell), or None."""
    for k, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        text = _source(cell)
        lines = text.split("\n")
        for i, _ in headings(text):
            if EXERCISES.match(lines[i]):
                return k, i == _opening_line(text)
    return None


def slide_types(cells: list[dict]) -> list[str]:
    """The ``slideshow.slide_type`` of every cell by the rules in this module's docstring."""
    ex = exercises_start(cells)
    first_section = next((k for k, c in enumerate(cells) if c["cell_type"] == "markdown"
                          and any(level == 2 for _, level in headings(_source(c)))), len(cells))
    out: list[str] = []
    prev: dict | None = None  # the last cell that is shown
    for k, cell in enumerate(cells):
        tags = set(cell.get("metadata", {}).get("tags", []))
        text = _source(cell)
        override = [t.split("-", 1)[1] for t in tags if t.startswith("slideshow-")]
        if override:
            if override[0] not in SLIDE_TYPES:
                raise ValueError(f"cell {k}: tag 'slideshow-{override[0]}' names no slide type; use one of "
                                 + ", ".join(f"slideshow-{t}" for t in SLIDE_TYPES))
            kind = override[0]
        elif ex is not None and (k > ex[0] or (k == ex[0] and ex[1])):
            kind = "skip"
        elif tags & HIDDEN_TAGS or cell["cell_type"] not in ("markdown", "code"):
            kind = "skip"
        elif cell["cell_type"] == "code":
            first = next((line.strip() for line in text.split("\n") if line.strip()), "")
            if k < first_section or first.lower().startswith("# checked") or first.startswith("assert") or not first:
                kind = "skip"
            elif prev is not None and prev["cell_type"] == "markdown" and len(_source(prev)) <= SHORT:
                kind = "fragment"
            else:
                kind = "subslide"
        else:
            heads = headings(text)
            opening = _opening_line(text)
            first_level = next((lv for i, lv in heads if i == opening), None)
            if not out or first_level == 1 or first_level == 2:
                kind = "slide"
            elif any(lv == 2 for _, lv in heads):
                kind = "slide"
            else:
                kind = "subslide"
        if kind != "skip":
            prev = cell
        out.append(kind)
    return out


# Notebook-level settings for jupyterlab-rise (it reads `metadata.rise`): its default theme ("simple") fetches fonts
# from Google; "white" uses reveal.js's bundled fonts, so the live slideshow requests nothing off the machine.
RISE = {"theme": "white", "transition": "none", "scroll": True, "center": False}


def rise_stale(nb: dict) -> bool:
    """Whether the notebook's ``metadata.rise`` lacks one of :data:`RISE`'s settings (other keys are the author's)."""
    have = nb.get("metadata", {}).get("rise", {})
    return any(have.get(k) != v for k, v in RISE.items())


def stale_cells(nb: dict) -> list[int]:
    """Indices of the cells whose stored slide type differs from :func:`slide_types` (missing counts as stale)."""
    want = slide_types(nb["cells"])
    return [k for k, (cell, t) in enumerate(zip(nb["cells"], want))
            if cell.get("metadata", {}).get("slideshow", {}).get("slide_type") != t]


def set_metadata(nb: dict) -> int:
    """Write every cell's ``metadata.slideshow.slide_type`` and the notebook's ``metadata.rise`` settings; returns how
    many cells changed (plus one if the notebook's settings did)."""
    want = slide_types(nb["cells"])
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


# ---- the static export ---------------------------------------------------------------------------------------------

def split_at_headings(cells: list[dict]) -> list[dict]:
    """Copies of ``cells`` with every markdown cell cut in front of each heading after its first line (a MyST target
    `(label)=` right above a heading goes with it), so that each section and subsection opens a cell of its own."""
    out = []
    for cell in cells:
        text = _source(cell)
        if cell["cell_type"] != "markdown":
            out.append(copy.deepcopy(cell))
            continue
        lines = text.split("\n")
        cuts = []
        for i, _ in headings(text):
            j = i
            while j > 0 and LABEL.match(lines[j - 1]):
                j -= 1
            if any(line.strip() for line in lines[:j]):
                cuts.append(j)
        bounds = [0] + cuts + [len(lines)]
        for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
            part = copy.deepcopy(cell)
            if n:
                part["id"] = f"{cell.get('id', 'md')}-{n}"
            part["source"] = "\n".join(lines[a:b]).strip("\n")
            part.get("metadata", {}).pop("slideshow", None)
            out.append(part)
    return out


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
    """Rewrite the MyST that nbconvert's Markdown renderer does not know into plain Markdown/HTML. ``figures``
    collects {image file: name under OUTDIR/figures/} for the caller to copy."""

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
            width = f' style="max-width:{html.escape(opts["width"])}"' if "width" in opts else ""
            cap = f"\n<figcaption>\n\n{content}\n\n</figcaption>" if content and name == "figure" else ""
            return f'<figure>\n<img src="figures/{figures[src]}" alt="{alt}"{width}>{cap}\n</figure>'
        if name == "dropdown":
            return f"<details><summary>{html.escape(arg)}</summary>\n\n{content}\n\n</details>"
        title = arg or name.capitalize()  # note, tip, warning, admonition, ...
        return "\n".join("> " + line for line in f"**{title}.** {content}".split("\n"))

    text = DIRECTIVE.sub(directive, text)
    text = re.sub(r"\{cite(?::\w+)?\}`([^`]*)`", lambda m: "[" + ", ".join(k.strip() for k in m.group(1).split(","))
                  + "]", text)
    text = re.sub(r"\{(?:doc|ref|numref)\}`([^`<]*?)\s*<[^`]*>`", r"\1", text)
    text = re.sub(r"\{(?:doc|ref|numref|term)\}`([^`]*)`", r"*\1*", text)
    text = re.sub(r"\{(?:eq)\}`([^`]*)`", r"(\1)", text)
    text = re.sub(r"^\(\S+\)=\s*$", "", text, flags=re.M)

    def link(m: re.Match) -> str:  # links to other chapters go to their slides, links to book pages to the book
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


TEMPLATE = r"""{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}
<script src="{{ resources.seqviz.vendor }}/require.js"></script>
<script src="{{ resources.seqviz.vendor }}/seqviz-offline.js"></script>
{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}
<script>
window.MathJax = { tex: { inlineMath: [["$", "$"], ["\\(", "\\)"]], displayMath: [["$$", "$$"], ["\\[", "\\]"]],
                          processEscapes: true, processEnvironments: true, tags: "none" },
                   options: { ignoreHtmlClass: "tex2jax_ignore", processHtmlClass: "tex2jax_process" } };
</script>
<script defer src="{{ resources.seqviz.vendor }}/mathjax/tex-mml-chtml.js"></script>
<style>
.reveal .slides section { height: 100%; overflow-y: auto; overflow-x: hidden; }
.reveal .slides section > section { height: 100%; }
.reveal .slides figure img { max-height: 55vh; max-width: 100%; }
.reveal .sv-back { position: fixed; left: 1em; bottom: 0.6em; font-size: 14px; z-index: 40; }
</style>
{%- endblock html_head_js_mathjax -%}
{% block body_footer %}
</div>
</div>
<a class="sv-back" href="{{ resources.seqviz.chapter_page }}">the chapter in the book</a>
</main>
</body>
{% endblock body_footer %}
{% block footer_js %}
<script>
require({ waitSeconds: 30 },
  ["{{ resources.reveal.url_prefix }}/dist/reveal.js", "{{ resources.reveal.url_prefix }}/plugin/notes/notes.js"],
  function (Reveal, RevealNotes) {
    Reveal.initialize({ controls: true, progress: true, history: true, hash: true, center: false,
                        transition: "none", slideNumber: "c/t", width: 1200, height: 860, margin: 0.04,
                        plugins: [RevealNotes] });
    window.Reveal = Reveal;  // loaded as an AMD module, so not a global by itself (tests and the console use it)
    // widgets size themselves from their container, which is hidden until its slide shows
    Reveal.on("slidechanged", function () { window.dispatchEvent(new Event("resize")); });
  });
</script>
{% endblock footer_js %}
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


def build(out: Path, notebooks: list[Path] | None = None) -> list[Path]:
    """Export every chapter as OUTDIR/NN_name.slides.html (reveal.js, stored outputs, no execution) plus an index."""
    import jinja2
    import nbformat
    from nbconvert import SlidesExporter

    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    _copy_reveal(out)
    vendor = _ensure_vendor(out)
    exporter = SlidesExporter(extra_loaders=[jinja2.DictLoader({"seqviz_slides.html.j2": TEMPLATE})],
                              template_file="seqviz_slides.html.j2", reveal_url_prefix="reveal.js",
                              reveal_theme="white", reveal_transition="none", reveal_number="c/t",
                              widget_renderer_url=f"{vendor}/html-manager/embed-amd.js",
                              jupyter_widgets_base_url=f"{vendor}/npm/", require_js_url=f"{vendor}/require.js",
                              mathjax_url=f"{vendor}/mathjax/tex-mml-chtml.js", exclude_input_prompt=True,
                              exclude_output_prompt=True)
    figures: dict[Path, str] = {}
    written = []
    for path in notebooks or chapter_notebooks():
        nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
        cells = split_at_headings(nb.cells)
        ex = exercises_start(cells)
        if ex is not None:  # the split put the heading at the top of its cell: everything from there is skipped
            cells = cells[:ex[0]]
        for cell, kind in zip(cells, slide_types(cells)):
            cell.setdefault("metadata", {})["slideshow"] = {"slide_type": kind}
            if cell["cell_type"] == "markdown":
                cell["source"] = myst_to_markdown(_source(cell), path.parent, figures)
        nb.cells = [nbformat.from_dict(c) for c in cells]
        body, _ = exporter.from_notebook_node(nb, resources={
            "metadata": {"name": path.stem},
            "seqviz": {"vendor": vendor, "chapter_page": f"../notebooks/{path.stem}.html"}})
        target = out / f"{path.stem}.slides.html"
        target.write_text(body, encoding="utf-8")
        written.append(target)
    if figures:
        (out / "figures").mkdir(exist_ok=True)
        for src, name in figures.items():
            shutil.copy2(src, out / "figures" / name)
    items = "\n".join(f'<li><a href="{p.name}">{html.escape(p.name.split(".")[0])}</a></li>' for p in written)
    (out / "index.html").write_text(f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                                    f"<title>seqviz slides</title></head>\n<body><h1>seqviz: slides</h1>\n<ul>\n"
                                    f"{items}\n</ul></body></html>\n", encoding="utf-8")
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
