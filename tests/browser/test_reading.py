"""Every page reads whole at a 1,280 px window and a 390 px phone (issue 39): displayed equations are never cut
(items 1), printed text outputs keep their lines and columns (item 7), and chapter 3's tab labels show whole
(item 7). The fixes are the book's own CSS/JS (book/_static/seqviz-book.css and seqviz-book.js). The rules are here;
the tests that hold the pages to them are in test_pages.py, on one load of each page (at each width)."""
from __future__ import annotations

# Each shown display equation against its box (div.math, or the mjx-container itself): at scroll position 0 its
# content (mjx-math and the tag) starts inside the box, ends inside it unless the box scrolls sideways, and a box that
# scrolls can be reached by the keyboard and is named; the box stays inside the text column.
EQUATIONS = """() => {
  const faults = [];
  let count = 0, scrolling = 0;
  const art = document.querySelector("article.bd-article") || document.body;
  const col = art.getBoundingClientRect();
  const scrolls = (e) => /auto|scroll/.test(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1;
  for (const c of document.querySelectorAll('mjx-container[jax="CHTML"][display="true"]')) {
    if (!c.getClientRects().length) continue;  // not shown (in a closed dropdown)
    count += 1;
    const box = c.closest("div.math") || c;
    const keep = [box.scrollLeft, c.scrollLeft];
    box.scrollLeft = 0;
    c.scrollLeft = 0;
    const b = box.getBoundingClientRect();
    let left = Infinity, right = -Infinity;
    for (const m of c.querySelectorAll("mjx-math, mjx-labels")) {
      const r = m.getBoundingClientRect();
      if (!r.width) continue;
      left = Math.min(left, r.left);
      right = Math.max(right, r.right);
    }
    const scroller = scrolls(box) ? box : scrolls(c) ? c : null;
    const what = `equation ${count} (${Math.round(right - left)} px in a ${Math.round(b.width)} px box)`;
    if (left < b.left - 1) faults.push(`${what}: its first ${Math.round(b.left - left)} px are cut off on the left`);
    if (right > b.right + 1 && !scroller) faults.push(`${what}: ${Math.round(right - b.right)} px cut off on the right`);
    if (scroller) {
      scrolling += 1;
      if (scroller.tabIndex !== 0 || !scroller.getAttribute("aria-label"))
        faults.push(`${what}: scrolls, but the keyboard cannot reach it or it has no name`);
    }
    if (b.right > col.right + 1 || b.left < col.left - 1)
      faults.push(`${what}: its box (${Math.round(b.left)}-${Math.round(b.right)} px) leaves the column`);
    box.scrollLeft = keep[0];
    c.scrollLeft = keep[1];
  }
  return { count, scrolling, faults };
}"""

# Each shown printed output (stdout, a value's text): no line is wrapped (it takes as many rows as it has lines), and
# one wider than the column scrolls as a block that the keyboard reaches and that is named, inside the column.
PRINTED = """() => {
  const faults = [];
  let count = 0, scrolling = 0;
  const art = document.querySelector("article.bd-article") || document.body;
  const col = art.getBoundingClientRect();
  for (const pre of document.querySelectorAll(".cell_output .output.stream pre, .cell_output .output.text_plain pre")) {
    if (!pre.getClientRects().length || pre.closest(".widget-subarea")) continue;
    count += 1;
    const lines = pre.textContent.replace(/\\n$/, "").split("\\n");
    const range = document.createRange();
    range.selectNodeContents(pre);
    const rows = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0).map((r) => Math.round(r.top)));
    const first = (lines.find((l) => l.trim()) || "").trim().slice(0, 60);
    if (rows.size > lines.length)
      faults.push(`"${first}": ${lines.length} lines drawn in ${rows.size} rows (wrapped)`);
    const b = pre.getBoundingClientRect();
    if (pre.scrollWidth > pre.clientWidth + 1) {
      scrolling += 1;
      if (!/auto|scroll/.test(getComputedStyle(pre).overflowX) || pre.tabIndex !== 0 || !pre.getAttribute("aria-label"))
        faults.push(`"${first}": wider than its box, but does not scroll as a named, focusable block`);
    }
    if (b.right > col.right + 1) faults.push(`"${first}": its box runs ${Math.round(b.right - col.right)} px past the column`);
  }
  return { count, scrolling, faults };
}"""

# Chapter 5's scheduled-sampling table at 390 px (it wrapped into "teacher forcing 0.722 / 0.778 0.836 0.779"): how
# many rows its "teacher forcing" line takes, whether its block scrolls sideways, and its tabIndex; null if not there.
TEACHER_FORCING_ROWS = """() => {
    const pre = Array.from(document.querySelectorAll('.cell_output .output.stream pre'))
        .find((p) => /teacher forcing\\s+0\\.\\d+/.test(p.textContent));
    if (!pre) return null;
    const line = pre.textContent.split('\\n').find((l) => /teacher forcing\\s+0\\.\\d+/.test(l));
    const r = document.createRange();
    const text = pre.textContent, at = text.indexOf(line);
    // the rows the table's "teacher forcing" line takes: walk its characters
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    let offset = 0, tops = new Set();
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
        const len = t.textContent.length;
        for (let i = Math.max(0, at - offset); i < Math.min(len, at + line.length - offset); i++) {
            r.setStart(t, i); r.setEnd(t, i + 1);
            const rect = r.getBoundingClientRect();
            if (rect.width > 0 && t.textContent[i].trim()) tops.add(Math.round(rect.top));
        }
        offset += len;
    }
    return { rows: tops.size, scrolls: pre.scrollWidth > pre.clientWidth + 1, tab: pre.tabIndex };
}"""

# Each tab of a tab widget (chapter 3's): its label, whether its text is cut by the label or tab box, and whether the
# tab leaves its bar.
TAB_LABELS = """() => Array.from(document.querySelectorAll('.widget-tab .lm-TabBar-tab')).map((t) => {
    const l = t.querySelector('.lm-TabBar-tabLabel') || t;
    const r = document.createRange();
    r.selectNodeContents(l);
    const text = r.getBoundingClientRect(), lr = l.getBoundingClientRect(), tr = t.getBoundingClientRect();
    const bar = t.closest('.widget-tab').getBoundingClientRect();
    return { label: l.textContent, cut: text.right > lr.right + 0.5 || text.right > tr.right + 0.5
             || text.bottom > tr.bottom + 0.5, out: tr.right > bar.right + 1.5 || tr.left < bar.left - 1.5 };
})"""
