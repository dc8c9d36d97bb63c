"""Every page of the book loads cleanly and passes axe-core's WCAG 2.1 AA rules at its source (issue 33).

A Sphinx extension (``_config.yml``: ``sphinx.local_extensions``) that repairs what a stock Jupyter Book 1 page gets
wrong, where it is made, so the browser tests need no allow-list:

1. pydata-sphinx-theme puts a "Search Ctrl+K" field in a header bar above the sidebar's own one unless the theme
   option ``navbar_persistent`` is set: it is set to nothing, so the sidebar's search field is the only one.
2. sphinx-thebe's configuration ``<script>`` (``const THEBE_JS_URL = ...``) and sphinx-togglebutton's selector reach
   every page twice: added after the builder started, each inline script goes to the builder (file name ``None``) and
   to the registry, whose copy comes back with the file name ``""``, so Sphinx does not see them as one; the second
   ``const`` is a console error. Each inline script and file is kept once, at its first place.
3. The theme's colour mode comes from ``default_mode``, empty unless set, which its script logs as "Got invalid theme
   mode"; it is set to ``auto`` (the reader's system setting), what the theme falls back to anyway.
4. Docutils marks a citation list ``role="list"`` whose entries are ``role="doc-biblioentry"``, a role ARIA 1.2
   deprecated and not a list item (axe: aria-required-children, critical; aria-deprecated-role): they become list
   items. myst-nb labels a hidden cell's "Show code cell content" toggle "Toggle hidden content" (axe:
   label-content-name-mismatch): its name becomes the text it shows.
5. The book's own CSS and JS (``book/_static/seqviz-book.css``, ``seqviz-book.js``: printed lines wrap in the
   column, wide tables scroll in a focusable box, readable tab labels) are added to every page; the templates in
   ``book/_templates`` name the theme's search and colour-mode buttons by what they show.

The favicon (no 404 for /favicon.ico) is ``html.favicon`` in ``_config.yml``.
"""
from __future__ import annotations

import re

STATIC = "book/_static"  # relative to the book's root (Sphinx's confdir)
TEMPLATES = "book/_templates"
CSS, JS = "seqviz-book.css", "seqviz-book.js"

_BIBLIOENTRY = re.compile(r'(<div class="citation" id="[^"]*") role="doc-biblioentry"')
_HIDDEN_CELL_TOGGLE = '<summary aria-label="Toggle hidden content">'


def configure(app, config):
    config.html_theme_options.setdefault("navbar_persistent", [])  # (1) no header search field
    if TEMPLATES not in config.templates_path:
        config.templates_path.insert(0, TEMPLATES)
    if STATIC not in config.html_static_path:
        config.html_static_path.append(STATIC)
    app.add_css_file(CSS)
    app.add_js_file(JS)


def _once(assets: list) -> list:
    """Each script (file or inline body) once, at its first place, whatever priority its copies carry."""
    seen, out = set(), []
    for a in assets:
        key = (str(getattr(a, "filename", a) or ""), tuple(sorted(getattr(a, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def repair_page(app, pagename, templatename, context, doctree):
    if "script_files" in context:
        context["script_files"] = _once(list(context["script_files"]))  # (2)
    if not context.get("default_mode"):
        context["default_mode"] = "auto"  # (3)
    body = context.get("body")
    if body:  # (4)
        body = _BIBLIOENTRY.sub(r'\1 role="listitem"', body)
        context["body"] = body.replace(_HIDDEN_CELL_TOGGLE, "<summary>")


def setup(app):
    app.connect("config-inited", configure)
    # late, after every extension that adds page scripts in html-page-context
    app.connect("html-page-context", repair_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
