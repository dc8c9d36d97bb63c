"""The book as one PDF (issue 24, item 4): `make pdf`, or `python scripts/pdf.py [--out PDF] [--keep-going]`.

Jupyter Book 1 builds the PDF with its LaTeX builder (`jupyter-book build SRC --builder pdflatex`, xelatex through
sphinx-jupyterbook-latex; Debian TeX Live, installed by `make pdf`). The book renders the outputs stored in the
notebooks, and a stored widget is only a reference to its saved state plus a text repr (``<...AttentionHeatmap
object at 0x...>``), which is what LaTeX would print. So this script builds from a copy, never touching the tracked
tree:

1. copy the book's sources (``_config.yml``, ``_toc.yml``, ``book/``, ``notebooks/``, and ``src/``'s code, which the
   chapters quote) into ``_build/pdf-src/``;
2. in the copied notebooks, replace every widget output by what print can show:
   - a seqviz widget -> a PNG of its own ``.to_figure()``, rebuilt from the notebook's saved widget state
     (:func:`seqviz.widgets.saved.figure_from_state`);
   - a ``Tab``/``Box`` of widgets -> each child in turn (a ``Tab``'s titles as captions);
   - a tqdm progress bar (an ``HBox`` of an ``HTML``, a ``FloatProgress`` and an ``HTML``) -> its final text line;
   - HTML outputs (the measured tables) -> the same tables in Markdown, which the LaTeX builder renders;
   - the architecture diagrams (SVG, which LaTeX cannot include) -> PDF, drawn by the same
     ``book/figures/make_figures.py`` functions, and the copies' ``figures/NAME.svg`` references -> ``NAME.pdf``;
   - a page the book executes at build time (``mystnb.execution_mode: force``: book/measured.ipynb) is executed here
     first, from the repository root, and then treated like the others;
3. build, and copy the PDF to ``_build/pdf/seqviz.pdf``.

The LaTeX settings (xelatex, the ``bbm.sty`` stub, ``\\tag`` inside Sphinx's unnumbered-equation wrapper, no xindy,
no second set of section numbers) live in ``_config.yml`` (``latex:`` and ``sphinx.config.latex_*``), so the HTML
build is unchanged.
"""
from __future__ import annotations

import argparse
import base64
import copy
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
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


# ---- widget outputs -------------------------------------------------------------------------------------------
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

    def _model(self, ref: str) -> dict | None:
        return self.models.get(ref[len("IPY_MODEL_"):] if ref.startswith("IPY_MODEL_") else ref)

    def outputs(self, model_id: str) -> list[dict]:
        from seqviz.widgets.saved import WIDGET_CLASSES, figure_from_state

        m = self._model(model_id)
        if m is None:
            raise SystemExit(f"{self.where}: widget {model_id} has no saved state; save the notebook with its "
                             f"widget state (JupyterLab: Settings > Save Widget State Automatically)")
        s, name = m.get("state", {}), m.get("model_name")
        if name == "AnyModel" and s.get("_anywidget_id") in WIDGET_CLASSES:
            kind = WIDGET_CLASSES[s["_anywidget_id"]]
            self.counts[kind] = self.counts.get(kind, 0) + 1
            return [_png_output(figure_from_state(m))]
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


# ---- HTML outputs -> Markdown ---------------------------------------------------------------------------------
def _md_escape(text: str) -> str:
    return re.sub(r"([\\`*_\[\]$|<>#])", r"\\\1", text)


class _HTMLToMarkdown(HTMLParser):
    """The few HTML shapes the book's outputs use: tables (with caption), paragraphs, headings, emphasis."""

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
        elif tag in ("p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "br"):
            self._flush()

    def handle_endtag(self, tag):
        if tag == "table" and self.rows is not None:
            rows = [r for r in self.rows if r]
            if rows:
                width = max(len(r) for r in rows)
                rows = [r + [""] * (width - len(r)) for r in rows]
                head = rows[0] if self.header_rows else [""] * width
                body = rows[1:] if self.header_rows else rows
                lines = ["| " + " | ".join(head) + " |", "|" + "---|" * width]
                lines += ["| " + " | ".join(r) + " |" for r in body]
                self.blocks.append("\n".join(lines))
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
    p = _HTMLToMarkdown()
    p.feed(fragment)
    p.close()
    return p.markdown()


# ---- one notebook -----------------------------------------------------------------------------------------------
def _source(x) -> str:
    return "".join(x) if isinstance(x, list) else (x or "")


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


def print_ready(path: Path, rel: str, svgs: dict[str, str] | None = None) -> dict[str, int]:
    """Rewrite one copied notebook's outputs for print (see the module docstring); returns what was replaced."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    printer = WidgetPrinter(nb, rel)
    n_html = printed = 0
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown" and svgs:
            cell["source"] = _svg_refs(_source(cell.get("source")), svgs)
        if cell.get("cell_type") != "code":
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
                # myst-nb renders text/markdown outputs as CommonMark, which has no tables: GFM for this cell
                cell.setdefault("metadata", {}).setdefault("mystnb", {})["markdown_format"] = "gfm"
                n_html += 1
                new.append(out)
            else:
                new.append(out)
        cell["outputs"] = new
        if not NOT_PRINTED & set(cell.get("metadata", {}).get("tags", [])):
            printed += sum("image/png" in o.get("data", {}) for o in new)
    nb.get("metadata", {}).pop("widgets", None)  # nothing left refers to it
    path.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    counts = dict(printer.counts)
    if n_html:
        counts["HTML table"] = n_html
    counts["figures printed"] = printed  # PNG outputs (widget figures included) in cells the PDF shows
    return counts


def copied() -> list[str]:
    """The book's sources: COPIED, plus the folders of _config.yml's local Sphinx extensions."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extra = list(((config.get("sphinx") or {}).get("local_extensions") or {}).values())
    return COPIED + [p for p in extra if p not in COPIED]


def prepare(src: Path = SRC) -> dict[str, dict[str, int]]:
    """Copy the book into ``src`` and make every notebook print-ready; returns per notebook what was replaced."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for name in copied():
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=IGNORED)
        else:
            shutil.copy2(p, src / name)
    svgs = diagrams_as_pdf(src)
    for md in sorted(src.rglob("*.md")):
        text = md.read_text(encoding="utf-8")
        if _svg_refs(text, svgs) != text:
            md.write_text(_svg_refs(text, svgs), encoding="utf-8")
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


def write_report(report: dict, out: Path, seconds: float) -> Path:
    """``_build/pdf/seqviz.json`` next to the PDF: what the print-ready copy replaced, per notebook, and how many
    figures the PDF must hold (tests/test_pdf.py reads it)."""
    widgets = {k for counts in report.values() for k in counts} - {"figures printed", "HTML table", "progress bar",
                                                                    "other"}
    summary = {
        "pdf": out.name,
        "seconds": round(seconds, 1),
        "figures_printed": sum(c.get("figures printed", 0) for c in report.values()),
        "widget_figures": sum(c.get(k, 0) for c in report.values() for k in widgets),
        "other_widgets": sum(c.get("other", 0) for c in report.values()),
        "notebooks": report,
    }
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
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    t = time.time()
    report = prepare(args.src)
    for rel, counts in report.items():
        if counts:
            print(f"pdf: {rel}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()) if n), flush=True)
    print(f"pdf: print-ready copy in {args.src} ({time.time() - t:.1f} s)", flush=True)
    if not args.prepare_only:
        build(args.src, args.out)
        write_report(report, args.out, time.time() - t)
        print(f"pdf: done in {time.time() - t:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
