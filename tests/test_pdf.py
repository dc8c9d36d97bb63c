"""The book's PDF (issue 24, item 4): `make pdf` builds _build/pdf/seqviz.pdf with Debian TeX Live from a print-ready
copy of the book (scripts/pdf.py). Opt-in: CI does not install TeX, so these tests skip where the PDF is not built.

They check what print must get right: enough pages, every widget printed as its static figure (never its text repr,
``<seqviz.widgets... object at 0x...>``), and the equations keeping SLP's numbers (``\\tag{9.22}`` in the sources).
The PDF-independent half (each widget rebuilt from its saved state draws its figure) is tests/test_widgets_saved.py.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "_build" / "pdf" / "seqviz.pdf"
REPORT = PDF.with_suffix(".json")
MIN_PAGES = 225  # measured 254 pages (2026-11-25); a missing chapter costs 15-40

pytestmark = pytest.mark.skipif(not PDF.is_file(), reason=f"no {PDF.relative_to(ROOT)}: `make pdf` builds it "
                                                          f"(it installs Debian TeX Live; CI does not)")


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


def test_page_count(reader):
    assert len(reader.pages) >= MIN_PAGES, f"{len(reader.pages)} pages; the whole book is about 250"


def test_every_chapter_is_in_it(text):
    for title in ("1. N-gram language models", "2. A fixed-window neural language model",
                  "3. Recurrent neural networks", "Visual tools", "Glossary"):
        assert title.replace(" ", "") in text.replace(" ", ""), f"{title!r} is not in the PDF"


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


def test_slp_equation_numbers(text):
    """The equations keep SLP's numbers: a display ends with its tag, e.g. the forget gate (9.22) and the dot-product
    score (9.30); prose references such as "(9.22)-(9.29)" do not count."""
    for number in ("9.22", "9.30"):
        tagged = re.findall(rf"^.*=.*\({re.escape(number)}\)[ \t]*$", text, flags=re.M)
        assert tagged, f"no displayed equation tagged ({number})"


def test_every_widget_is_a_figure(reader, report):
    """Each widget output became an image: the PDF holds at least as many images as the print-ready copy's shown
    cells have figures (stored plots + one per widget), and the copy had no widget it could not draw."""
    images = 0
    for page in reader.pages:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects:
            images += sum(o.get_object().get("/Subtype") == "/Image" for o in xobjects.get_object().values())
    assert report["widget_figures"] >= 30, report["widget_figures"]  # 35 when measured (2026-11-25)
    assert images >= report["figures_printed"], (images, report["figures_printed"])
    assert report["other_widgets"] == 0, "a widget the PDF prints as '[interactive ...: see the HTML book]'"
