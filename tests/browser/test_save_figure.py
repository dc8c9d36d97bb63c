"""Every widget saves what it shows as a PNG or an SVG file, offline (issue 39 item 10; bertviz's longest-open
requests were "save as image" and vector export for papers). The save bar is the shared prelude's (saveBar in
static/_prelude.js), so each widget kind gets the same two buttons, "Save PNG" and "Save SVG".

For every widget of the built "Visual tools" page (every kind, live ones included) and every gallery widget (the
package's current JS, at 1,280 and 390 px): the button, pressed by keyboard or clicked, downloads a file named from the
widget's title; the PNG decodes at PNG_SCALE (2) times the figure's size and is not blank; the SVG parses, stands
alone (no stylesheet, no reference outside itself, drawn alone it is not blank) and holds every label the widget shows.
The bar itself passes axe-core and fits the column at 390 px. The same buttons in JupyterLab are tested in
test_jupyterlab.py (test_widgets_save_their_figure_in_jupyterlab, with check_widget from here), which holds every test
that needs a JupyterLab server so that one server serves them all.

The built page shows the widget JS its notebook stored: until the notebooks run again, run the page test with
SEQVIZ_CURRENT_JS=1."""
from __future__ import annotations

import base64
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from gallery import widgets
from svbrowser import layout, show_gallery

PAGE = "book/visual_tools.html"
SCALE = 2  # PNG_SCALE in _prelude.js
SVG_NS = "{http://www.w3.org/2000/svg}"

# The texts a reader sees in a widget's figure: every drawn text node outside its controls, the live bar, the save
# bar and screen-reader text (HTML, and the <text> of an inline <svg>), whitespace collapsed.
SHOWN_TEXT = """root => {
  const skip = ".sv-controls, .sv-live, .sv-save, .sv-sr, input, select, textarea, option, title";
  const out = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const e = n.parentElement;
    const t = n.data.replace(/\\s+/g, " ").trim();
    if (!t || e.closest(skip)) continue;
    if (!e.checkVisibility({ visibilityProperty: true, contentVisibilityAuto: true })) continue;
    if (getComputedStyle(e).opacity === "0") continue;
    out.push(t);
  }
  return out;
}"""

# The SVG file drawn alone, in a blank page: [natural width, natural height, share of pixels that are not white].
DRAW_ALONE = """async (b64) => {
  const img = new Image();
  img.src = "data:image/svg+xml;base64," + b64;
  await img.decode();
  const c = document.createElement("canvas");
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext("2d");
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let ink = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240) ink++;
  return [img.naturalWidth, img.naturalHeight, ink / (d.length / 4)];
}"""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80].rstrip("-")


def save(page, root, ext: str, keyboard: bool):
    """Press (Enter) or click the widget's Save PNG / Save SVG button; (suggested file name, bytes)."""
    button = root.locator(f"button.sv-save-{ext}")
    assert button.text_content() == f"Save {ext.upper()}"
    with page.expect_download(timeout=20_000) as dl:
        if keyboard:
            button.focus()
            page.keyboard.press("Enter")
        else:
            button.click()
    d = dl.value
    with open(d.path(), "rb") as f:
        data = f.read()
    return d.suggested_filename, data


def check_png(name: str, data: bytes, size: tuple[int, int]) -> list[str]:
    img = Image.open(io.BytesIO(data))
    img.load()
    problems = []
    if img.format != "PNG":
        problems.append(f"{name}: not a PNG ({img.format})")
    if img.size != (size[0] * SCALE, size[1] * SCALE):
        problems.append(f"{name}: PNG is {img.size}, the figure is {size} at {SCALE}x")
    rgb = img.convert("RGB")
    found = rgb.getcolors(255)  # None past 255 colours (PIL stops counting there: cheap on a large figure)
    colours = len(found) if found is not None else 256
    px = np.asarray(rgb, dtype=np.int16)
    bg = px[-1, 0]  # the bottom-left corner: the page's background
    ink = float((np.abs(px - bg).max(-1) > 24).mean())
    if colours < 8 or ink < 0.03:
        problems.append(f"{name}: PNG looks blank ({colours if found is not None else 'over 255'} colours, "
                        f"{ink:.1%} ink)")
    return problems


def check_svg(page, name: str, data: bytes, size: tuple[int, int], shown: list[str], title: str) -> list[str]:
    problems = []
    text = data.decode("utf-8")
    svg = ET.fromstring(data)  # raises if it does not parse
    if svg.tag != f"{SVG_NS}svg":
        problems.append(f"{name}: root element {svg.tag}")
    if (int(svg.get("width")), int(svg.get("height"))) != size:
        problems.append(f"{name}: SVG is {svg.get('width')}x{svg.get('height')}, the figure {size}")
    for bad in ("var(", "color-mix", "color(", "currentcolor", "http://127", "https://", "blob:", "class="):
        if bad in text.lower():
            problems.append(f"{name}: the SVG needs the page ({bad!r} in it)")
    words = " ".join(" ".join("".join(t.itertext()).split()) for t in svg.iter(f"{SVG_NS}text"))
    missing = [t for t in shown if t not in words]
    if missing:
        problems.append(f"{name}: {len(missing)} of {len(shown)} labels missing from the SVG, e.g. {missing[:5]}")
    if title and title not in words:
        problems.append(f"{name}: title {title!r} missing")
    w, h, ink = page.evaluate(DRAW_ALONE, base64.b64encode(data).decode("ascii"))
    if (w, h) != size or ink < 0.03:
        problems.append(f"{name}: the SVG drawn alone is {w}x{h} with {ink:.1%} ink")
    return problems


def check_widget(page, blank, root, label: str) -> list[str]:
    """Save one widget both ways (PNG by keyboard, SVG by mouse) and check both files; the problems found."""
    root.scroll_into_view_if_needed()
    title = root.locator(":scope > .sv-title").text_content() or ""
    stem = slug(title or root.get_attribute("aria-label"))
    width = root.evaluate("r => Math.ceil(r.getBoundingClientRect().width)")
    shown = root.evaluate(SHOWN_TEXT)
    problems = []
    name, png = save(page, root, "png", keyboard=True)
    if name != f"{stem}.png":
        problems.append(f"{label}: PNG named {name!r}, not {stem}.png")
    name, svg = save(page, root, "svg", keyboard=False)
    if name != f"{stem}.svg":
        problems.append(f"{label}: SVG named {name!r}, not {stem}.svg")
    height = int(ET.fromstring(svg).get("height"))
    problems += check_png(label, png, (width, height))
    problems += check_svg(blank, label, svg, (width, height), shown, title)
    status = root.locator(".sv-save-status").text_content()
    if not re.fullmatch(rf"Saved {re.escape(stem)}\.svg \(\d+ (KB|bytes)\)", status):
        problems.append(f"{label}: status says {status!r}")
    print(f"{label}: {width}x{height} px, PNG {len(png) // 1024} KB, SVG {len(svg) // 1024} KB, {len(shown)} labels")
    return problems


def test_every_widget_on_the_visual_tools_page_saves_its_figure(open_page, browser):
    """Before: no widget could be saved; a reader took a screenshot (bitmap, cut at the window, controls and all)."""
    page, log = open_page(PAGE)
    blank = browser.new_page()
    roots = page.locator(".seqviz")
    kinds = {}
    problems = []
    for k in range(roots.count()):
        root = roots.nth(k)
        kind = root.get_attribute("class").split()[1]
        kinds[kind] = kinds.get(kind, 0) + 1
        problems += check_widget(page, blank, root, f"{kind} #{kinds[kind]}")
    blank.close()
    assert set(kinds) == {"sv-att", "sv-steps", "sv-beam", "sv-lstm", "sv-next", "sv-pos"}, kinds
    assert not problems, "\n".join(problems)
    assert log.errors == [] and log.external == [], (log.errors, log.external)


def axe_by_widget(page, names: list[str]) -> list[str]:
    """axe-core over every save bar at once (one run: each costs about a second), each violation told per widget
    (``names[k]`` for the bar inside ``data-save-audit=k``) from its nodes."""
    bars = ".seqviz[data-save-audit] .sv-save"
    assert page.locator(bars).count() == len(names), f"{page.locator(bars).count()} save bars for {len(names)} widgets"
    problems = []
    for k, found in layout.axe_by_owner(page, bars, "data-save-audit").items():
        for v in found:
            for who in ([names[int(k)]] if k is not None else [n["target"] for n in v["nodes"]]):
                line = f"{who}: axe {v['id']} ({v['impact']})"
                if line not in problems:
                    problems.append(line)
    return problems


@pytest.mark.parametrize("width", [1280, 390])
def test_every_gallery_widget_saves_its_figure_and_the_bar_fits_and_passes_axe(open_page, browser, width):
    """Before: no Save PNG / Save SVG button in any widget. At 390 px the bar wraps inside the column."""
    page, log = open_page("book/notation.html", width=width)
    made = widgets()
    show_gallery(page, made)
    blank = browser.new_page()
    roots = page.locator(".seqviz")
    problems = []
    for k, name in enumerate(made):
        root = roots.nth(k)
        bar = root.locator(".sv-save")
        assert bar.get_attribute("role") == "group" and bar.get_attribute("aria-label") == "Save the figure"
        fits = bar.evaluate("b => { const c = b.closest('article').getBoundingClientRect(); "
                            "return [...b.children].every(e => e.getBoundingClientRect().right <= c.right + 1); }")
        if not fits:
            problems.append(f"{name}: the save bar sticks out of the column at {width} px")
        problems += check_widget(page, blank, root, name)
        root.evaluate("(e, k) => e.setAttribute('data-save-audit', k)", str(k))
    blank.close()
    problems += axe_by_widget(page, list(made))
    assert not problems, "\n".join(problems)
    assert log.errors == [] and log.external == [], (log.errors, log.external)


def test_a_live_widget_saves_what_the_model_drew_for_the_readers_input(open_page, browser):
    """After a live run (the date model in the page, on a date the reader typed) the files show that run, not the
    recorded example: the cross-attention grid's and the beam tree's SVGs change and hold every label then shown
    (the new search's tokens); the live bar (its field, buttons and status) is not in the figure. Before: nothing to
    save, and a screenshot held the live panel too."""
    from test_live_widgets import run_live, widgets as live_widgets

    page, log = open_page(PAGE)
    w = live_widgets(page)
    before = {name: save(page, w[name], "svg", keyboard=False)[1] for name in ("cross", "beam")}
    run_live(page, w["cross"], "Tuesday 7 Sep 2027", followers=(w["beam"],))
    blank = browser.new_page()
    problems = []
    for name in ("cross", "beam"):
        root = w[name]
        problems += check_widget(page, blank, root, f"live {name}")
        status = " ".join(root.locator(".sv-live-status").text_content().split())
        _, svg = save(page, root, "svg", keyboard=True)
        if svg == before[name]:
            problems.append(f"live {name}: the SVG after the live run is the recorded example's")
        words = " ".join(" ".join("".join(t.itertext()).split()) for t in ET.fromstring(svg).iter(f"{SVG_NS}text"))
        if not status or status in words:
            problems.append(f"live {name}: the live bar's status {status!r} is in the figure (or empty)")
    blank.close()
    assert not problems, "\n".join(problems)
    assert log.errors == [] and log.external == [], (log.errors, log.external)
