"""The static slides (scripts/slides.py --build, run by `make book` into _build/html/slides/) in chromium: a chapter's
slideshow loads offline with reveal.js and the widget JS served from the book itself, the arrow keys step through its
sections in order, and a widget on a slide is drawn and answers the mouse and its controls."""
from __future__ import annotations

import json
import re

import pytest

from svbrowser import BOOK, ROOT

CHAPTER = "06_transformer"
PAGE = f"slides/{CHAPTER}.slides.html"


def section_titles(chapter: str) -> list[str]:
    """The chapter's title and its ## headings before the exercises, in order: what the horizontal slides open with."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    titles = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in "".join(cell["source"]).split("\n"):
            m = re.match(r"^(#{1,2})\s+(.*\S)\s*$", line)
            if m:
                if m.group(2).startswith("Exercises"):
                    return titles
                titles.append(m.group(2))
    return titles


@pytest.fixture
def slides(open_page):
    if not (BOOK / PAGE).is_file():
        pytest.fail(f"{BOOK / PAGE} is missing: run `make book` (or `make slides`)", pytrace=False)
    page, log = open_page(PAGE)
    page.wait_for_function("() => window.Reveal && window.Reveal.isReady()", timeout=30_000)
    yield page, log
    assert log.external == [], f"requests outside 127.0.0.1: {log.external}"
    assert log.errors == [], "\n".join(log.errors)
    assert log.dialogs == []


def present_heading(page) -> str:
    return page.evaluate("""() => {
      const h = Reveal.getCurrentSlide().querySelector('h1, h2, h3');
      return h ? h.textContent.replace(/\\u00b6/g, '').trim() : '';
    }""")


def test_arrow_keys_step_through_three_sections_in_order(slides):
    page, _ = slides
    titles = section_titles(CHAPTER)
    assert len(titles) >= 4, titles
    assert page.evaluate("() => Reveal.getIndices().h") == 0
    assert present_heading(page) == titles[0]
    for step in (1, 2, 3):
        page.keyboard.press("ArrowRight")
        page.wait_for_function("h => Reveal.getIndices().h === h", arg=step)
        assert present_heading(page) == titles[step], (step, titles)
    # one horizontal slide per section, and nothing from the exercises
    assert page.evaluate("() => document.querySelectorAll('.reveal .slides > section').length") == len(titles)
    assert "Solution" not in page.locator(".reveal .slides").text_content()


def _go_to(page, selector: str) -> None:
    """Step with the space bar (slides and fragments in reading order) until ``selector`` is shown."""
    for _ in range(200):
        if page.evaluate("""s => { const el = Reveal.getCurrentSlide().querySelector(s);
                                   return !!el && !el.closest('.fragment:not(.visible)'); }""", selector):
            return
        page.keyboard.press("Space")  # the next slide or fragment, in reading order
    raise AssertionError(f"no slide holds {selector}")


def canvas_sig(locator) -> str:
    return locator.evaluate("c => c.toDataURL()")


def test_a_widget_on_a_slide_is_drawn_and_reacts(slides):
    page, log = slides
    # the widget JS came from the book's own vendor/ folder and reveal.js from the slides' own copy
    paths = {r.split("?")[0].split("/", 3)[-1] for r in log.requests if r.startswith("http")}
    for needed in ("vendor/require.js", "vendor/seqviz-offline.js", "vendor/html-manager/embed-amd.js",
                   "vendor/anywidget/index.js", "slides/reveal.js/dist/reveal.js"):
        assert needed in paths, f"{needed} was not loaded from the book (requests: {sorted(paths)})"

    _go_to(page, ".sv-pos canvas")
    root = page.locator(".present .sv-pos").first
    canvas = root.locator("canvas.sv-enc")
    canvas.wait_for(state="visible")
    box = canvas.bounding_box()
    assert box and box["width"] > 50 and box["height"] > 50, box
    blank = canvas.evaluate("c => { const b = document.createElement('canvas'); b.width = c.width; "
                            "b.height = c.height; return b.toDataURL(); }")
    assert canvas_sig(canvas) != blank, "the widget's canvas is blank on its slide"
    # hovering reads out the value under the mouse, and a different cell gives a different read-out
    readout = root.locator(".sv-hover")
    texts = []
    for fx, fy in ((0.2, 0.3), (0.7, 0.6)):
        page.mouse.move(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
        page.wait_for_function("el => el.textContent.trim().length > 0", arg=readout.element_handle())
        texts.append(readout.text_content())
    assert texts[0] != texts[1], texts
    # a control changes what is drawn
    before = canvas_sig(canvas)
    d_model = "128" if root.get_attribute("data-d-model") != "128" else "64"
    root.locator("input.sv-d-model").fill(d_model)
    assert root.get_attribute("data-d-model") == d_model
    assert canvas_sig(canvas) != before, "changing d_model did not redraw the encoding"


@pytest.mark.parametrize("chapter", sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
def test_each_chapter_page_links_to_its_slides(open_page, chapter):
    """The header button scripts/sphinx_slides_link.py adds to every chapter page opens that chapter's slideshow."""
    page, log = open_page(f"notebooks/{chapter}.html")
    button = page.locator("a.btn-slides-button")
    assert button.count() == 1, f"notebooks/{chapter}.html has no slides button in its header"
    icon = button.locator(".fa-person-chalkboard")                                   # Font Awesome draws it (svg)
    assert icon.count() == 1 and icon.bounding_box()["width"] > 4
    href = button.get_attribute("href")
    assert href == f"../slides/{chapter}.slides.html", href
    assert (BOOK / "slides" / f"{chapter}.slides.html").is_file(), "run `make book`: the slides are missing"
    with page.context.expect_page() as opened:                                  # the theme opens it in a new tab
        button.click()
    slides = opened.value
    slides.wait_for_function("() => window.Reveal && window.Reveal.isReady()", timeout=30_000)
    assert slides.url.split("#")[0].split("?")[0].endswith(f"/slides/{chapter}.slides.html"), slides.url
    assert log.external == [] and log.errors == [], (log.external, log.errors)
