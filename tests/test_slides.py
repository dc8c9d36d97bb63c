"""scripts/slides.py: the slideshow metadata rules on a made-up chapter, --set/--check on files, the static export of
a small notebook (offline references only), and --check on the book's chapters once their metadata has been set."""
from __future__ import annotations

import copy
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("slides", ROOT / "scripts" / "slides.py")
slides = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(slides)


def md(text, **meta):
    return {"cell_type": "markdown", "id": f"m{abs(hash(text)) % 10**8}", "metadata": meta, "source": text}


def code(text, tags=(), outputs=None):
    return {"cell_type": "code", "id": f"c{abs(hash(text)) % 10**8}", "execution_count": 1,
            "metadata": {"tags": list(tags)} if tags else {}, "outputs": outputs or [], "source": text}


LONG = "A paragraph of prose. " * 40  # longer than slides.SHORT
STREAM = [{"name": "stdout", "output_type": "stream", "text": "42\n"}]

# (cell, the slide type the rules give it)
CHAPTER = [
    (md("# 9. A made-up chapter\n\nWhat it teaches."), "slide"),
    (code("# seqviz-install: ...\n%pip install seqviz", tags=["remove-cell"]), "skip"),
    (code("%matplotlib inline"), "skip"),
    (md("(sec-first)=\n## 9.1 The first section\n\nShort intro."), "slide"),
    (code("x = 1\nprint(x)", outputs=STREAM), "fragment"),
    (code("y = x + 1\ny"), "subslide"),
    (code("# checked: what the text says\nprint(y)", outputs=STREAM), "skip"),
    (code("assert y == 2"), "skip"),
    (md(LONG), "subslide"),
    (code("plot()"), "subslide"),
    (md("### A subsection\n\nMore."), "subslide"),
    (code("print('the book hides me')", tags=["hide-cell"]), "skip"),
    (md("Closing words of 9.1.\n\n## 9.2 The second section\n\nIt starts inside a cell."), "slide"),
    (md("A remark I want on its own.", tags=["slideshow-notes"]), "notes"),
    (code(""), "skip"),
    (md("## Summary\n\n- one\n- two"), "slide"),
    (md("## Exercises\n\n1. Do it."), "skip"),
    (code("# Solution 1\nprint(3)", tags=["hide-cell"]), "skip"),
    (md("```{dropdown} Answer 1\nThree.\n```"), "skip"),
    (code("print('an exercise cell without a tag')"), "skip"),
]


def made_up() -> dict:
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return {"cells": [copy.deepcopy(c) for c, _ in CHAPTER], "metadata": {"kernelspec": kernel},
            "nbformat": 4, "nbformat_minor": 5}


def test_rules_on_a_made_up_chapter():
    assert slides.slide_types(made_up()["cells"]) == [t for _, t in CHAPTER]


def test_exercises_heading_after_the_summary_in_one_cell_keeps_the_cell_and_skips_the_rest():
    cells = [md("# 1. T"), md("## 1.1 S"), code("f()"),
             md("## Summary\n\n- a point\n\n## Exercises\n\n1. Q?"), code("# Solution 1\n1", tags=["hide-cell"]),
             md("```{dropdown} Answer 1\nA.\n```")]
    assert slides.slide_types(cells) == ["slide", "slide", "fragment", "slide", "skip", "skip"]
    # the export splits the cell at the heading, so the exercises are cut off there
    split = slides.split_at_headings(cells)
    assert [slides._source(c) for c in split[3:5]] == ["## Summary\n\n- a point", "## Exercises\n\n1. Q?"]
    assert slides.exercises_start(split) == (4, True)


def test_a_heading_inside_a_code_fence_is_not_a_section():
    cells = [md("# 1. T"), md("## 1.1 S"), md("Prose.\n\n```python\n## not a heading\n```")]
    assert slides.slide_types(cells) == ["slide", "slide", "subslide"]
    assert len(slides.split_at_headings(cells)) == 3


def test_split_keeps_a_myst_label_with_its_heading_and_every_line_once():
    text = "End of 1.1.\n\n(sec-two)=\n## 1.2 Two\n\nBody.\n\n### 1.2.1 Sub\n\nMore."
    parts = [slides._source(c) for c in slides.split_at_headings([md(text)])]
    assert parts == ["End of 1.1.", "(sec-two)=\n## 1.2 Two\n\nBody.", "### 1.2.1 Sub\n\nMore."]
    assert len({c["id"] for c in slides.split_at_headings([md(text)])}) == 3


def test_an_unknown_override_tag_is_an_error_that_names_the_valid_ones():
    with pytest.raises(ValueError, match="slideshow-fragment"):
        slides.slide_types([md("# T"), md("x", tags=["slideshow-bogus"])])


def test_set_writes_only_slideshow_metadata_and_is_idempotent(tmp_path):
    path = tmp_path / "09_made_up.ipynb"
    path.write_text(json.dumps(made_up(), sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert slides.main(["--check", str(path)]) == 1
    assert slides.main(["--set", str(path)]) == 0
    after = json.loads(path.read_text(encoding="utf-8"))
    assert [c["metadata"]["slideshow"]["slide_type"] for c in after["cells"]] == [t for _, t in CHAPTER]
    assert after["metadata"]["rise"] == slides.RISE  # RISE's offline theme and settings
    for cell in after["cells"]:
        cell["metadata"].pop("slideshow")
    after["metadata"].pop("rise")
    assert after == made_up()  # sources, outputs, tags and the rest of the metadata untouched
    first = path.read_bytes()
    assert first.decode() == json.dumps(json.loads(first), sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    assert slides.main(["--set", str(path)]) == 0 and path.read_bytes() == first
    assert slides.main(["--check", str(path)]) == 0
    # a changed RISE theme, or a cell added later, makes the metadata stale again
    nb = json.loads(first)
    nb["metadata"]["rise"]["theme"] = "simple"  # fetches Google fonts
    path.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert slides.main(["--check", str(path)]) == 1
    assert slides.main(["--set", str(path)]) == 0 and path.read_bytes() == first
    nb = json.loads(first)
    nb["cells"].insert(5, code("z = 3"))
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert slides.main(["--check", str(path)]) == 1


def test_myst_is_rewritten_for_nbconvert(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mod.py").write_text("class A:\n    def f(self):\n        return 1\n\n\ndef g():\n    pass\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "fig.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    figures = {}
    text = ("As {cite}`vaswani2017attention, jurafsky2021slp` show; see {doc}`the data page <../book/data>` and "
            "[chapter 3](03_rnn.ipynb#sec) and [Data](../book/data.md).\n\n"
            "```{literalinclude} ../src/mod.py\n:pyobject: A.f\n```\n\n"
            "```{figure} ../fig.svg\n:alt: a <figure>\n\nThe caption.\n```\n\n"
            "```{dropdown} Answer 1\nThree.\n```")
    out = slides.myst_to_markdown(text, tmp_path / "notebooks", figures)
    assert "[vaswani2017attention, jurafsky2021slp]" in out and "the data page" in out and "{doc}" not in out
    assert "[chapter 3](03_rnn.slides.html#sec)" in out and "[Data](../notebooks/../book/data.html)" in out
    assert "```python\n    def f(self):\n        return 1\n```" in out and "def g" not in out
    assert '<img src="figures/fig.svg" alt="a &lt;figure&gt;">' in out and "The caption." in out
    assert figures == {(tmp_path / "fig.svg").resolve(): "fig.svg"}
    assert "<details><summary>Answer 1</summary>" in out


def test_build_references_nothing_off_the_machine(tmp_path):
    if not (slides.NODE_REVEAL / "dist" / "reveal.js").is_file() or not (slides.VENDOR / "require.js").is_file():
        pytest.skip("node_modules/reveal.js or _vendor/vendor is missing: run `make vendor` (npm ci + vendor_js.py)")
    nb = made_up()
    nb["cells"][4]["outputs"] = [{"output_type": "display_data", "metadata": {},
                                  "data": {"text/html": "<b>shown</b>", "text/plain": "shown"}}]
    path = tmp_path / "09_made_up.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    out = tmp_path / "html" / "slides"
    [page] = slides.build(out, [path])
    text = page.read_text(encoding="utf-8")
    assert "<b>shown</b>" in text and "9.2 The second section" in text
    for gone in ("the book hides me", "Do it.", "Solution 1", "an exercise cell", "%matplotlib"):
        assert gone not in text, gone
    refs = re.findall(r'(?:src|href)="([^"#]+)"', text) + re.findall(r'"([^"]+\.js)"', text)
    assert refs and not [r for r in refs if re.match(r"^(https?:)?//", r)], refs
    assert "../notebooks/09_made_up.html" in refs  # the way back to the chapter in the built book
    for ref in set(refs) - {"../notebooks/09_made_up.html"}:  # every file the page loads is there, relative to it
        assert (page.parent / ref.split("?")[0]).resolve().exists(), ref
    assert (out / "reveal.js" / "dist" / "reveal.js").is_file() and (out.parent / "vendor" / "require.js").is_file()
    assert (out / "index.html").read_text().count("09_made_up.slides.html") == 1


@pytest.mark.parametrize("path", slides.chapter_notebooks(), ids=lambda p: p.name)
def test_chapter_slideshow_metadata_is_current(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    stale = slides.stale_cells(nb) + (["the notebook's rise settings"] if slides.rise_stale(nb) else [])
    assert not stale, (f"{path.name}: slideshow metadata missing or stale in cells {stale}: run "
                       f"`python scripts/slides.py --set notebooks/{path.name}`")
