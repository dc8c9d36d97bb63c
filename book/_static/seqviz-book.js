// The book's own script (issue 33), added to every page by scripts/sphinx_book_a11y.py: an HTML table output wider
// than the text column (a results table read on a phone) scrolls inside a box that the keyboard can reach and that
// says what it is, instead of pushing the page sideways.
(() => {
  const wrapWide = () => {
    for (const table of document.querySelectorAll(".cell_output .output.text_html table")) {
      let box = table.parentElement;
      if (!box.classList.contains("sv-table-scroll")) {
        box = document.createElement("div");
        box.className = "sv-table-scroll";
        table.replaceWith(box);
        box.appendChild(table);
      }
      const wide = box.scrollWidth > box.clientWidth + 1;
      if (wide && !box.hasAttribute("tabindex")) {
        const caption = table.querySelector("caption");
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", `${caption ? caption.textContent.trim() + ": " : ""}table, scrolls sideways`);
      } else if (!wide && box.hasAttribute("tabindex")) {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
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
      for (const t of document.querySelectorAll(".cell_output .output.text_html table")) ro.observe(t);
      const article = document.querySelector("article");
      if (article) ro.observe(article);
    }
    window.addEventListener("load", later);
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
