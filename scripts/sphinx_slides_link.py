"""A "slides" button in the header of every chapter page of the built book (issue 24, item 3).

A Sphinx extension (``_config.yml``: ``sphinx.local_extensions``): on each page ``notebooks/NN_name``, it adds a header
button that opens ``slides/NN_name.slides.html``, the chapter's static reveal.js slideshow that ``make book`` builds
next to the pages (``scripts/slides.py --build``). The slides link back to their chapter, so a lecturer can move
between the two. The button is the theme's own header-button kind (sphinx-book-theme's ``header_buttons``), added
after the theme's download and launch buttons.
"""
from __future__ import annotations

import re

CHAPTER = re.compile(r"notebooks/(\d\d_\w+)")


def add_slides_button(app, pagename, templatename, context, doctree):
    m = CHAPTER.fullmatch(pagename)
    if m is None or "header_buttons" not in context:
        return
    context["header_buttons"].append({
        "type": "link",
        "url": context["pathto"](f"slides/{m.group(1)}.slides.html", 1),
        "icon": "fas fa-person-chalkboard",
        "text": "Slides",  # a visible label beside the icon (issue 39, item 9): an icon alone said nothing
        "tooltip": "This chapter as slides (reveal.js; arrow keys to step, Esc for an overview)",
        "label": "slides-button",
    })


def setup(app):
    # after sphinx-book-theme's prep_header_buttons (500) and its own buttons (501)
    app.connect("html-page-context", add_slides_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
