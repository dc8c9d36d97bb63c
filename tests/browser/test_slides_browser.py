"""The static decks (scripts/slides.py --build, run by `make book` into _build/html/slides/) in chromium, as a lecturer
projects them at 1,280 x 720: every slide of every deck fits the window, ArrowRight reaches every slide in order,
citations are rendered (no raw BibTeX key), widget text is at least 16 px, each deck has speaker notes, it loads
offline with reveal.js and the widget JS served from the book itself, and a widget on a slide is drawn and answers
the mouse and its controls. A slide is measured with its widgets drawn whole (every scroller unrolled) against the
deck's height, so a widget fits its slide rather than scrolling in a box the slide cuts."""
from __future__ import annotations

import json
import re

import pytest

from svbrowser import BOOK, ROOT, wait_until_rendered

CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
VIEWPORT = {"width": 1280, "height": 720}
MIN_WIDGET_PX = 16.0
BIB_KEYS = sorted(set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "book" / "references.bib").read_text(encoding="utf-8"),
                                 re.M)))

# Records, for every canvas, the smallest font any fillText/strokeText drew with (in canvas pixels, the context's
# transform applied), so the test can turn it into screen pixels from the canvas's size on screen.
CANVAS_FONTS = """(() => {
  const P = CanvasRenderingContext2D.prototype;
  for (const name of ["fillText", "strokeText"]) {
    const draw = P[name];
    P[name] = function (text, ...rest) {
      if (String(text).trim()) {
        const m = /([\\d.]+)px/.exec(this.font), t = this.getTransform();
        const px = m ? parseFloat(m[1]) * Math.hypot(t.a, t.b) : 10;
        const c = this.canvas;
        c.__svFont = Math.min(c.__svFont || Infinity, px);
      }
      return draw.call(this, text, ...rest);
    };
  }
})();"""

# What the current slide holds: how far its content reaches past its box and past the window, the smallest widget
# text on screen (HTML, SVG and canvas text), its visible text and its speaker notes.
MEASURE = """() => {
  const slide = Reveal.getCurrentSlide();
  const view = { w: window.innerWidth, h: window.innerHeight };
  const box = slide.getBoundingClientRect();
  const within = (r, b) => Math.max(0, b.left - r.left, r.right - b.right, b.top - r.top, r.bottom - b.bottom);
  let past_box = 0, past_window = within(box, { left: 0, top: 0, right: view.w, bottom: view.h });
  const clipped = (el) => {
    for (let a = el.parentElement; a && a !== slide; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX !== "visible" || s.overflowY !== "visible") return a;
    }
    return null;
  };
  const unseen = (el) => {  // visually hidden: for screen readers (MathJax's MathML, a widget's value table)
    for (let a = el; a && a !== slide; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.clip !== "auto" || s.clipPath !== "none") return true;
    }
    return false;
  };
  const cut = [], scrolls = new Set();
  const view_box = { left: 0, top: 0, right: view.w, bottom: view.h };
  for (const el of slide.querySelectorAll("*")) {
    if (el.closest("aside.notes")) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    const s = getComputedStyle(el);
    if (s.visibility === "hidden" || unseen(el)) continue;
    const holder = clipped(el);
    const name = () => `${el.tagName.toLowerCase()}.${String(el.className.baseVal ?? el.className).split(" ")[0]}`;
    if (!holder) {
      past_box = Math.max(past_box, within(r, box));
      past_window = Math.max(past_window, within(r, view_box));
    } else {
      const hs = getComputedStyle(holder);
      // a widget's (or a widget slide's) scroller that the keyboard reaches: deliberate
      const deliberate = holder.closest(".seqviz, .sv-widget") && holder.tabIndex >= 0 &&
                         /auto|scroll/.test(hs.overflowX + hs.overflowY);
      if (deliberate && (holder.scrollHeight > holder.clientHeight + 1 || holder.scrollWidth > holder.clientWidth + 1))
        scrolls.add(holder);
      const by = within(r, holder.getBoundingClientRect());
      const where = `${holder.tagName.toLowerCase()}.${String(holder.className).split(" ")[0]}`;
      if (!deliberate && by > 1.5) cut.push(`${name()} ${by.toFixed(0)} px outside ${where}`);
    }
    if (el.tagName === "PRE" && el.scrollWidth > el.clientWidth + 1)
      cut.push(`${name()}: a line ${el.scrollWidth - el.clientWidth} px too long`);
  }
  // The slide's height with its widgets drawn whole (logical px, as the deck's HEIGHT): the lowest bottom of anything
  // shown, each scroller unrolled (its top plus its scrollHeight), MathJax's inner parts and visually hidden text left
  // out (the issue measured the slide's scrollHeight, which MathJax's hidden MathML inflates on slides of equations).
  // And every scroller (a widget's own or its slide box) must lie whole inside the slide's body, clear of the
  // navigation arrows: a box the slide cuts, or one under the arrows, cannot be scrolled.
  const ratio = box.height / slide.offsetHeight;
  const body = slide.querySelector(".sv-body"), bb = body ? body.getBoundingClientRect() : box;
  const arrows = Array.from(document.querySelectorAll(".reveal .controls button"))
    .filter(b => b.offsetParent && getComputedStyle(b).visibility !== "hidden").map(b => b.getBoundingClientRect());
  const meets = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  let reach = 0;
  const boxed = [];
  for (const el of slide.querySelectorAll("*")) {
    if (el.closest("aside.notes") || (el.parentElement && el.parentElement.closest("mjx-container"))) continue;
    if (el.checkVisibility && !el.checkVisibility({ contentVisibilityAuto: true, visibilityProperty: true })) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || unseen(el)) continue;
    reach = Math.max(reach, (r.bottom - box.top) / ratio);
    const s = getComputedStyle(el);
    if (!/auto|scroll/.test(s.overflowX + s.overflowY)) continue;
    const zoom = el.offsetHeight ? r.height / el.offsetHeight : ratio;
    reach = Math.max(reach, (r.top - box.top + el.scrollHeight * zoom) / ratio);
    const where = `${el.tagName.toLowerCase()}.${String(el.className.baseVal ?? el.className).split(" ")[0]}`;
    const out = within(r, bb) / ratio, scrolls = el.scrollHeight > el.clientHeight + 1 ||
                                                 el.scrollWidth > el.clientWidth + 1;
    if (out > 1.5) boxed.push(`the scroller ${where} ${out.toFixed(0)} px outside the slide`);
    if (scrolls && arrows.some(a => meets(r, a))) boxed.push(`the scroller ${where} lies under the navigation arrows`);
  }
  let widget_px = Infinity, widget_text = "";
  for (const w of slide.querySelectorAll(".seqviz")) {
    const walker = document.createTreeWalker(w, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.textContent.trim() || !el) continue;
      const r = el.getBoundingClientRect(), s = getComputedStyle(el);
      if (r.width < 2 || r.height < 2 || s.visibility === "hidden" || parseFloat(s.opacity) === 0) continue;
      if (unseen(el)) continue;  // visually hidden (for screen readers)
      let scale;
      if (el instanceof SVGElement) {
        const m = el.getScreenCTM();
        scale = m ? Math.hypot(m.a, m.b) : 1;
      } else {
        scale = el.offsetWidth ? r.width / el.offsetWidth : (el.offsetHeight ? r.height / el.offsetHeight : 1);
      }
      const px = parseFloat(s.fontSize) * scale;
      if (px < widget_px) { widget_px = px; widget_text = n.textContent.trim().slice(0, 40); }
    }
    for (const c of w.querySelectorAll("canvas")) {
      const r = c.getBoundingClientRect();
      if (c.__svFont && c.width && r.width > 2) {
        const px = c.__svFont * r.width / c.width;
        if (px < widget_px) { widget_px = px; widget_text = "(canvas text)"; }
      }
    }
  }
  const notes = slide.querySelector("aside.notes");
  const text = Array.from(slide.children).filter(e => !e.matches("aside.notes")).map(e => e.innerText).join("\\n");
  return { index: Reveal.getSlidePastCount(), total: Reveal.getTotalSlides(), indices: Reveal.getIndices(),
           past_box, past_window, cut, scrollers: scrolls.size, widget_text, reach, height: slide.offsetHeight,
           boxed,
           widget_px: widget_px === Infinity ? null : widget_px, text,
           notes: notes ? notes.textContent.trim().length : 0, widgets: slide.querySelectorAll(".seqviz").length,
           fit: slide.getAttribute("data-fit"), title: (slide.querySelector(".sv-title") || {}).textContent || "" };
}"""


# Whether the current slide's fit (its scale and any narrowing of its widget) stays the same for three frames.
SETTLED = """() => new Promise(done => {
  const s = Reveal.getCurrentSlide(), w = s.querySelector(".sv-widget");
  const now = () => `${s.getAttribute("data-fit")} ${w ? w.style.maxWidth + " " + w.offsetHeight : ""}`;
  const was = now();
  requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(() => done(now() === was))));
})"""


# Slide `n`'s measurements once it has settled, in one call: up to 5 s for the deck to be at slide n (a press of
# ArrowRight went there: if not, MEASURE says where it is); the slide's widgets re-lay out on "resize", then the fit
# runs in a frame (so 60 ms); then until the fit settles (a heatmap drawn narrower lays itself out again, then is
# fitted), at most 30 tries; then MEASURE.
SETTLE_AND_MEASURE = """async (n) => {
  const until = performance.now() + 5000;
  while (Reveal.getSlidePastCount() !== n && performance.now() < until) await new Promise(r => setTimeout(r, 10));
  await new Promise(r => setTimeout(r, 60));
  const settled = """ + SETTLED + """;
  for (let i = 0; i < 30; i++) if (await settled()) break;
  return (""" + MEASURE + """)();
}"""


def open_deck(open_page, chapter: str, *, fonts: bool = True):
    """The chapter's deck in a page at VIEWPORT, Reveal ready; with ``fonts``, its canvases record their fonts
    (CANVAS_FONTS): the page first opens the decks' index (a tiny page), so the script is in place before the deck
    loads, once."""
    page_path = f"slides/{chapter}.slides.html"
    if not (BOOK / page_path).is_file():
        pytest.fail(f"{BOOK / page_path} is missing: run `make book` (or `make slides`)", pytrace=False)
    if fonts:
        page, log = open_page("slides/index.html", width=VIEWPORT["width"], height=VIEWPORT["height"])
        page.add_init_script(CANVAS_FONTS)  # from the next load on
        page.goto(page.url.rsplit("/", 1)[0] + f"/{chapter}.slides.html", wait_until="load")
        wait_until_rendered(page)
    else:
        page, log = open_page(page_path, width=VIEWPORT["width"], height=VIEWPORT["height"])
    page.wait_for_function("() => window.Reveal && window.Reveal.isReady()", timeout=30_000)
    return page, log


def walk(page) -> list[dict]:
    """Every slide's measurements, reached by ArrowRight from the first; fails if a press does not go to the next."""
    page.keyboard.press("Home")
    page.wait_for_function("() => Reveal.getSlidePastCount() === 0")
    seen = []
    total = page.evaluate("() => Reveal.getTotalSlides()")
    for step in range(total):
        seen.append(page.evaluate(SETTLE_AND_MEASURE, step))
        assert seen[-1]["index"] == step, (f"ArrowRight went from slide {seen[-2]['index'] if step else '?'} to "
                                           f"{seen[-1]['index']} of {total}, not to {step}")
        if step < total - 1:
            page.keyboard.press("ArrowRight")
    return seen


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_slide_fits_reads_and_is_reached_by_arrow_right(open_page, chapter):
    """Every slide, its widgets drawn whole, is no taller than the deck and no scroller of it is cut by the slide or
    lies under the arrows. Before (issue 39, item 3) a widget taller than its slide scrolled in a box the slide cut,
    under the navigation arrows: the translator's beam trees were 1,752 and 2,021 px tall in a 450 px deck, the LSTM
    gates 559, the positional matrix 906, deck 07's attention steps 910 (a row per key, 40 keys), deck 05's
    German-English heatmaps 533 and 486 (32 px cells); 14 slides in all."""
    page, log = open_deck(open_page, chapter)
    slides = walk(page)
    assert len(slides) >= 8, f"{chapter}: only {len(slides)} slides"
    # a flat sequence: no vertical stacks, so ArrowRight alone has walked them all (walk() checked each step)
    assert all(s["indices"]["v"] == 0 for s in slides), "a vertical sub-slide: the decks are one flat sequence"
    where = lambda s: f"slide {s['index'] + 1}/{s['total']} ({s['title'][:50]!r})"  # noqa: E731
    too_big = [f"{where(s)}: {s['past_box']:.0f} px past its box, {s['past_window']:.0f} px past the window"
               for s in slides if s["past_box"] > 1.5 or s["past_window"] > 1.5]
    assert not too_big, f"{chapter}: slides that do not fit {VIEWPORT}:\n" + "\n".join(too_big)
    tall = [f"{where(s)}: {s['reach']:.0f} px tall with its widgets drawn whole, the deck {s['height']} px"
            for s in slides if s["reach"] > s["height"] + 1.5]
    assert not tall, f"{chapter}: slides taller than the deck (a widget scrolling in a box the slide cuts):\n" + \
        "\n".join(tall)
    boxed = [f"{where(s)}: {x}" for s in slides for x in s["boxed"][:3]]
    assert not boxed, f"{chapter}: scrollers the slide cuts or the arrows cover:\n" + "\n".join(boxed)
    scrolling = [f"{where(s)}: {x}" for s in slides for x in s["cut"][:3]]
    assert not scrolling, f"{chapter}: content cut off inside a box:\n" + "\n".join(scrolling)
    raw = [f"{where(s)}: [{k}]" for s in slides for k in BIB_KEYS if k in s["text"]] + [
        f"{where(s)}: {{cite}}" for s in slides if "{cite" in s["text"]]
    assert not raw, f"{chapter}: citation keys shown raw:\n" + "\n".join(raw)
    small = [f"{where(s)}: {s['widget_px']:.1f} px ({s['widget_text']!r})" for s in slides
             if s["widget_px"] is not None and s["widget_px"] < MIN_WIDGET_PX - 0.05]
    assert not small, f"{chapter}: widget text under {MIN_WIDGET_PX} px on screen:\n" + "\n".join(small)
    assert sum(s["notes"] for s in slides) > 500, f"{chapter}: the speaker notes are (almost) empty"
    widgets = sum(s["widgets"] for s in slides)
    stored = _seqviz_views(chapter)
    assert widgets >= stored, f"{chapter}: {stored} seqviz widgets in the chapter, {widgets} drawn on the slides"
    assert log.external == [], f"requests outside 127.0.0.1: {log.external}"
    assert log.errors == [], "\n".join(log.errors)


VIEW_KEY = "application/vnd.jupyter.widget-view+json"


def _seqviz_views(chapter: str) -> int:
    """How many outputs of the chapter's shown cells are seqviz widgets (the slides must draw each)."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    models = state.get("state", {})
    n = 0
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("slideshow", {}).get("slide_type") == "skip":
            continue
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(VIEW_KEY)
            kind = models.get(view["model_id"], {}).get("state", {}).get("_anywidget_id", "") if view else ""
            n += kind.startswith("seqviz.widgets.")
    return n


CHAPTER = "06_transformer"


@pytest.fixture
def deck(open_page):
    page, log = open_deck(open_page, CHAPTER, fonts=False)  # these tests read no canvas font
    yield page, log
    assert log.external == [], f"requests outside 127.0.0.1: {log.external}"
    assert log.errors == [], "\n".join(log.errors)
    assert log.dialogs == []


def _go_to(page, selector: str) -> None:
    """Step with ArrowRight until a slide holds ``selector``."""
    for _ in range(300):
        if page.evaluate("s => !!Reveal.getCurrentSlide().querySelector(s)", selector):
            return
        if page.evaluate("() => Reveal.isLastSlide()"):
            break
        page.keyboard.press("ArrowRight")
    raise AssertionError(f"no slide holds {selector}")


def canvas_sig(locator) -> str:
    return locator.evaluate("c => c.toDataURL()")


def test_a_widget_on_a_slide_is_drawn_and_reacts(deck):
    page, log = deck
    # the widget JS came from the book's own vendor/ folder and reveal.js from the slides' own copy
    paths = {r.split("?")[0].split("/", 3)[-1] for r in log.requests if r.startswith("http")}
    for needed in ("vendor/require.js", "vendor/seqviz-offline.js", "vendor/html-manager/embed-amd.js",
                   "vendor/anywidget/index.js", "slides/reveal.js/dist/reveal.js",
                   "slides/reveal.js/plugin/notes/notes.js"):
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


def test_speaker_notes_hold_the_prose_and_equations_stay_on_the_slides(deck):
    """The notes plugin is loaded and a section's slide keeps its equations (typeset) while its paragraphs are in
    its notes."""
    page, _ = deck
    assert page.evaluate("() => !!Reveal.getPlugin('notes')"), "reveal's notes plugin is not loaded"
    info = page.evaluate("""() => Array.from(document.querySelectorAll('.reveal .slides > section')).map(s => ({
        title: (s.querySelector('.sv-title') || {}).textContent || '',
        math: s.querySelectorAll(':scope > .sv-body mjx-container').length,
        notes: (s.querySelector('aside.notes') || {}).textContent || '' }))""")
    assert sum(s["math"] for s in info) >= 5, "fewer than five typeset equations on the slides"
    first = next(s for s in info if s["title"].startswith("6.1"))
    assert len(first["notes"]) > 300, first


@pytest.mark.parametrize("chapter", CHAPTERS)
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
