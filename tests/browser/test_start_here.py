"""A newcomer is told how to start where they land (issue 39, item 9): the book's first page says, in its first screen,
how to read it (chapter 1 first), run it (Colab, Binder, `make lab`) and present it (the slides), and every chapter
page's slides button says "Slides" in words beside its icon, at 1,280 and at 390 px.

Before: how to run the book was two screens down the intro, nothing said "start with chapter 1", the slides were
never mentioned, and the only way to them was an unlabelled chalkboard icon."""
from __future__ import annotations

import pytest

from svbrowser import BOOK

SIZES = [(1280, 900), (390, 844)]


@pytest.mark.parametrize("width, height", SIZES)
def test_the_first_page_says_how_to_read_run_and_present_in_its_first_screen(open_page, width, height):
    page, log = open_page("book/intro.html", width=width, height=height)
    section = page.locator("section#start-here")
    assert section.count() == 1, "the intro has no 'Start here' section"
    top = section.bounding_box()["y"]
    # on a phone the theme's header and the book's title come first: the section starts within the first screen
    assert top < height, f"'Start here' starts at {top:.0f} px, below the first {height} px screen"
    text = section.inner_text()
    for words in ("Read", "chapter 1", "Run", "Colab", "Binder", "make lab", "Present", "Slides"):
        assert words in text, f"'Start here' does not say {words!r}"
    # its links lead where they say
    ch1 = section.locator("a", has_text="chapter 1")
    assert ch1.get_attribute("href").split("#")[0].endswith("notebooks/01_ngrams.html")
    decks = section.locator("a", has_text="all decks")
    assert decks.get_attribute("href") == "../slides/index.html"
    assert (BOOK / "slides" / "index.html").is_file(), "run `make book`: the slides are missing"
    assert log.errors == []


@pytest.mark.parametrize("width, height", SIZES)
def test_the_slides_button_has_a_visible_label(open_page, width, height):
    page, log = open_page("notebooks/01_ngrams.html", width=width, height=height)
    button = page.locator("a.btn-slides-button")
    assert button.count() == 1
    label = button.locator(".btn__text-container")
    assert label.count() == 1 and label.inner_text().strip() == "Slides", "the slides button shows no word"
    box = label.bounding_box()
    assert box and box["width"] > 20 and box["height"] > 8, f"the 'Slides' label is not drawn at {width} px: {box}"
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"the 'Slides' label is off screen at {width} px"
    # and the label pushes no other header button off the screen (at 390 px it did, by 11 px, before the CSS for it)
    off = page.evaluate("""w => Array.from(document.querySelectorAll('.header-article-items .btn'))
        .filter(e => e.offsetParent).map(e => [e.className, e.getBoundingClientRect().right])
        .filter(([, r]) => r > w + 0.5)""", width)
    assert off == [], f"header buttons past the {width} px screen: {off}"
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    assert log.errors == []
