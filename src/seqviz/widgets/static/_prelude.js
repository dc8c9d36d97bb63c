// seqviz widget prelude: the palettes and helpers every widget view shares. Python (`esm` in
// seqviz/widgets/_common.py) puts this file in front of each widget's own file to make that widget's ES module: in the
// static book each module is loaded alone, from a blob: URL, so it cannot import a sibling file.
// Token text is only ever written with textContent, never parsed as HTML.

// matplotlib's viridis (sequential: weights, sigmoid gates) and RdBu_r (diverging around 0), 17 even stops each.
const VIRIDIS = ["#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
  "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725"];
const RDBU = ["#053061", "#175290", "#2a71b2", "#3f8ec0", "#6bacd1", "#9bc9e0", "#c2ddec", "#e0ecf3", "#f7f6f6",
  "#fbe5d8", "#fbccb4", "#f5aa89", "#e48066", "#d05548", "#ba2832", "#930e26", "#67001f"];
const ACCENT = "#e4572e"; // outline of the selected cell, time step or position pair

// 256-entry RGB lookup table interpolated between evenly spaced colour stops: byte q is lut[3q], lut[3q+1], lut[3q+2].
function makeLut(stops) {
  const rgb = stops.map((s) => [1, 3, 5].map((k) => parseInt(s.slice(k, k + 2), 16)));
  const lut = new Uint8ClampedArray(256 * 3);
  for (let q = 0; q < 256; q++) {
    const x = (q / 255) * (rgb.length - 1);
    const a = Math.min(Math.floor(x), rgb.length - 2);
    const f = x - a;
    for (let c = 0; c < 3; c++) lut[q * 3 + c] = Math.round(rgb[a][c] * (1 - f) + rgb[a + 1][c] * f);
  }
  return lut;
}
const LUT_VIRIDIS = makeLut(VIRIDIS);
const LUT_RDBU = makeLut(RDBU);

// Widget bytes arrive as DataView (ipywidgets), ArrayBuffer or a typed array, depending on the front end.
function bytesOf(v) {
  if (v instanceof DataView || ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  return new Uint8Array(0);
}

// A new element with an optional class and text.
function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// Character-level models read spaces and newlines: make whitespace-only tokens visible (still plain text).
const visible = (t) => (t.trim() !== "" ? t
  : t.replace(/ /g, "\u2423").replace(/\n/g, "\u23ce").replace(/\t/g, "\u21e5"));

// The widget's root element inside `el` (class "seqviz" + cls), with its title line and its row of controls, which
// the widget appends to the root in the order it wants.
function frame(el, cls) {
  const root = h("div", `seqviz ${cls}`);
  root.setAttribute("role", "figure");
  el.appendChild(root);
  return { root, title: h("div", "sv-title"), controls: h("div", "sv-controls") };
}

// The widget's title line follows the `title` trait and is hidden when it is empty; the widget (its root, a figure)
// is named by the title, or by `what` (e.g. "attention heatmap") when there is none.
function showTitle(el, model, what) {
  const t = model.get("title");
  el.textContent = t;
  el.hidden = !t;
  const root = el.closest(".seqviz") || el.parentElement;
  if (root) root.setAttribute("aria-label", t ? `${what ? what + ": " : ""}${t}` : what || "seqviz widget");
}

// Set a trait from the view and send it to Python.
function save(model, name, value) {
  model.set(name, value);
  model.save_changes();
}

// "<label>text control…</label>": one entry of a control row.
function labelled(text, ...children) {
  const label = h("label", "sv-control", text);
  label.append(...children);
  return label;
}

// A range slider and the span that shows its value: {label, input, value}. Its accessible name is `text`; the value
// it announces is aria-valuetext, which the widget sets with its value span (setValueText).
function slider(text, cls, min, max, step) {
  const input = h("input", cls);
  input.type = "range";
  input.min = String(min); input.max = String(max); input.step = String(step);
  input.setAttribute("aria-label", text); // the browser steps it by the arrows, Page Up/Down, Home and End
  const value = h("span", "sv-value");
  value.setAttribute("aria-hidden", "true"); // the slider announces it itself (aria-valuetext)
  return { label: labelled(`${text} `, input, value), input, value };
}

// Show a slider's value next to it and give the same words to screen readers.
function setValueText(s, text) {
  if (s.value.textContent !== text) s.value.textContent = text;
  s.input.setAttribute("aria-valuetext", text);
}

// The line under a plot that reads out the hovered cell (or the keyboard cursor's), announced politely to screen
// readers.
function readoutLine(cls) {
  const e = h("div", cls || "sv-readout", "\u00a0");
  e.setAttribute("aria-live", "polite");
  return e;
}

// ---- fitting the container, labels, keyboard and text alternatives (issue 33) ----

// The smallest font (px) a widget may draw a label with: a label that would be smaller is not drawn (the cursor's
// read-out names it instead). Each widget also writes the smallest font it did draw into its root's data-min-font.
const MIN_LABEL_PX = 10;
const CSS_MIN_PX = 12; // the smallest font-size widgets.css gives any text (the widget's own label fonts come on top)
const LABEL_CELL_PX = 14; // a cell this wide (or tall) carries a 12 px label
const labelFont = (cell) => Math.min(13, cell - 2); // a label in a cell of `cell` px: at least MIN_LABEL_PX from 12

// The width the widget has to draw in: its container's, or the book's 688 px column before it is laid out.
function widthOf(root) {
  const w = root.clientWidth;
  return w > 0 ? w : 688;
}

// Call cb(width) when the root's width changes (the window is resized, a sidebar opens): the widget lays itself out
// again for its container. Returns the function that stops watching.
function onResize(root, cb) {
  if (typeof ResizeObserver === "undefined") return () => {};
  let last = widthOf(root), pending = false;
  const ro = new ResizeObserver(() => {
    const w = root.clientWidth;
    if (w <= 0 || Math.abs(w - last) < 1 || pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; last = root.clientWidth; cb(last); });
  });
  ro.observe(root);
  return () => ro.disconnect();
}

// Record, on the widget's root, the smallest font any of its labels was drawn with (`fonts` in px; 0 or absent ones
// are labels not drawn).
function noteFonts(root, fonts) {
  const drawn = fonts.filter((f) => f > 0);
  root.dataset.minFont = String(Math.min(CSS_MIN_PX, ...drawn));
}

// The width in px of the widest of `texts` set in `px` px type (the code font when `mono`).
const MEASURE = document.createElement("canvas").getContext("2d");
function textWidth(texts, px, mono) {
  MEASURE.font = `${px}px ${mono ? "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" : "system-ui, sans-serif"}`;
  let w = 0;
  for (const t of texts) w = Math.max(w, MEASURE.measureText(t).width);
  return Math.ceil(w);
}

// A box that scrolls sideways on purpose (a long time axis, a wide table) and that a keyboard user can reach: it takes
// the focus (arrow keys then scroll it) and says what it is.
function scroller(label, cls) {
  const e = h("div", `sv-scroll${cls ? " " + cls : ""}`);
  e.tabIndex = 0;
  e.setAttribute("role", "region");
  e.setAttribute("aria-label", label);
  return e;
}

// Text that only assistive technology reads (a summary of what the widget shows now).
function srOnly(tag, cls) {
  const e = h(tag || "div", `sv-sr${cls ? " " + cls : ""}`);
  return e;
}

// A canvas of rows x cols cells that the keyboard can walk: it takes the focus, the arrow keys move a cursor by one
// cell, Home/End to the row's first/last cell (with Ctrl: the first/last cell), Page Up/Down by `page` rows, and
// Enter or Space act on the cell. The mouse drives the same cursor, so hover and keys show the same read-out.
// opts: {rows(), cols(), cellAt(ev) -> [i, j] | null, show(i, j) (draw the cursor and the read-out; null: none),
// activate(i, j) (optional), label (the canvas's accessible name), page (rows per Page Up/Down, default 10)}.
// Returns {get: () => [i, j] | null, set(i, j), clear()}.
function cellCursor(canvas, opts) {
  let cur = null;
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "application");
  canvas.setAttribute("aria-roledescription", "grid of cells");
  if (opts.label) canvas.setAttribute("aria-label", opts.label);
  const set = (i, j) => {
    const R = opts.rows(), C = opts.cols();
    if (!R || !C) return;
    cur = [Math.max(0, Math.min(R - 1, i)), Math.max(0, Math.min(C - 1, j))];
    opts.show(cur[0], cur[1]);
  };
  const clear = () => { cur = null; opts.show(null, null); };
  canvas.addEventListener("keydown", (ev) => {
    const R = opts.rows(), C = opts.cols(), page = opts.page || 10;
    const [i, j] = cur || [0, 0];
    const moves = {
      ArrowUp: [i - 1, j], ArrowDown: [i + 1, j], ArrowLeft: [i, j - 1], ArrowRight: [i, j + 1],
      Home: ev.ctrlKey ? [0, 0] : [i, 0], End: ev.ctrlKey ? [R - 1, C - 1] : [i, C - 1],
      PageUp: [i - page, j], PageDown: [i + page, j],
    };
    if (ev.key in moves) {
      ev.preventDefault();
      if (!cur) { set(0, 0); return; }
      set(...moves[ev.key]);
    } else if ((ev.key === "Enter" || ev.key === " ") && opts.activate) {
      ev.preventDefault();
      if (!cur) set(0, 0);
      opts.activate(cur[0], cur[1]);
    } else if (ev.key === "Escape" && cur) {
      clear();
    }
  });
  canvas.addEventListener("focus", () => { if (!cur) set(0, 0); });
  canvas.addEventListener("mousemove", (ev) => {
    const ij = opts.cellAt(ev);
    if (ij) set(ij[0], ij[1]);
  });
  canvas.addEventListener("mouseleave", () => { if (document.activeElement !== canvas) clear(); });
  canvas.addEventListener("blur", clear);
  if (opts.activate) {
    canvas.addEventListener("click", (ev) => {
      const ij = opts.cellAt(ev);
      if (ij) opts.activate(ij[0], ij[1]);
    });
  }
  return { get: () => cur, set, clear };
}

// Which cell of a canvas drawn at cw x ch pixels per cell the mouse is over: [row, column] or null.
function cellUnder(ev, canvas, cw, ch, rows, cols) {
  const r = canvas.getBoundingClientRect();
  const j = Math.floor(((ev.clientX - r.left) * (canvas.width / r.width)) / cw);
  const i = Math.floor(((ev.clientY - r.top) * (canvas.height / r.height)) / ch);
  return i < 0 || j < 0 || i >= rows || j >= cols ? null : [i, j];
}

// A row of toggle buttons of which one is chosen (the query chips): one Tab stop, the arrow keys, Home and End move
// the choice, as in a radio group. items: labels; title(i): each one's tooltip; pick(i): the reader chose i.
// Returns {el, buttons, select(i)} (select only shows the choice; it does not call pick).
function choiceRow(name, items, title, pick) {
  const el = h("div", "sv-choices");
  el.setAttribute("role", "radiogroup");
  el.setAttribute("aria-label", name);
  const buttons = items.map((text, i) => {
    const b = h("button", "sv-choice sv-tok-inline", text);
    b.type = "button";
    b.setAttribute("role", "radio");
    b.setAttribute("aria-checked", "false");
    b.tabIndex = -1;
    if (title) b.title = title(i);
    b.addEventListener("click", () => pick(i));
    b.addEventListener("keydown", (ev) => {
      const n = buttons.length;
      const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: n - 1 }[ev.key];
      if (to === undefined) return;
      ev.preventDefault();
      const k = Math.max(0, Math.min(n - 1, to));
      pick(k);
      buttons[k].focus();
    });
    el.appendChild(b);
    return b;
  });
  const select = (i) => {
    buttons.forEach((b, k) => {
      const on = k === i;
      b.setAttribute("aria-checked", String(on));
      b.classList.toggle("sv-current", on);
      b.tabIndex = on ? 0 : -1;
    });
  };
  select(0);
  return { el, buttons, select };
}

// Draw `img` (one ImageData pixel per matrix cell) onto `canvas` scaled to wPx x hPx, without smoothing unless asked
// (smoothing only helps when a large matrix is shrunk). Returns the canvas's 2-D context for overlays.
const SCRATCH = document.createElement("canvas");
function blit(canvas, img, wPx, hPx, smooth) {
  if (canvas.width !== wPx) canvas.width = wPx;
  if (canvas.height !== hPx) canvas.height = hPx;
  SCRATCH.width = img.width;
  SCRATCH.height = img.height;
  SCRATCH.getContext("2d").putImageData(img, 0, 0);
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = Boolean(smooth);
  ctx.clearRect(0, 0, wPx, hPx);
  ctx.drawImage(SCRATCH, 0, 0, wPx, hPx);
  return ctx;
}

// A colour legend: lo, the lookup table as a bar `width` pixels wide, hi, and what the colours mean.
function legend(lut, lo, hi, label, width) {
  const w = width || 160;
  const box = h("div", "sv-legend");
  const bar = h("canvas", "sv-legend-bar");
  bar.width = w; bar.height = 10;
  const g = bar.getContext("2d");
  for (let x = 0; x < w; x++) {
    const q = Math.round((x / (w - 1)) * 255) * 3;
    g.fillStyle = `rgb(${lut[q]},${lut[q + 1]},${lut[q + 2]})`;
    g.fillRect(x, 0, 1, 10);
  }
  box.append(h("span", "sv-legend-lo", lo), bar, h("span", "sv-legend-hi", hi), h("span", "sv-legend-label", label));
  return box;
}

// Redraw when Python changes traits. One update from Python sets several traits at once, so the changes of one task
// are coalesced into one redraw. `traits` maps a kind of redraw to the traits that need it, e.g.
// {data: ["weights", "shape"], view: ["layer"]}; redraw(kinds) gets the Set of kinds that changed.
// Returns the clean-up function that render() returns.
function onChanges(model, traits, redraw) {
  let pending = null;
  const fire = (kind) => {
    if (pending) { pending.add(kind); return; }
    pending = new Set([kind]);
    queueMicrotask(() => { const p = pending; pending = null; redraw(p); });
  };
  const subscriptions = [];
  for (const [kind, names] of Object.entries(traits)) {
    for (const name of names) {
      const cb = () => fire(kind);
      model.on(`change:${name}`, cb);
      subscriptions.push([name, cb]);
    }
  }
  return () => subscriptions.forEach(([name, cb]) => model.off(`change:${name}`, cb));
}
