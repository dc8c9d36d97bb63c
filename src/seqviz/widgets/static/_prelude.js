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
  el.appendChild(root);
  return { root, title: h("div", "sv-title"), controls: h("div", "sv-controls") };
}

// The widget's title line follows the `title` trait and is hidden when it is empty.
function showTitle(el, model) {
  const t = model.get("title");
  el.textContent = t;
  el.hidden = !t;
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

// A range slider and the span that shows its value: {label, input, value}.
function slider(text, cls, min, max, step) {
  const input = h("input", cls);
  input.type = "range";
  input.min = String(min); input.max = String(max); input.step = String(step);
  const value = h("span", "sv-value");
  return { label: labelled(`${text} `, input, value), input, value };
}

// The line under a plot that reads out the hovered cell, announced politely to screen readers.
function readoutLine(cls) {
  const e = h("div", cls || "sv-readout", "\u00a0");
  e.setAttribute("aria-live", "polite");
  return e;
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
