// The book's own script (issue 33), added to every page by scripts/sphinx_book_a11y.py: an HTML table output wider
// than the text column (a results table read on a phone) scrolls inside a box that the keyboard can reach and that
// says what it is, instead of pushing the page sideways; so does a printed output (a text table keeps its columns,
// issue 39, item 7; seqviz-book.css).
(() => {
  const TEXT_OUTPUTS = ".cell_output .output.stream pre, .cell_output .output.text_plain pre";
  // a box that scrolls sideways is reached by Tab and named; one that fits is left alone
  const nameIfWide = (box, label) => {
    const wide = box.scrollWidth > box.clientWidth + 1;
    if (wide && !box.hasAttribute("tabindex")) {
      box.tabIndex = 0;
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", label);
    } else if (!wide && box.hasAttribute("tabindex")) {
      box.removeAttribute("tabindex");
      box.removeAttribute("role");
      box.removeAttribute("aria-label");
    }
  };
  const wrapWide = () => {
    for (const pre of document.querySelectorAll(TEXT_OUTPUTS)) nameIfWide(pre, "printed output, scrolls sideways");
    // a displayed equation wider than the column (seqviz-book.css): its row scrolls, by the arrow keys too (the
    // equation MathJax makes focusable keeps the arrow keys for its menu)
    for (const math of document.querySelectorAll("div.math")) {
      const tag = math.querySelector("mjx-assistive-mml mlabeledtr > mtd:first-child, .eqno");
      const number = tag ? tag.textContent.replace(/[^\w.()-]/g, "") : "";
      nameIfWide(math, `equation${number ? " " + number : ""}, scrolls sideways`);
    }
    for (const table of document.querySelectorAll(".cell_output .output.text_html table")) {
      let box = table.parentElement;
      if (!box.classList.contains("sv-table-scroll")) {
        box = document.createElement("div");
        box.className = "sv-table-scroll";
        table.replaceWith(box);
        box.appendChild(table);
      }
      const caption = table.querySelector("caption");
      nameIfWide(box, `${caption ? caption.textContent.trim() + ": " : ""}table, scrolls sideways`);
    }
  };
  // again whenever the column or a table changes size (fonts and math load late, the window is resized)
  let pending = null;
  const later = () => {
    clearTimeout(pending);
    pending = setTimeout(wrapWide, 50);
  };
  const start = () => {
    wrapWide();
    if (typeof ResizeObserver !== "undefined") {
      const ro = new ResizeObserver(later);
      for (const t of document.querySelectorAll(`.cell_output .output.text_html table, ${TEXT_OUTPUTS}, div.math`)) {
        ro.observe(t);  // a div.math grows when MathJax typesets it
      }
      const article = document.querySelector("article");
      if (article) ro.observe(article);
    }
    window.addEventListener("load", later);
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(later);
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
