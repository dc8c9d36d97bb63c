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
// Every widget also gets, at the end of its root, the buttons that save what it shows as a PNG or an SVG file
// (saveBar, below): the widget appends its own parts during render, and the bar goes after them.
function frame(el, cls) {
  const root = h("div", `seqviz ${cls}`);
  root.setAttribute("role", "figure");
  el.appendChild(root);
  const bar = saveBar(root);
  queueMicrotask(() => root.appendChild(bar));
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

// ---- saving a figure (issue 39): what the widget shows, as a stand-alone SVG or a PNG ----
// The figure is the widget as drawn, without what only drives it: its control rows (.sv-controls), the live bar
// (.sv-live), the save bar itself, screen-reader text (.sv-sr) and anything marked data-sv-save="skip"; the space
// those took is closed up. In the SVG, HTML text becomes <text> at the place and in the font and colour it is shown
// with, boxes with a background or border become <rect>s, a canvas becomes an <image> of its pixels, and an inline
// <svg> (the beam tree) is copied with its computed styles written on each element, so the file needs no stylesheet.
// Whatever scrolls or clips on screen is clipped the same way. The PNG is that SVG rasterised at PNG_SCALE.
const PNG_SCALE = 2;
const SVG_XMLNS = "http://www.w3.org/2000/svg";
const SAVE_SKIP = ".sv-controls, .sv-live, .sv-save, .sv-sr, [data-sv-save='skip'], "
  + "input, select, textarea, script, style";
// computed styles copied onto each element of an inline <svg> (colours resolved to rgb by cssColor)
const SVG_PROPS = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "stroke-opacity",
  "stroke-linecap", "stroke-linejoin", "opacity", "font-family", "font-size", "font-weight", "font-style",
  "text-anchor", "dominant-baseline", "visibility", "white-space"];
const SVG_COLOR_PROPS = new Set(["fill", "stroke"]);
const SVG_FONT_PROPS = new Set(["font-family", "font-size", "font-weight", "font-style", "text-anchor",
  "dominant-baseline", "white-space"]);
// values left out of the copy because they are SVG's own defaults (keeps a large tree's file small)
const SVG_DEFAULTS = { "fill-opacity": "1", "stroke-opacity": "1", "stroke-linecap": "butt", "stroke-linejoin": "miter",
  opacity: "1", "font-style": "normal", "font-weight": "400", "text-anchor": "start", "dominant-baseline": "auto",
  visibility: "visible", "white-space": "normal", "stroke-dasharray": "none", "stroke-width": "1px" };

// A CSS colour as rgb()/rgba() (or "none" when fully transparent): computed colours may come as color(srgb …) or
// color-mix(…), which other SVG readers do not know. A one-pixel canvas resolves them.
const COLOR_PIXEL = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
const colorCache = new Map();
function cssColor(c) {
  if (!c || c === "none" || c === "transparent") return "none";
  if (colorCache.has(c)) return colorCache.get(c);
  let out = c;
  if (!/^(#[0-9a-f]{3,8}|rgba?\([^)]*\))$/i.test(c)) {
    COLOR_PIXEL.canvas.width = COLOR_PIXEL.canvas.height = 1;
    COLOR_PIXEL.clearRect(0, 0, 1, 1);
    COLOR_PIXEL.fillStyle = "#000";
    COLOR_PIXEL.fillStyle = c;
    COLOR_PIXEL.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = COLOR_PIXEL.getImageData(0, 0, 1, 1).data;
    out = a === 255 ? `rgb(${r}, ${g}, ${b})` : `rgba(${r}, ${g}, ${b}, ${(a / 255).toFixed(3)})`;
  }
  if (/^rgba\([^)]*,\s*0(\.0*)?\)$/.test(out)) out = "none";
  colorCache.set(c, out);
  return out;
}

// Every fill and stroke in `svg` as an rgb() colour and a separate opacity, which every SVG reader knows (SVG 1.1 has
// no rgba()).
const RGBA = /^rgba\(([^,]+),([^,]+),([^,]+),([^)]+)\)$/;
function splitRgba(svg) {
  for (const e of [svg, ...svg.querySelectorAll("*")]) {
    for (const prop of ["fill", "stroke"]) {
      for (const [get, set] of [[() => e.getAttribute(prop), (k, v) => e.setAttribute(k, v)],
        [() => e.style.getPropertyValue(prop), (k, v) => e.style.setProperty(k, v)]]) {
        const m = RGBA.exec(get() || "");
        if (!m) continue;
        const was = parseFloat(e.getAttribute(`${prop}-opacity`) || e.style.getPropertyValue(`${prop}-opacity`) || "1");
        set(prop, `rgb(${m[1].trim()}, ${m[2].trim()}, ${m[3].trim()})`);
        set(`${prop}-opacity`, String(Math.round(was * parseFloat(m[4]) * 1000) / 1000));
      }
    }
  }
}

// The file name for the figure: the widget's title (or what it is, e.g. "attention heatmap") in lower-case words
// joined by hyphens, plus the extension.
function figureName(root, ext) {
  const title = root.querySelector(":scope > .sv-title");
  const text = (title && !title.hidden && title.textContent.trim()) || root.getAttribute("aria-label")
    || "seqviz figure";
  const slug = text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
    .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 80).replace(/-+$/, "");
  return `${slug || "seqviz-figure"}.${ext}`;
}

// Is `e` drawn at all (not display:none, not visibility:hidden, not in a content-visibility:hidden subtree)?
function drawn(e) {
  if (e.checkVisibility) return e.checkVisibility({ visibilityProperty: true, contentVisibilityAuto: true });
  const s = getComputedStyle(e);
  return s.display !== "none" && s.visibility !== "hidden" && e.getClientRects().length > 0;
}

// The figure of `root` as {text (the SVG file), width, height} in CSS pixels.
function figureSvg(root) {
  const svg = document.createElementNS(SVG_XMLNS, "svg");
  const box = root.getBoundingClientRect();
  const W = Math.ceil(box.width);
  if (W < 1) throw new Error("the widget is not laid out (in a closed or hidden part of the page): show it, then save");
  let clipN = 0;
  const mk = (tag, attrs, parent) => {
    const e = document.createElementNS(SVG_XMLNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
    if (parent) parent.appendChild(e);
    return e;
  };
  const r2 = (x) => Math.round(x * 100) / 100;
  // close up the parts left out: each direct child of the root moves up by the height of the parts above it
  let dy = 0, bottom = 0;
  const shiftOf = new Map();
  for (const child of root.children) {
    const r = child.getBoundingClientRect();
    if (child.matches(SAVE_SKIP) || !drawn(child)) {
      if (r.height > 0) {
        const s = getComputedStyle(child);
        dy += r.height + parseFloat(s.marginTop) + parseFloat(s.marginBottom);
      }
      continue;
    }
    shiftOf.set(child, dy);
    if (r.height > 0) bottom = Math.max(bottom, r.bottom - box.top - dy);
  }
  const H = Math.max(1, Math.ceil(bottom + 2));
  let shift = 0;
  const X = (x) => r2(x - box.left), Y = (y) => r2(y - box.top - shift);

  // the page's background behind the widget (outputs keep a light one in the book's dark mode)
  let bg = "none";
  for (let e = root; e && bg === "none"; e = e.parentElement) bg = cssColor(getComputedStyle(e).backgroundColor);
  if (bg === "none") bg = "rgb(255, 255, 255)";
  mk("rect", { x: 0, y: 0, width: W, height: H, fill: bg }, svg);

  const metrics = new Map(); // font -> [ascent, descent]
  const fontOf = (s) => `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  const ascent = (s) => {
    const f = fontOf(s);
    if (!metrics.has(f)) {
      MEASURE.font = f;
      const m = MEASURE.measureText("Hg");
      const px = parseFloat(s.fontSize);
      metrics.set(f, [m.fontBoundingBoxAscent || 0.8 * px, m.fontBoundingBoxDescent || 0.2 * px]);
    }
    return metrics.get(f);
  };

  const textEl = (parent, s, str, x, y, transform) => {
    const t = mk("text", {
      x, y, transform, fill: cssColor(s.color), "font-family": s.fontFamily, "font-size": s.fontSize,
      "font-weight": s.fontWeight === "400" ? undefined : s.fontWeight,
      "font-style": s.fontStyle === "normal" ? undefined : s.fontStyle,
      "text-decoration": s.textDecorationLine === "none" ? undefined : s.textDecorationLine,
    }, parent);
    t.setAttribute("xml:space", "preserve");
    t.style.whiteSpace = "pre";
    t.textContent = str;
  };

  // one text node: a <text> per line it is laid out on (rotated when its element writes vertically)
  const addText = (node, parent) => {
    const str = node.data;
    if (!str.trim()) return;
    const e = node.parentElement;
    const s = getComputedStyle(e);
    if (s.visibility !== "visible" || parseFloat(s.opacity) === 0) return;
    const [asc, desc] = ascent(s);
    const range = document.createRange();
    if (s.writingMode.startsWith("vertical")) {
      range.selectNodeContents(node);
      const r = range.getBoundingClientRect();
      if (!r.width || !r.height) return;
      const upward = /^matrix\(-1, 0, 0, -1/.test(s.transform); // vertical-rl turned 180°: reads bottom to top
      const base = r2(asc + (r.width - asc - desc) / 2);
      const tr = upward ? `translate(${X(r.left)} ${Y(r.bottom)}) rotate(-90)`
        : `translate(${X(r.right)} ${Y(r.top)}) rotate(90)`;
      textEl(parent, s, str.trim(), 0, base, tr);
      return;
    }
    // the words, grouped into the lines the browser broke them into
    const lines = [];
    const re = /\S+/g;
    let m;
    while ((m = re.exec(str))) {
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const rects = [...range.getClientRects()].filter((r) => r.width > 0);
      if (!rects.length) continue;
      const r = rects[0];
      const last = lines[lines.length - 1];
      if (last && Math.abs(last.top - r.top) < 1 && rects.length === 1) { last.end = m.index + m[0].length; continue; }
      // a word broken over lines (overflow-wrap: anywhere) keeps its first line's box; the rest follows it
      lines.push({ top: r.top, height: r.height, left: r.left, start: m.index, end: m.index + m[0].length });
    }
    // leading spaces that the element shows (white-space: pre) stay in front of the first word
    for (const L of lines) {
      const base = L.top + (L.height - asc - desc) / 2 + asc;
      textEl(parent, s, str.slice(L.start, L.end), X(L.left), Y(base));
    }
  };

  const addCanvas = (c, s, r, parent) => {
    if (!c.width || !c.height || !r.width || !r.height) return;
    const bl = parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft);
    const bt = parseFloat(s.borderTopWidth) + parseFloat(s.paddingTop);
    const w = c.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
    const hh = c.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom);
    const img = mk("image", {
      x: X(r.left + bl), y: Y(r.top + bt), width: r2(w || r.width), height: r2(hh || r.height),
      preserveAspectRatio: "none",
      "image-rendering": s.imageRendering === "pixelated" ? "optimizeSpeed" : undefined,
    }, parent);
    if (s.imageRendering === "pixelated") img.style.imageRendering = "pixelated";
    img.setAttribute("href", c.toDataURL("image/png"));
  };

  // an inline <svg>: a copy with each element's computed style written on it
  const addSvg = (src, r, parent) => {
    const copy = src.cloneNode(true);
    const a = [src, ...src.querySelectorAll("*")], b = [copy, ...copy.querySelectorAll("*")];
    const drop = [];
    a.forEach((e, k) => {
      const c = b[k];
      const s = getComputedStyle(e);
      if (s.display === "none") { drop.push(c); return; }
      const isText = e instanceof SVGTextContentElement || e === src;
      for (const p of SVG_PROPS) {
        let v = s.getPropertyValue(p);
        if (!v || SVG_DEFAULTS[p] === v || (SVG_FONT_PROPS.has(p) && !isText)) continue;
        if (SVG_COLOR_PROPS.has(p) && !v.startsWith("url(")) v = cssColor(v);
        c.style.setProperty(p, v);
      }
      c.removeAttribute("class");
      c.removeAttribute("aria-hidden");
      c.removeAttribute("tabindex");
      c.removeAttribute("role");
    });
    drop.forEach((c) => c.remove());
    copy.setAttribute("x", X(r.left));
    copy.setAttribute("y", Y(r.top));
    copy.setAttribute("width", r2(r.width));
    copy.setAttribute("height", r2(r.height));
    copy.style.removeProperty("display");
    copy.style.overflow = "hidden";
    parent.appendChild(copy);
  };

  // an HTML box's background and border
  const addBox = (s, r, parent) => {
    const fill = cssColor(s.backgroundColor);
    const sides = ["Top", "Right", "Bottom", "Left"].map((k) => ({
      w: s[`border${k}Style`] === "none" || s[`border${k}Style`] === "hidden" ? 0 : parseFloat(s[`border${k}Width`]),
      c: cssColor(s[`border${k}Color`]), dash: s[`border${k}Style`],
    }));
    const rx = Math.min(parseFloat(s.borderTopLeftRadius) || 0, r.width / 2, r.height / 2);
    const same = sides.every((d) => d.w === sides[0].w && d.c === sides[0].c && d.dash === sides[0].dash);
    const dashOf = (d) => (d.dash === "dashed" ? `${3 * d.w} ${2 * d.w}`
      : d.dash === "dotted" ? `${d.w} ${d.w}` : undefined);
    if (same && sides[0].w > 0 && sides[0].c !== "none") {
      const d = sides[0];
      mk("rect", { x: r2(X(r.left) + d.w / 2), y: r2(Y(r.top) + d.w / 2), width: r2(r.width - d.w),
        height: r2(r.height - d.w),
        rx: rx ? r2(rx) : undefined, fill, stroke: d.c, "stroke-width": d.w, "stroke-dasharray": dashOf(d) }, parent);
      return;
    }
    if (fill !== "none") mk("rect", { x: X(r.left), y: Y(r.top), width: r2(r.width), height: r2(r.height),
      rx: rx ? r2(rx) : undefined, fill }, parent);
    const [t, rt, bt, lf] = sides;
    const line = (d, x1, y1, x2, y2) => d.w > 0 && d.c !== "none" && mk("line", { x1, y1, x2, y2, stroke: d.c,
      "stroke-width": d.w, "stroke-dasharray": dashOf(d) }, parent);
    line(t, X(r.left), r2(Y(r.top) + t.w / 2), X(r.right), r2(Y(r.top) + t.w / 2));
    line(bt, X(r.left), r2(Y(r.bottom) - bt.w / 2), X(r.right), r2(Y(r.bottom) - bt.w / 2));
    line(lf, r2(X(r.left) + lf.w / 2), Y(r.top), r2(X(r.left) + lf.w / 2), Y(r.bottom));
    line(rt, r2(X(r.right) - rt.w / 2), Y(r.top), r2(X(r.right) - rt.w / 2), Y(r.bottom));
  };

  const walk = (e, parent) => {
    if (e.matches(SAVE_SKIP) || !drawn(e)) return;
    const s = getComputedStyle(e);
    if (parseFloat(s.opacity) === 0) return;
    const r = e.getBoundingClientRect();
    if (e instanceof SVGSVGElement) { addSvg(e, r, parent); return; }
    if (e instanceof SVGElement) return; // only whole <svg>s are copied
    addBox(s, r, parent);
    if (e instanceof HTMLCanvasElement) { addCanvas(e, s, r, parent); return; }
    let inner = parent;
    if (s.overflowX !== "visible" || s.overflowY !== "visible") { // it clips (or scrolls): so does the figure
      const id = `sv-clip-${++clipN}`;
      const cp = mk("clipPath", { id }, svg);
      mk("rect", { x: r2(X(r.left) + e.clientLeft), y: r2(Y(r.top) + e.clientTop), width: e.clientWidth,
        height: e.clientHeight }, cp);
      inner = mk("g", { "clip-path": `url(#${id})` }, parent);
    }
    for (const n of e.childNodes) {
      if (n.nodeType === Node.TEXT_NODE) addText(n, inner);
      else if (n.nodeType === Node.ELEMENT_NODE) walk(n, inner);
    }
  };

  const body = mk("g", {}, svg);
  for (const child of root.children) {
    if (!shiftOf.has(child)) continue;
    shift = shiftOf.get(child);
    walk(child, body);
  }
  splitRgba(svg);
  svg.setAttribute("xmlns", SVG_XMLNS);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const label = root.getAttribute("aria-label");
  if (label) mk("title", {}, svg).textContent = label;
  if (label) svg.insertBefore(svg.lastChild, svg.firstChild);
  const text = `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(svg)}\n`;
  return { text, width: W, height: H };
}

// The figure as a PNG Blob: the SVG drawn onto a canvas PNG_SCALE times its size.
async function figurePng(root) {
  const { text, width, height } = figureSvg(root);
  const url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const c = document.createElement("canvas");
    c.width = Math.round(width * PNG_SCALE);
    c.height = Math.round(height * PNG_SCALE);
    c.getContext("2d").drawImage(img, 0, 0, c.width, c.height);
    return await new Promise((ok, fail) => c.toBlob((b) => (b ? ok(b) : fail(new Error("the browser made no PNG"))),
      "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}

// Hand `blob` to the browser as a download named `name` (an <a download> clicked, its blob: URL freed later).
function download(blob, name, host) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.hidden = true;
  host.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// The save bar: "Save PNG" and "Save SVG" buttons and a status line that says what was saved (or why not).
// root.svFigure = {svg(), png(), name(ext)} makes the same files for code (the tests).
function saveBar(root) {
  const bar = h("div", "sv-save");
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", "Save the figure");
  const status = h("span", "sv-save-status");
  status.setAttribute("role", "status");
  const kb = (n) => (n < 1024 ? `${n} bytes` : `${Math.round(n / 1024)} KB`);
  const make = {
    png: () => figurePng(root),
    svg: async () => new Blob([figureSvg(root).text], { type: "image/svg+xml" }),
  };
  root.svFigure = { svg: () => figureSvg(root), png: make.png, name: (ext) => figureName(root, ext) };
  const button = (ext, what) => {
    const b = h("button", `sv-save-${ext}`, `Save ${ext.toUpperCase()}`);
    b.type = "button";
    b.title = `Download what the widget shows as ${what}`;
    b.addEventListener("click", async () => {
      const name = figureName(root, ext);
      if (b.getAttribute("aria-busy") === "true") return; // one file at a time (not disabled: it keeps the focus)
      b.setAttribute("aria-busy", "true");
      try {
        const blob = await make[ext]();
        download(blob, name, bar);
        status.textContent = `Saved ${name} (${kb(blob.size)})`;
      } catch (err) {
        status.textContent = `Could not save ${name}: ${err && err.message ? err.message : err}`;
      } finally {
        b.removeAttribute("aria-busy");
      }
    });
    return b;
  };
  bar.append(button("png", `a PNG image (${PNG_SCALE}\u00d7 its pixels)`),
    button("svg", "an SVG file (vector shapes and text)"), status);
  return bar;
}
