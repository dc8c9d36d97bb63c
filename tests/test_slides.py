"""scripts/slides.py: the rule that makes a chapter into slides (on a made-up chapter), its pieces (leads, display
blocks and notes, citations, MyST, splitting slides that do not fit), --set/--check on files, the static deck of a
small notebook (flat, offline, speaker notes, its slides starting at exactly the cells the live metadata marks
`slide`), and --check on the book's chapters. The decks in a browser: tests/browser/test_slides_browser.py."""
from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import slides  # noqa: E402  (scripts/slides.py)


def md(text, tags=(), **meta):
    return {"cell_type": "markdown", "id": f"m{abs(hash(text)) % 10**8}",
            "metadata": {**({"tags": list(tags)} if tags else {}), **meta}, "source": text}


def code(text, tags=(), outputs=None, **meta):
    return {"cell_type": "code", "id": f"c{abs(hash(text)) % 10**8}", "execution_count": 1,
            "metadata": {**({"tags": list(tags)} if tags else {}), **meta}, "outputs": outputs or [], "source": text}


LONG = "A paragraph of prose. " * 40
STREAM = [{"name": "stdout", "output_type": "stream", "text": "42\n"}]
WIDGET = [{"output_type": "display_data", "metadata": {},
           "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "w1", "version_major": 2,
                                                                 "version_minor": 0}, "text/plain": "W()"}}]
LONG_CODE = "\n".join(f"line_{i} = {i}" for i in range(20))

# (cell, the slide type the rule gives it)
CHAPTER = [
    (md("# 9. A made-up chapter\n\nWhat it teaches. And more."), "slide"),
    (code("# seqviz-install: ...\n%pip install seqviz", tags=["remove-cell"]), "skip"),
    (code("%matplotlib inline"), "skip"),                                      # set-up before the first section
    (md("(sec-first)=\n## 9.1 The first section\n\nShort intro, as {cite}`vaswani2017attention` put it."), "slide"),
    (code("x = 1\nprint(x)", outputs=STREAM), "-"),                          # short: joins the slide above
    (code("y = x + 1\ny"), "slide"),
    (code("# checked: what the text says\nprint(y)", outputs=STREAM), "skip"),
    (code("assert y == 2"), "skip"),
    (code("ok = y == 2\nassert ok\nprint('checked')", tags=["remove-input"], outputs=STREAM), "skip"),
    (md(LONG), "notes"),                                                      # prose only: the notes
    (code("plot()", outputs=STREAM), "slide"),
    (md("### A subsection\n\nMore."), "slide"),
    (code("print('the book hides me')", tags=["hide-cell"]), "skip"),
    (code("table()", tags=["remove-input"], outputs=STREAM), "-"),            # the book shows its output
    (code("quiet()", tags=["remove-input"]), "skip"),                         # nothing to show
    (code(LONG_CODE), "notes"),                                               # long code, nothing printed
    (md("Closing words of 9.1.\n\n## 9.2 The second section\n\nIt starts inside a cell."), "slide"),
    (md("A remark I want on its own.", tags=["slideshow-notes"]), "notes"),
    (code(""), "skip"),
    (md("The gate:\n\n$$\nf_t = \\sigma(U h + W x) \\tag{9.22}\n$$\n\nwhere $\\sigma$ squashes."), "slide"),
    (code("Widget()", outputs=WIDGET, seqviz={"print": "The view shows the gates at step 3."}), "slide"),
    (md("Hover over a cell to read its value.", tags=["html-only"]), "notes"),
    (md("## Summary\n\n- one\n- two"), "slide"),
    (md("## Exercises\n\n1. Do it."), "skip"),
    (code("# Solution 1\nprint(3)", tags=["hide-cell"]), "skip"),
    (md("```{dropdown} Answer 1\nThree.\n```"), "skip"),
    (code("print('an exercise cell without a tag')"), "skip"),
]


def made_up() -> dict:
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    state = {"w1": {"model_name": "AnyModel", "model_module": "anywidget", "model_module_version": "~0.9.*",
                    "state": {"_anywidget_id": "seqviz.widgets.made_up.Widget", "_esm": "export default {}"}}}
    return {"cells": [copy.deepcopy(c) for c, _ in CHAPTER],
            "metadata": {"kernelspec": kernel, "widgets": {slides.STATE: {"state": state, "version_major": 2,
                                                                          "version_minor": 0}}},
            "nbformat": 4, "nbformat_minor": 5}


def test_rules_on_a_made_up_chapter():
    nb = made_up()
    assert slides.slide_types(nb["cells"], nb["metadata"]) == [t for _, t in CHAPTER]


def test_a_progress_bar_is_not_shown_and_a_cell_with_nothing_else_goes_to_the_notes():
    state = {"bar": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_l", "IPY_MODEL_p", "IPY_MODEL_r"]}},
             "l": {"model_name": "HTMLModel", "state": {}}, "r": {"model_name": "HTMLModel", "state": {}},
             "p": {"model_name": "FloatProgressModel", "state": {"value": 5, "max": 5}}}
    bar = [dict(WIDGET[0], data={slides.VIEW: {"model_id": "bar", "version_major": 2}})]
    nb = {"cells": [md("# T"), md("## 1.1 S"), code(LONG_CODE, outputs=bar), code("train()", outputs=bar + STREAM)],
          "metadata": {"widgets": {slides.STATE: {"state": state}}}}
    deck, roles = slides.plan(nb)
    assert roles == ["slide", "slide", "notes", "slide"]
    assert [b.kind for b in deck[-1].blocks] == ["code", "output"] and deck[-1].blocks[1].body == STREAM[0]


def test_the_plan_puts_prose_in_the_notes_and_keeps_leads_equations_code_and_widgets():
    deck, roles = slides.plan(made_up())
    assert [s.cell for s in deck] == [k for k, t in enumerate(roles) if t == "slide"]
    by_title = {}
    for s in deck:
        by_title.setdefault(s.title, []).append(s)
    first = by_title["9.1 The first section"][0]
    assert [b.kind for b in first.blocks] == ["md", "code", "output"]  # the lead, then the short cell joined
    assert first.blocks[0].body == "Short intro, as [Vaswani et al., 2017] put it."
    assert any(LONG.strip() in n for n in first.notes) or any(LONG.strip() in n for n in deck[2].notes)
    gate = next(s for s in deck if s.cell == 19)
    assert gate.title == "9.2 The second section" and gate.blocks[0].body == "The gate:"
    assert "\\tag{9.22}" in gate.blocks[1].body and any("where $\\sigma$ squashes." in n for n in gate.notes)
    assert gate.blocks[2].body == "where $\\sigma$ squashes."  # the sentence the lead opened ends on the slide
    widget = next(s for s in deck if s.cell == 20)
    assert widget.blocks[-1].alone and "The view shows the gates at step 3." in widget.notes
    assert "Hover over a cell to read its value." in widget.notes  # the html-only instruction: for the lecturer
    long_code = next(s for s in deck if s.cell == 11)  # cell 13 joined it, cell 15 went to its notes
    assert any(n.startswith("```python\nline_0 = 0") for n in long_code.notes)


def test_only_the_flat_slide_types_may_be_forced():
    with pytest.raises(ValueError, match="slideshow-slide, slideshow--, slideshow-notes, slideshow-skip"):
        slides.slide_types([md("# T"), md("x", tags=["slideshow-fragment"])])
    cells = [md("# T"), md("## 1.1 S"), code("f()", outputs=STREAM, tags=["slideshow-slide"])]
    assert slides.slide_types(cells) == ["slide", "slide", "slide"]  # the author's override beats joining


def test_exercises_heading_after_the_summary_in_one_cell_keeps_the_summary():
    cells = [md("# 1. T"), md("## 1.1 S"), code("f()", outputs=STREAM),
             md("## Summary\n\n- a point\n\n## Exercises\n\n1. Q?"), code("# Solution 1\n1", tags=["hide-cell"]),
             md("```{dropdown} Answer 1\nA.\n```")]
    assert slides.slide_types(cells) == ["slide", "slide", "-", "slide", "skip", "skip"]
    deck, _ = slides.plan({"cells": cells, "metadata": {}})
    assert deck[-1].title == "Summary" and "Q?" not in json.dumps([b.body for s in deck for b in s.blocks])


def test_a_heading_inside_a_code_fence_is_not_a_section():
    cells = [md("# 1. T"), md("## 1.1 S"), md("Prose.\n\n```python\n## not a heading\n```")]
    assert slides.slide_types(cells) == ["slide", "slide", "slide"]  # a code block to show
    assert len(slides.parts(slides._source(cells[2]))) == 1


def test_parts_keep_a_myst_label_with_its_heading_and_every_line_once():
    text = "End of 1.1.\n\n(sec-two)=\n## 1.2 Two\n\nBody.\n\n### 1.2.1 Sub\n\nMore.\n\n#### Not a slide\n\nText."
    assert slides.parts(text) == ["End of 1.1.", "(sec-two)=\n## 1.2 Two\n\nBody.",
                                  "### 1.2.1 Sub\n\nMore.\n\n#### Not a slide\n\nText."]


@pytest.mark.parametrize("text, lead", [
    ("Teacher forcing feeds the gold token. The model then learns.", "Teacher forcing feeds the gold token."),
    ("**Teacher forcing.** The decoder reads the gold token. Then more.",
     "**Teacher forcing.** The decoder reads the gold token."),  # a bold lead-in keeps its sentence
    ("**Teacher forcing.**", "**Teacher forcing.**"),
    ("We use e.g. a GRU (as in Fig. 9.4). Then more.", "We use e.g. a GRU (as in Fig. 9.4)."),
    ("The loss $L = -\\log p. q$ falls to 1.5 by step 3. Next.", "The loss $L = -\\log p. q$ falls to 1.5 by step 3."),
    ("A result (9.22). Another.", "A result (9.22)."),
    ("One sentence without an end", "One sentence without an end"),
    ("Ends with emphasis *here.* Then.", "Ends with emphasis *here.*"),
])
def test_the_lead_is_the_first_sentence_or_a_bold_lead(text, lead):
    assert slides.first_sentence(text) == lead


def test_markdown_blocks_show_equations_figures_tables_and_short_list_items():
    text = ("## 2.1 Gates\n\nThe forget gate decides. It reads $h$.\n\n$$\nf_t = \\sigma(x)\n$$\n\nThen prose.\n\n"
            "- short item\n- " + "A long item that says a lot. " * 6 + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "> **Note.** An aside.\n\n<figure>\n<img src=\"figures/x.svg\" alt=\"x\">\n</figure>\n\n```python\n"
            + LONG_CODE + "\n```")
    head, lead, shown, notes = slides.markdown_blocks(text)
    assert head == (2, "2.1 Gates") and lead.body == "The forget gate decides."
    bodies = [b.body for b in shown]
    assert bodies[0] == "$$\nf_t = \\sigma(x)\n$$"
    assert bodies[1] == "- short item\n- A long item that says a lot."
    assert bodies[2].startswith("| a | b |") and shown[3].flexible and len(shown) == 4
    assert notes[:2] == ["The forget gate decides. It reads $h$.", "Then prose."]
    assert any("A long item that says a lot. A long" in n for n in notes)  # the whole list, for the notes
    assert any(n.startswith("> **Note.**") for n in notes) and any("line_19 = 19" in n for n in notes)


def test_citations_are_rendered_from_the_bibliography_in_the_books_style():
    assert slides.cite("vaswani2017attention") == "[Vaswani et al., 2017]"
    assert slides.cite("jurafsky2021slp, elman1990finding") == "[Jurafsky and Martin, 2021, Elman, 1990]"
    assert slides.cite("vaswani2017attention", "t") == "Vaswani et al. [2017]"
    assert slides.cite("francis1979brown") == "[Francis and Kučera, 1979]"  # LaTeX accents decoded
    with pytest.raises(ValueError, match="has no entry 'nobody2099'"):
        slides.cite("nobody2099")


def test_myst_is_rewritten_for_the_slides(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mod.py").write_text("class A:\n    def f(self):\n        return 1\n\n\ndef g():\n    pass\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "fig.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    figures = {}
    text = ("As {cite:p}`bahdanau2015neural,luong2015effective` and {cite:t}`vaswani2017attention` show; see "
            "{doc}`the data page <../book/data>` and [chapter 3](03_rnn.ipynb#sec) and [Data](../book/data.md).\n\n"
            "```{literalinclude} ../src/mod.py\n:pyobject: A.f\n```\n\n"
            "```{figure} ../fig.svg\n:alt: a <figure>\n\nThe caption.\n```\n\n"
            "```{dropdown} Answer 1\nThree.\n```\n\n```{only} html\nOn screen.\n```\n\n"
            "```{only} latex\nOn paper.\n```")
    out = slides.myst_to_markdown(text, tmp_path / "notebooks", figures)
    assert "[Bahdanau et al., 2015, Luong et al., 2015]" in out and "Vaswani et al. [2017]" in out
    assert "the data page" in out and "{doc}" not in out and "{cite" not in out
    assert "[chapter 3](03_rnn.slides.html#sec)" in out and "[Data](../notebooks/../book/data.html)" in out
    assert "```python\n    def f(self):\n        return 1\n```" in out and "def g" not in out
    assert '<img src="figures/fig.svg" alt="a &lt;figure&gt;">' in out and "The caption." in out
    assert figures == {(tmp_path / "fig.svg").resolve(): "fig.svg"}
    assert "<details><summary>Answer 1</summary>" in out
    assert "On screen." in out and "On paper." not in out


def test_slides_that_do_not_fit_are_split_where_their_blocks_end():
    lines = "\n".join(f"row {i}" for i in range(60))
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * i} |" for i in range(30))
    s = slides.Slide("A title", 2, 7, [slides.Block("md", "Lead.", 34),
                                      slides._output_block({"output_type": "stream", "name": "stdout",
                                                            "text": lines + "\n"}, {}),
                                      slides.Block("md", table, 28 * 31 + 10),
                                      slides._output_block(WIDGET[0], {"w1": {"model_name": "AnyModel"}})],
                     ["the notes"])
    pages = slides.paginate([s])
    assert len(pages) > 4 and all(p.title == "A title" and p.cell == 7 for p in pages)
    assert [p.continued for p in pages] == [False] + [True] * (len(pages) - 1)
    assert pages[0].notes == ["the notes"] and all(p.notes == [] for p in pages[1:])
    for p in pages:
        assert p.height() <= slides._budget(p.title, p.level) + 1e-6 or len(p.blocks) == 1, p
    printed = "".join(b.body["text"] for p in pages for b in p.blocks if b.kind == "output" and not b.flexible)
    assert printed == lines + "\n"  # every line once, in order, none cut
    tables = [b.body for p in pages for b in p.blocks if b.kind == "md" and b.body.startswith("| a")]
    assert len(tables) > 1 and all(t.startswith("| a | b |\n|---|---|\n") for t in tables)  # the head repeated
    assert sum(t.count("\n| ") for t in tables) == 30
    assert pages[-1].blocks == [s.blocks[-1]]  # a widget alone


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
    nb = json.loads(first)
    nb["metadata"]["rise"]["theme"] = "simple"  # fetches Google fonts
    path.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert slides.main(["--check", str(path)]) == 1
    assert slides.main(["--set", str(path)]) == 0 and path.read_bytes() == first
    nb = json.loads(first)
    nb["cells"].insert(5, code("z = 3"))
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert slides.main(["--check", str(path)]) == 1


def test_the_deck_is_flat_offline_with_notes_and_starts_slides_where_the_metadata_does(tmp_path):
    if not (slides.NODE_REVEAL / "dist" / "reveal.js").is_file() or not (slides.VENDOR / "require.js").is_file():
        pytest.skip("node_modules/reveal.js or _vendor/vendor is missing: run `make vendor` (npm ci + vendor_js.py)")
    nb = made_up()
    nb["cells"][10]["outputs"] = [{"output_type": "display_data", "metadata": {},
                                   "data": {"text/html": "<b>shown</b>", "text/plain": "shown"}}]
    path = tmp_path / "09_made_up.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    out = tmp_path / "html" / "slides"
    [page] = slides.build(out, [path])
    text = page.read_text(encoding="utf-8")
    assert "<b>shown</b>" in text and "9.2 The second section" in text
    for gone in ("the book hides me", "Do it.", "Solution 1", "an exercise cell", "%matplotlib", "print('checked')",
                 "vaswani2017attention"):
        assert gone not in text, gone
    sections = re.findall(r"<section\b[^>]*>", text)
    assert "<section" not in text.split("<section", 2)[-1].split("</section>", 1)[0]  # none nested: a flat deck
    # the live metadata's `slide` cells are exactly the cells the static deck starts its slides at
    starts = [int(re.search(r'data-cell="(\d+)"', s).group(1)) for s in sections if "sv-continued" not in s]
    types = slides.slide_types(nb["cells"], nb["metadata"])
    assert sorted(set(starts)) == [k for k, t in enumerate(types) if t == "slide"]
    assert starts == sorted(starts)
    notes = re.findall(r'<aside class="notes">(.*?)</aside>', text, flags=re.S)
    assert any("A paragraph of prose." in n for n in notes) and any("Hover over a cell" in n for n in notes)
    assert any("The view shows the gates at step 3." in n for n in notes)
    assert "[Vaswani et al., 2017]" in text and 'navigationMode: "linear"' in text
    assert "width: 800, height: 450" in text
    refs = re.findall(r'(?:src|href)="([^"#]+)"', text) + re.findall(r'"([^"]+\.js)"', text)
    refs = [r for r in refs if not r.startswith("data:")]
    assert refs and not [r for r in refs if re.match(r"^(https?:)?//", r)], refs
    assert "../notebooks/09_made_up.html" in refs  # the way back to the chapter in the built book
    for ref in set(refs) - {"../notebooks/09_made_up.html"}:  # every file the page loads is there, relative to it
        assert (page.parent / ref.split("?")[0]).resolve().exists(), ref
    assert (out / "reveal.js" / "plugin" / "notes" / "notes.js").is_file()
    assert (out / "index.html").read_text().count("09_made_up.slides.html") == 1


def test_a_widget_on_a_slide_gets_its_slide_view_and_the_book_keeps_its_own():
    """The deck's copy of the widget state hides the beam tree's pruned candidates and caps the next-word bars (the
    translator's beam was 1,774-2,043 px tall on a 720 px slide with them); the notebook's own state is untouched; a
    SLIDE_VIEW trait the widget does not have is an error that says where to fix it."""
    beam = {"model_name": "AnyModel", "state": {"_anywidget_id": "seqviz.widgets.beam_tree.BeamTree",
                                                "show_pruned": True, "step": 7}}
    bars = {"model_name": "AnyModel", "state": {"_anywidget_id": "seqviz.widgets.next_token.NextTokenDistribution",
                                                "top_k": 15}}
    few = copy.deepcopy(bars)
    few["state"]["top_k"] = 5
    other = {"model_name": "AnyModel", "state": {"_anywidget_id": "seqviz.widgets.attention.AttentionHeatmap",
                                                 "layer": 1}}
    state = {"version_major": 2, "version_minor": 0, "state": {"a": beam, "b": bars, "c": few, "d": other}}
    before = copy.deepcopy(state)
    shown = slides.slide_state(state)
    assert state == before, "the notebook's widget state was changed"
    got = {k: m["state"] for k, m in shown["state"].items()}
    assert got["a"]["show_pruned"] is False and got["a"]["step"] == 7
    assert got["b"]["top_k"] == 12 and got["c"]["top_k"] == 5
    assert got["d"] == other["state"]
    assert slides.slide_state(None) is None
    del state["state"]["b"]["state"]["top_k"]
    with pytest.raises(ValueError, match="SLIDE_VIEW sets 'top_k'.*scripts/slides.py"):
        slides.slide_state(state)


def test_a_lead_that_opens_a_sentence_keeps_what_it_introduces():
    # chapter 4: "SLP's example sentence is" and the sentence, a quote, on the slide (not only in the notes)
    _, lead, shown, notes = slides.markdown_blocks(
        "## 4.1 Why\n\nSLP's example sentence is\n\n> The flights were full. (9.21)\n\nTo choose *were*, ...\n\n"
        "> **Note.** An aside.")
    assert lead.body == "SLP's example sentence is"
    assert [b.body for b in shown] == ["> The flights were full. (9.21)"]  # the admonition stays in the notes
    # chapter 8: a sentence that runs through an equation ends on the slide; a closed lead shows no more
    _, lead, shown, _ = slides.markdown_blocks("For $x$ and $y$, build one sequence\n\n$$x, y$$\n\nwhere $x$ is "
                                               "the article. Then prose.\n\n> A quote.")
    assert [b.body for b in shown] == ["$$x, y$$", "where $x$ is the article."]
    _, _, shown, _ = slides.markdown_blocks("A whole sentence.\n\n> A quote.\n\n$$x$$\n\nwhere more.")
    assert [b.body for b in shown] == ["$$x$$"]
    items, shortened = slides._list_items(slides._md().parse(
        "- **Targets first.** " + "On BBC headlines the lead is strong. " * 4), 0,
        ["- **Targets first.** " + "On BBC headlines the lead is strong. " * 4])
    assert items == ["- **Targets first.** On BBC headlines the lead is strong."] and shortened


def _prose(block) -> list[str]:
    """The sentences a slide's Markdown block shows as prose (a paragraph, or each item of a list), or []."""
    body = block.body if block.kind == "md" else ""
    if not body or body.startswith(("$$", "\\begin", "<", "!", "|", "```", ">")):
        return []
    if re.match(r"(?:[-*+]|\d+[.)])\s", body):
        return [re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", line) for line in body.split("\n")]
    return [body]


@pytest.mark.parametrize("path", slides.chapter_notebooks(), ids=lambda p: p.name)
def test_every_slide_keeps_its_sentences(path):
    """Issue 39, item 2, over every deck: no slide ends mid-sentence or shows a bold lead-in without its sentence,
    and a sentence that introduces an example (ending in ':' or 'is') is followed by it: on the same slide, or, for
    a code cell the slide could not hold, as the next slide of the same section."""
    deck = slides.paginate(slides.plan(json.loads(path.read_text(encoding="utf-8")))[0])
    faults = []
    for n, s in enumerate(deck):
        for k, block in enumerate(s.blocks):
            for text in _prose(block):
                where = f"slide {n + 1} ({s.title}): {text[-70:]!r}"
                if re.fullmatch(r"\*\*[^*]+\*\*", text.strip()):
                    faults.append(f"{where}: a bold lead-in without its sentence")
                elif slides.ends_sentence(text) or len(_prose(block)) > 1 and (
                        len(text) <= slides.ITEM_MAX or re.search(r"[;,][*_)]*$", text)):
                    continue  # a whole sentence, or a list item shown whole (a phrase, a clause ending in ';')
                elif k + 1 < len(s.blocks):
                    continue  # what it introduces follows on the slide
                elif not (text.rstrip().endswith(":") and n + 1 < len(deck) and deck[n + 1].title == s.title
                          and deck[n + 1].cell == s.cell + 1 and deck[n + 1].blocks[0].kind == "code"):
                    faults.append(f"{where}: the slide ends mid-sentence (what it introduces is not shown)")
    assert not faults, "\n".join(faults)


@pytest.mark.parametrize("path", slides.chapter_notebooks(), ids=lambda p: p.name)
def test_chapter_slideshow_metadata_is_current(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    stale = slides.stale_cells(nb) + (["the notebook's rise settings"] if slides.rise_stale(nb) else [])
    assert not stale, (f"{path.name}: slideshow metadata missing or stale in cells {stale}: run "
                       f"`python scripts/slides.py --set notebooks/{path.name}`")
