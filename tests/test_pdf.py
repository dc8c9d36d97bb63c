"""The book's PDF (issue 24, item 4; issue 33, item 8): `make pdf` builds _build/pdf/seqviz.pdf with Debian TeX Live
from a print-ready copy of the book (scripts/pdf.py).

Two halves. The pieces of scripts/pdf.py run everywhere (CI included): the table-width rule, long words and `--` and
backticks in tables, check cells, the print convention (``html-only`` cells, ``seqviz.print`` sentences) and its
check over the book's own sources, the figure print size, the LaTeX-log reader. The built PDF is opt-in (CI does not
install TeX): those tests skip where it is not built, and check what print must get right: every chapter, every widget
as its static figure (never its text repr), SLP's equation numbers, tables that fit the page (no overfull box in a
table), commands keeping their `--`, no backticks or interaction instructions in the text, no check cell printed,
figure labels of at least 7 pt. The PDF-independent half of the widget figures is tests/test_widgets_saved.py.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import pdf  # noqa: E402  (scripts/pdf.py)

PDF = ROOT / "_build" / "pdf" / "seqviz.pdf"
REPORT = PDF.with_suffix(".json")
LATEX = ROOT / "_build" / "pdf-src" / "_build" / "latex"
MIN_PAGES = 225  # measured 254-268 pages (2026-11-25..27); a missing chapter costs 15-40
built = pytest.mark.skipif(not PDF.is_file(), reason=f"no {PDF.relative_to(ROOT)}: `make pdf` builds it "
                                                     f"(it installs Debian TeX Live; CI does not)")


# ---- tables -----------------------------------------------------------------------------------------------------
WIDE_ROW = pdf.Table(["model", "train_pairs", "test_pairs", "passes", "best_pass", "valid_loss",
                      "valid_loss_per_pass", "bleu_greedy", "bleu_beam5", "steps", "train_cpu_s", "train_wall_s", "parameters"],
                     [["GRU with attention, the translator's pairs", "175,869", "591", "3", "3", "3.98",
                       "4.42, 4.07, 3.98", "2.68", "3.56", "8,244", "2,288", "2,295", "3,719,435"]])
MACHINE = pdf.Table(["", "value"], [["date", "2026-11-27T04:02:53+00:00"], ["cpu", "Intel(R) Xeon(R) Processor"],
                                    ["sha256", "cfe9934146ae7a916b4d3a92422ab304ca5ec42751f58c70f12a0099a129307d"],
                                    ["command",
                                     "python bench/bench_translator.py gru-data --threads 1 --gru-passes 3"]])


def _pieces_fit(part: pdf.Table, widths: list[float]) -> bool:
    cols = pdf._columns(part)
    return all(pdf._width(p, k) + pdf.CELL_PAD_PT <= w + 1e-6 for col, w in zip(cols, widths) for t, k in col
               for p in pdf.pieces(t))


def test_a_table_that_fits_keeps_its_shape_and_every_word_fits_its_column():
    [(part, widths)] = pdf.table_layout(MACHINE)
    assert part is MACHINE and sum(widths) <= pdf.LINEWIDTH_PT + 1e-6
    assert _pieces_fit(part, widths)
    assert widths[1] > widths[0]  # the long values get the room


def test_a_wide_table_with_one_row_is_printed_transposed():
    [(part, widths)] = pdf.table_layout(WIDE_ROW)
    assert [r[0] for r in part.rows] == WIDE_ROW.header[1:] and part.header == ["model", WIDE_ROW.rows[0][0]]
    assert [r[1] for r in part.rows] == WIDE_ROW.rows[0][1:]
    assert sum(widths) <= pdf.LINEWIDTH_PT + 1e-6 and _pieces_fit(part, widths)


def test_a_wide_long_table_is_split_into_column_groups_that_repeat_its_first_column():
    header = ["kind"] + [f"metric_number_{j}" for j in range(23)]
    rows = [[f"system {i}"] + [f"{i * j / 7:.4f}" for j in range(23)] for i in range(20)]
    parts = pdf.table_layout(pdf.Table(header, rows))
    assert len(parts) > 1
    for part, widths in parts:
        assert part.header[0] == "kind" and [r[0] for r in part.rows] == [r[0] for r in rows]
        assert sum(widths) <= pdf.LINEWIDTH_PT + 1e-6 and _pieces_fit(part, widths)
    assert [h for part, _ in parts for h in part.header[1:]] == header[1:]  # every column once, in order


def test_long_words_get_break_points_and_numbers_and_times_hold_together():
    sha = "cfe9934146ae7a916b4d3a92422ab304ca5ec42751f58c70f12a0099a129307d"
    assert max(map(len, pdf._cut(sha))) <= pdf.MAX_PIECE
    assert pdf._cut("valid_loss_per_pass") == ["valid_", "loss_", "per_", "pass"]
    assert pdf._cut("175,869") == ["175,869"] and pdf._cut("06:51:05") == ["06:51:05"]
    assert pdf._cut("bench/bench_lstm.py") == ["bench/", "bench_", "lstm.py"]


def test_commands_keep_their_double_hyphen_and_backticks_become_code():
    tex = pdf.markdown_to_latex("python bench/bench_lstm.py --threads 1 `--seeds 5` and `full` or **b** $x_i$")
    assert "--" not in tex.replace("-{}-", "") and tex.count("-{}-") == 2  # TeX would set `--` as an en dash
    assert "`" not in tex and r"\texttt{full}" in tex and r"\texttt{-{}-seeds 5}" in tex
    assert r"\textbf{b}" in tex and "$x_i$" in tex
    assert pdf.markdown_to_latex("50% of #1 & $5 at ~x_y^2 \\") == \
        r"50\% of \#1 \& \$5 at \textasciitilde{}x\_\allowbreak{}y\textasciicircum{}2 \textbackslash{}"


def test_html_tables_become_latex_tables_without_backticks():
    md = pdf.html_to_markdown("<p>measured by <code>make x</code></p><table><caption>rows</caption><thead><tr>"
                              "<th>preset</th><th>command</th></tr></thead><tbody><tr><td>`full`</td>"
                              "<td><code>python x.py --threads 1</code></td></tr></tbody></table>")
    assert "```{raw} latex" in md and r"\begin{seqviztable}" in md
    body = md.split("```{raw} latex")[1]
    assert "`" not in body.replace("````", "") and r"\texttt{full}" in body and "-{}-threads" in body
    assert "*rows*" in md and "`make x`" in md


def test_markdown_tables_in_text_become_latex_and_the_rest_stays():
    text = "Before.\n\n| § | section | min |\n|---|---|---|\n| 1.1 | `counts` and $n$-grams | 3 |\n\nAfter."
    out = pdf.tables_to_latex(text)
    assert out.startswith("Before.") and out.rstrip().endswith("After.") and "|---|" not in out
    assert r"\texttt{counts}" in out and "$n$-grams" in out and out.count(r"\begin{seqviztable}") == 1
    assert pdf.tables_to_latex("no table | here") == "no table | here"


@pytest.mark.skipif(shutil.which("xelatex") is None, reason="xelatex (TeX Live) is not installed; `make texlive`")
def test_tables_typeset_without_an_overfull_box(tmp_path):
    """The width rule holds in TeX itself: the hard tables, typeset with book/latex/seqviz-print.sty at the book's
    text width, give no overfull box."""
    wide = pdf.Table(["kind"] + [f"metric_number_{j}" for j in range(23)],
                     [[f"system {i}"] + [f"{i * j / 7:.4f}" for j in range(23)] for i in range(4)])
    body = "\n\n".join(pdf.latex_table(t) for t in (WIDE_ROW, MACHINE, wide))
    (tmp_path / "t.tex").write_text(
        "\\documentclass[10pt]{article}\\usepackage{fontspec}\\usepackage[textwidth=%.3fpt]{geometry}"
        "\\setmainfont{FreeSerif}\\setmonofont{DejaVu Sans Mono}[Scale=MatchLowercase]\\usepackage{seqviz-print}"
        "\\begin{document}\n%s\n\\end{document}\n" % (pdf.LINEWIDTH_PT, body), encoding="utf-8")
    shutil.copy2(pdf.STY, tmp_path / "seqviz-print.sty")
    run = subprocess.run(["xelatex", "-interaction=nonstopmode", "t.tex"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert run.returncode == 0, log[-2000:]
    assert not pdf.overfull_in_tables((tmp_path / "t.tex").read_text(), log, 0.5), \
        re.findall(r"Overfull.*", log)[:5]


def test_the_log_reader_finds_overfull_boxes_inside_tables_only():
    tex = "\n".join(["x", r"\begin{seqviztable}{p{1pt}}", "a", "b", r"\end{seqviztable}", "y",
                     r"\begin{tabulary}{\linewidth}{TT}", "c", r"\end{tabulary}"])
    log = ("Overfull \\hbox (12.5pt too wide) in paragraph at lines 3--3\n"
           "Overfull \\hbox (30.0pt too wide) in paragraph at lines 6--6\n"
           "Overfull \\hbox (0.4pt too wide) in paragraph at lines 8--8\n"
           "Overfull \\hbox (2.0pt too wide) in alignment at lines 7--9\n")
    assert pdf.table_spans(tex) == [(2, 5), (7, 9)]
    assert pdf.overfull_in_tables(tex, log) == [(12.5, 3), (2.0, 7)]


# ---- the print convention ---------------------------------------------------------------------------------------
def md(text, tags=()):
    return {"cell_type": "markdown", "metadata": {"tags": list(tags)}, "source": text}


def code(text, tags=(), outputs=(), **meta):
    return {"cell_type": "code", "metadata": {"tags": list(tags), **meta}, "outputs": list(outputs), "source": text,
            "execution_count": 1}


STREAM = {"output_type": "stream", "name": "stdout", "text": "checked: weights sum to 1\n"}
WIDGET = {"output_type": "display_data", "metadata": {},
          "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "m1", "version_major": 2}}}


def test_check_cells_are_recognised():
    assert pdf.is_check_cell(code("# checked: the text's claim\nprint(1)"))
    assert pdf.is_check_cell(code("assert x == 1\nassert y  # comment\n"))
    assert pdf.is_check_cell(code("ok = abs(a - b) < 1e-6\nassert ok\nprint('checked')", tags=["remove-input"]))
    assert pdf.is_check_cell(code("assert ok", tags=["remove-cell"]))
    assert pdf.is_check_cell(code("assert val_loss < 1.8, val_loss\nprint('checked: the loss is below 1.8')"))
    assert not pdf.is_check_cell(code("ok = abs(a - b) < 1e-6\nassert ok\nprint(ok)"))  # shown: part of the lesson
    assert not pdf.is_check_cell(code("plot(results)", tags=["remove-input"]))  # a hidden figure, not a check
    assert not pdf.is_check_cell(code("%timeit f()"))
    assert not pdf.is_check_cell(md("assert x"))


def test_print_ready_drops_checks_and_instructions_and_adds_the_print_sentence():
    nb = {"metadata": {}, "cells": [
        md("## 1.1 A section"),
        code("x = 1\nprint(x)", outputs=[STREAM]),
        code("assert x == 1\nprint('checked: x is one')", tags=["remove-input"], outputs=[STREAM]),
        md("Hover over a cell to read its weight.", tags=["html-only"]),
        code("show(x)", outputs=[STREAM], seqviz={"print": "The heatmap shows $x$ at step 3."}),
    ]}
    counts = pdf.print_ready_nb(nb, "made-up")
    cells = nb["cells"]
    assert "remove-cell" in cells[2]["metadata"]["tags"] and "remove-cell" in cells[3]["metadata"]["tags"]
    assert "remove-cell" not in cells[1]["metadata"]["tags"]
    assert cells[4]["outputs"][-1]["data"]["text/markdown"] == "The heatmap shows $x$ at step 3."
    assert cells[4]["metadata"]["mystnb"]["markdown_format"] == "myst"
    assert counts["check cells"] == 1 and counts["html-only cells"] == 1 and counts["print sentences"] == 1
    with pytest.raises(ValueError, match="seqviz.print must be a non-empty sentence"):
        pdf.print_sentence(code("x", seqviz={"print": ["a list"]}))


def test_instructions_in_printed_text_are_found():
    nb = {"cells": [md("Drag the **step** slider to replay the search. The beam keeps five."),
                    md("Hover over a node for its numbers.", tags=["html-only"]),
                    md("The `drag` argument and a `hover_text=` name are code, not instructions."),
                    md("Or **click** a column's heading to jump there."),
                    md("The widget's step slider is named in this table; move the top-$k$ slider to see more."),
                    code("# hover over it", outputs=[]), md("A slider names a control; it asks nothing.")]}
    found = pdf.instructions_in_print(nb)
    assert [k for k, _ in found] == [0, 3, 4]
    assert found[2][1] == "move the top-$k$ slider to see more."  # the clause that asks, not the one that names
    assert found[0][1].startswith("Drag the **step** slider")
    page = "Intro.\n\n```{only} html\nHover over a cell.\n```\n\n```{only} latex\nThe figure shows.\n```\n"
    assert re.sub(r"\n+", " ", pdf.printed_markdown(page)).strip() == "Intro. The figure shows."
    assert pdf._sentences_with_instructions(pdf.printed_markdown(page)) == []


def test_an_html_only_cell_needs_a_print_sentence_on_its_widget():
    explained = {"cells": [code("w", outputs=[WIDGET], seqviz={"print": "It shows."}), md("Prose."),
                           md("Hover.", tags=["html-only"])]}
    assert pdf.unexplained_html_only(explained) == []
    bare = {"cells": [code("w", outputs=[WIDGET]), md("Hover.", tags=["html-only"])]}
    assert pdf.unexplained_html_only(bare) == [1]
    far = {"cells": [code("w", outputs=[WIDGET], seqviz={"print": "It shows."}), code("y"), code("z"),
                     md("Hover.", tags=["html-only"])]}
    assert pdf.unexplained_html_only(far) == [3]


@pytest.mark.parametrize("path", pdf.book_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_book_follows_the_print_convention(path):
    """No page prints an instruction to hover, drag, click or move a slider (print has no mouse), and every
    instruction kept for the screen has a printed sentence on its figure (`python scripts/pdf.py --check` lists
    them all)."""
    problems = pdf.print_problems(path)
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems) + f"; {pdf.HOW}"


def test_check_lists_the_problems_and_fails(tmp_path, monkeypatch, capsys):
    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book" / "page.md").write_text("Hover over a cell.\n", encoding="utf-8")
    nb = {"cells": [code("w", outputs=[WIDGET]), md("Drag it.", tags=["html-only"])], "metadata": {}}
    (tmp_path / "notebooks" / "01_x.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(pdf, "ROOT", tmp_path)
    monkeypatch.setattr(pdf, "book_sources", lambda root=tmp_path: [tmp_path / "notebooks" / "01_x.ipynb",
                                                                     tmp_path / "book" / "page.md"])
    assert pdf.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "notebooks/01_x.ipynb: cell 1 is html-only, but no widget" in out
    assert "book/page.md: prints 'Hover over a cell.'" in out and "2 places break the print convention" in out
    (tmp_path / "book" / "page.md").write_text("```{only} html\nHover over a cell.\n```\n", encoding="utf-8")
    nb["cells"][0]["metadata"]["seqviz"] = {"print": "It shows."}
    (tmp_path / "notebooks" / "01_x.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert pdf.main(["--check"]) == 0


# ---- figures, the copy's settings -------------------------------------------------------------------------------
def test_a_wide_figure_is_resized_so_its_labels_print_at_7pt():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(20, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.imshow([[0, 1] * 40] * 10, aspect="auto")
    ax.set_title("a wide heatmap", fontsize=9)
    ax.tick_params(labelsize=8)
    w, h = pdf._printed_inches(fig)
    assert 8 * pdf.print_scale(w, h) < 4  # as drawn, LaTeX would shrink its 8 pt labels below 4 pt
    printed = pdf.fit_for_print(fig)
    assert printed >= pdf.MIN_LABEL_PT
    assert fig.get_size_inches()[1] == pytest.approx(4)  # only the side that was too long changed
    small = Figure(figsize=(4, 3))
    small.add_subplot().set_title("small", fontsize=8)
    assert pdf.fit_for_print(small) == pytest.approx(8) and list(small.get_size_inches()) == [4, 3]


def test_print_config_adds_the_print_settings_to_a_copy():
    config = {"sphinx": {"config": {"latex_additional_files": ["book/latex/bbm.sty"],
                                    "latex_elements": {"preamble": "\\usepackage{etoolbox}"}}}}
    out = pdf.print_config(config)
    sphinx = out["sphinx"]["config"]
    assert sphinx["smartquotes_action"] == "qe"  # no dashes: a `--` in text stays two hyphens
    assert sphinx["latex_additional_files"] == ["book/latex/bbm.sty", "book/latex/seqviz-print.sty"]
    assert sphinx["latex_elements"]["preamble"].startswith("\\usepackage{etoolbox}")
    assert "\\usepackage{seqviz-print}" in sphinx["latex_elements"]["preamble"]
    assert config["sphinx"]["config"]["latex_additional_files"] == ["book/latex/bbm.sty"]  # the original untouched
    assert r"\newenvironment{seqviztable}" in pdf.STY.read_text(encoding="utf-8")


# ---- the built PDF ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reader():
    pypdf = pytest.importorskip("pypdf", reason="pypdf (a dev dependency) reads the PDF: `make setup`")
    return pypdf.PdfReader(PDF)


@pytest.fixture(scope="module")
def text(reader) -> str:
    return "\n".join(page.extract_text() or "" for page in reader.pages)


@pytest.fixture(scope="module")
def report() -> dict:
    if not REPORT.is_file():
        pytest.skip(f"no {REPORT.relative_to(ROOT)} (scripts/pdf.py writes it with the PDF): run `make pdf` again")
    return json.loads(REPORT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tex_body() -> str:
    """The PDF's LaTeX source from \\begin{document} on, without its verbatim blocks (code and printed output)."""
    tex = LATEX / f"{pdf.TARGET}.tex"
    if not tex.is_file():
        pytest.skip(f"no {tex.relative_to(ROOT)}: run `make pdf` again")
    body = tex.read_text(encoding="utf-8", errors="replace").split(r"\begin{document}", 1)[1]
    return re.sub(r"\\begin\{(sphinxVerbatim|Verbatim)\}.*?\\end\{\1\}", "", body, flags=re.S)


@built
def test_page_count(reader):
    assert len(reader.pages) >= MIN_PAGES, f"{len(reader.pages)} pages; the whole book is about 260"


@built
def test_every_chapter_is_in_it(text):
    for title in ("1. N-gram language models", "2. A fixed-window neural language model",
                  "3. Recurrent neural networks", "Visual tools", "Glossary"):
        assert title.replace(" ", "") in text.replace(" ", ""), f"{title!r} is not in the PDF"


@built
def test_no_text_repr_of_an_object(text):
    assert "object at 0x" not in text
    assert "<seqviz.widgets" not in text
    # what a widget output would print without its figure: the repr, or a Tab's/Box's repr of its children
    for name in ("AttentionHeatmap", "LSTMGates", "PositionalMatrix", "NextTokenDistribution", "BeamTree",
                 "AttentionSteps"):
        assert not re.search(rf"\.{name} object", text), name
    assert not re.search(r"(Tab|HBox|VBox)\(children=\(<", text)
    assert "IPython.core.display" not in text  # an HTML output printed as its repr instead of its table
    assert not re.search(r"\|\s*[-\u2013\u2014]+\s*\|", text)  # a Markdown table printed as text, not typeset


@built
def test_slp_equation_numbers(text):
    """The equations keep SLP's numbers: a display ends with its tag, e.g. the forget gate (9.22) and the dot-product
    score (9.30); prose references such as "(9.22)-(9.29)" do not count."""
    for number in ("9.22", "9.30"):
        tagged = re.findall(rf"^.*=.*\({re.escape(number)}\)[ \t]*$", text, flags=re.M)
        assert tagged, f"no displayed equation tagged ({number})"


@built
def test_every_widget_is_a_figure(reader, report):
    """Each widget output became an image: the PDF holds at least as many images as the print-ready copy's shown
    cells have figures (stored plots + one per widget), and the copy had no widget it could not draw."""
    images = 0
    for page in reader.pages:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects:
            images += sum(o.get_object().get("/Subtype") == "/Image" for o in xobjects.get_object().values())
    assert report["widget_figures"] >= 30, report["widget_figures"]  # 38 when measured (2026-11-27)
    assert images >= report["figures_printed"], (images, report["figures_printed"])
    assert report["other_widgets"] == 0, "a widget the PDF prints as '[interactive ...: see the HTML book]'"


@built
def test_every_table_fits_its_page(report):
    """No table makes TeX report an overfull line (more than 1 pt past its column or the text width)."""
    assert report["tables"] >= 50, report["tables"]  # 94 when measured
    assert report["overfull_in_tables"] == [], \
        f"overfull boxes in tables (pt, .tex line): {report['overfull_in_tables']}"
    assert report["textwidth_pt"] == pytest.approx(pdf.LINEWIDTH_PT, abs=0.01), "pdf.LINEWIDTH_PT is not the book's"


@built
def test_commands_keep_their_double_hyphen(text):
    dashed = re.findall(r"(?:^|\s)([\u2013\u2014][a-z][\w-]*)", text)
    assert not dashed, f"options typeset as dashes: {sorted(set(dashed))[:10]}"
    assert "--threads" in text


@built
def test_no_backticks_outside_code(tex_body):
    text = re.sub(r"\\sphinxcode\{\\sphinxupquote\{.*?\}\}", "", tex_body)  # inline code may show a backtick
    stray = [line.strip()[:100] for line in text.split("\n") if "`" in line or r"\textasciigrave" in line]
    assert not stray, f"backticks in the printed text: {stray[:5]}"


@built
def test_no_interaction_instructions_in_print(tex_body):
    prose = re.sub(r"\\[a-zA-Z]+\*?|[{}]", " ", tex_body)
    found = sorted({" ".join(m.group(0).split()) for m in re.finditer(rf"[^.\n]*{pdf.INSTRUCTION.pattern}[^.\n]*",
                                                                         prose, flags=re.I)})
    assert not found, f"{len(found)} printed sentences ask for a mouse: {found[:6]}"


@built
def test_no_check_cell_is_printed(tex_body):
    inputs = re.findall(r"\\begin\{sphinxuseclass\}\{cell_input\}(.*?)\\end\{sphinxuseclass\}",
                        (LATEX / f"{pdf.TARGET}.tex").read_text(encoding="utf-8", errors="replace"), flags=re.S)
    assert inputs, "no code cell input found in the .tex: has myst-nb's markup changed?"
    checks = [i for i in inputs if re.search(r"\\begin\{sphinxVerbatim\}[^\n]*\n\s*(\\PYG\{k\}\{assert\}|"
                                             r"\\PYG\{c\+c1\}\{\\PYGZsh\{\} checked)", i)]
    assert not checks, f"{len(checks)} check cells printed; the first: {checks[0][:200]}"


@built
def test_figure_labels_print_at_7pt_or_more(report):
    small = [(nb, kind, pt) for nb, kind, pt in report["labels_pt"] if pt < pdf.MIN_LABEL_PT]
    assert not small, f"widget figures whose smallest label prints under {pdf.MIN_LABEL_PT} pt: {small}"
