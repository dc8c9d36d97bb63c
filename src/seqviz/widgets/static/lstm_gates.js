// LSTMGates view (anywidget ES module, self-contained so it also runs from the static book's widget state).
// State (see lstm_gates.py): traces = uint8 bytes (G, T, units) C order, gate g decoded as lo + q / 255 * (hi - lo)
// with [lo, hi] = ranges[g]; gates, labels, kinds ("sigmoid" | "tanh" | "cell"); shape = [T, units]; tokens;
// gate (selected name); step (current time step); title. Token text is only ever set with textContent.

const VIRIDIS = ["#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
  "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725"];
const RDBU = ["#053061", "#175290", "#2a71b2", "#3f8ec0", "#6bacd1", "#9bc9e0", "#c2ddec", "#e0ecf3", "#f7f6f6",
  "#fbe5d8", "#fbccb4", "#f5aa89", "#e48066", "#d05548", "#ba2832", "#930e26", "#67001f"];

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
const LUTS = { sigmoid: makeLut(VIRIDIS), tanh: makeLut(RDBU), cell: makeLut(RDBU) };

function bytesOf(v) {
  if (v instanceof DataView || ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  return new Uint8Array(0);
}

function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// Character-level models read spaces and newlines: make them visible (still plain text).
const visible = (t) => (t.trim() !== "" ? t
  : t.replace(/ /g, "\u2423").replace(/\n/g, "\u23ce").replace(/\t/g, "\u21e5"));

const fmt = (x) => (Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(3));

function readState(model) {
  const [T, U] = model.get("shape");
  return {
    T, U,
    buf: bytesOf(model.get("traces")),
    gates: model.get("gates"),
    labels: model.get("labels"),
    kinds: model.get("kinds"),
    ranges: model.get("ranges"),
    tokens: model.get("tokens"),
  };
}

// Quantised byte of gate index g at time t, unit u; and its decoded value.
const byteAt = (s, g, t, u) => s.buf[(g * s.T + t) * s.U + u];
function valueAt(s, g, t, u) {
  const [lo, hi] = s.ranges[g];
  return lo + (byteAt(s, g, t, u) / 255) * (hi - lo);
}

// Units x time heatmap of gate g: rows are units, columns are time steps, one ImageData pixel per cell, scaled up.
function paintHeat(canvas, s, g, cw, ch) {
  canvas.width = s.T * cw;
  canvas.height = s.U * ch;
  const lut = LUTS[s.kinds[g]];
  const img = new ImageData(s.T, s.U);
  const px = img.data;
  for (let u = 0; u < s.U; u++) {
    for (let t = 0; t < s.T; t++) {
      const q = byteAt(s, g, t, u) * 3;
      const o = 4 * (u * s.T + t);
      px[o] = lut[q]; px[o + 1] = lut[q + 1]; px[o + 2] = lut[q + 2]; px[o + 3] = 255;
    }
  }
  const off = document.createElement("canvas");
  off.width = s.T; off.height = s.U;
  off.getContext("2d").putImageData(img, 0, 0);
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, 0, 0, canvas.width, canvas.height);
}

// One row of `units` cells: gate g at time step t.
function paintStep(canvas, s, g, t, cw) {
  canvas.width = s.U * cw;
  canvas.height = 12;
  const ctx = canvas.getContext("2d");
  const lut = LUTS[s.kinds[g]];
  for (let u = 0; u < s.U; u++) {
    const q = byteAt(s, g, t, u) * 3;
    ctx.fillStyle = `rgb(${lut[q]},${lut[q + 1]},${lut[q + 2]})`;
    ctx.fillRect(u * cw, 0, cw, 12);
  }
}

function legend(s, g) {
  const [lo, hi] = s.ranges[g];
  const lut = LUTS[s.kinds[g]];
  const box = h("div", "sv-legend");
  box.appendChild(h("span", "sv-legend-lo", fmt(lo)));
  const c = document.createElement("canvas");
  c.width = 160; c.height = 10;
  c.className = "sv-legend-bar";
  const ctx = c.getContext("2d");
  for (let x = 0; x < 160; x++) {
    const q = Math.round((x / 159) * 255) * 3;
    ctx.fillStyle = `rgb(${lut[q]},${lut[q + 1]},${lut[q + 2]})`;
    ctx.fillRect(x, 0, 1, 10);
  }
  box.appendChild(c);
  box.appendChild(h("span", "sv-legend-hi", fmt(hi)));
  const what = { sigmoid: "sigmoid gate, 0..1", tanh: "tanh, \u22121..1", cell: "cell state (not squashed)" };
  box.appendChild(h("span", "sv-legend-label", `${s.labels[g]}: ${what[s.kinds[g]]}`));
  return box;
}

function render({ model, el }) {
  const root = h("div", "seqviz sv-lstm");
  el.appendChild(root);
  let s = null;

  const title = h("div", "sv-title");
  const controls = h("div", "sv-controls");
  const gateLabel = h("label", "sv-control", "show ");
  const gateSel = h("select", "sv-gate");
  gateLabel.appendChild(gateSel);
  const stepLabel = h("label", "sv-control", "time step ");
  const slider = h("input", "sv-step");
  slider.type = "range";
  slider.min = "0";
  slider.step = "1";
  const stepText = h("span", "sv-value sv-step-text");
  stepLabel.append(slider, stepText);
  controls.append(gateLabel, stepLabel);

  const main = h("div", "sv-lstm-main");
  const unitAxis = h("div", "sv-units");
  const wrap = h("div", "sv-canvas-wrap");
  const heat = h("canvas", "sv-heat");
  const over = h("canvas", "sv-overlay");
  wrap.append(heat, over);
  const strip = h("div", "sv-strip");
  main.append(unitAxis, wrap, h("div", "sv-corner"), strip);
  const readout = h("div", "sv-readout", "\u00a0");
  readout.setAttribute("aria-live", "polite");
  const legendBox = h("div", "sv-legend-wrap");
  const stepTitle = h("div", "sv-panel-title");
  const table = h("table", "sv-step-table");
  root.append(title, controls, main, readout, legendBox, stepTitle, table);

  let cw = 10, ch = 6, tokenSpans = [], stepCanvases = [];

  gateSel.addEventListener("change", () => { model.set("gate", gateSel.value); model.save_changes(); });
  slider.addEventListener("input", () => { model.set("step", parseInt(slider.value, 10)); model.save_changes(); });

  const gateIndex = () => Math.max(0, s.gates.indexOf(model.get("gate")));
  const currentStep = () => Math.min(Math.max(model.get("step"), 0), s.T - 1);

  function drawCursor() {
    const t = currentStep();
    const ctx = over.getContext("2d");
    ctx.clearRect(0, 0, over.width, over.height);
    ctx.strokeStyle = "#e4572e";
    ctx.lineWidth = 2;
    ctx.strokeRect(t * cw + 1, 1, cw - 2, over.height - 2);
  }

  // What changes with the time step: cursor, token highlight, slider, per-step table.
  function drawStep() {
    const t = currentStep();
    slider.value = String(t);
    stepText.textContent = `t = ${t}: `;
    const tok = h("span", "sv-tok-inline", visible(s.tokens[t]));
    stepText.appendChild(tok);
    tokenSpans.forEach((e, i) => e.classList.toggle("sv-current", i === t));
    drawCursor();
    stepTitle.textContent = `all quantities at t = ${t} (each cell one unit)`;
    s.gates.forEach((_, g) => paintStep(stepCanvases[g], s, g, t, Math.max(2, Math.min(16, Math.floor(480 / s.U)))));
    root.dataset.step = String(t);
  }

  // What changes with the gate: the big heatmap and the legend.
  function drawGate() {
    const g = gateIndex();
    gateSel.value = s.gates[g];
    paintHeat(heat, s, g, cw, ch);
    over.width = heat.width; over.height = heat.height;
    legendBox.replaceChildren(legend(s, g));
    root.dataset.gate = s.gates[g];
    drawCursor();
  }

  function rebuild() {
    s = readState(model);
    title.textContent = model.get("title");
    title.hidden = !model.get("title");
    cw = Math.max(6, Math.min(28, Math.floor(640 / s.T)));
    ch = Math.max(2, Math.min(14, Math.floor(260 / s.U)));
    gateSel.replaceChildren(...s.gates.map((g, i) => {
      const o = h("option", "", s.labels[i]);
      o.value = g;
      return o;
    }));
    slider.max = String(s.T - 1);
    unitAxis.replaceChildren();
    if (ch >= 10) {
      for (let u = 0; u < s.U; u++) {
        const e = h("span", "", String(u));
        e.style.height = e.style.lineHeight = `${ch}px`;
        unitAxis.appendChild(e);
      }
    } else {
      const e = h("span", "", `units 0\u2013${s.U - 1}`);
      e.style.writingMode = "vertical-rl";
      e.style.transform = "rotate(180deg)";
      unitAxis.appendChild(e);
    }
    const font = `${Math.min(13, cw - 1)}px`;
    strip.classList.toggle("sv-strip-short", s.tokens.every((t) => t.length <= 2));
    tokenSpans = s.tokens.map((t, i) => {
      const e = h("span", "sv-tok", visible(t));
      e.style.width = `${cw}px`;
      e.style.fontSize = font;
      e.title = `t = ${i}: ${t}`;
      e.addEventListener("click", () => { model.set("step", i); model.save_changes(); });
      return e;
    });
    strip.replaceChildren(...tokenSpans);
    table.replaceChildren();
    stepCanvases = s.gates.map((_, g) => {
      const tr = h("tr");
      const name = h("td", "sv-step-name", s.labels[g]);
      const td = h("td");
      const c = h("canvas", "sv-step-cells");
      td.appendChild(c);
      tr.append(name, td);
      table.appendChild(tr);
      return c;
    });
    root.dataset.shape = `${s.T}x${s.U}`;
    drawGate();
    drawStep();
  }

  heat.addEventListener("mousemove", (ev) => {
    const r = heat.getBoundingClientRect();
    const t = Math.floor(((ev.clientX - r.left) * (heat.width / r.width)) / cw);
    const u = Math.floor(((ev.clientY - r.top) * (heat.height / r.height)) / ch);
    if (t < 0 || u < 0 || t >= s.T || u >= s.U) return;
    const g = gateIndex();
    const tok = visible(s.tokens[t]);
    readout.textContent = `unit ${u}, t = ${t} \u201c${tok}\u201d: ${s.gates[g]}_t = ${fmt(valueAt(s, g, t, u))}`;
  });
  heat.addEventListener("mouseleave", () => { readout.textContent = "\u00a0"; });
  heat.addEventListener("click", (ev) => {
    const r = heat.getBoundingClientRect();
    const t = Math.floor(((ev.clientX - r.left) * (heat.width / r.width)) / cw);
    if (t >= 0 && t < s.T) { model.set("step", t); model.save_changes(); }
  });

  // Coalesce the burst of change events from one Python update into one redraw.
  let pending = new Set();
  const schedule = (what) => {
    const first = pending.size === 0;
    pending.add(what);
    if (first) {
      queueMicrotask(() => {
        const p = pending;
        pending = new Set();
        if (p.has("data")) rebuild();
        else { if (p.has("gate")) drawGate(); if (p.has("step")) drawStep(); }
      });
    }
  };
  const handlers = {};
  for (const k of ["traces", "gates", "labels", "kinds", "ranges", "shape", "tokens", "title"]) handlers[k] = "data";
  handlers.gate = "gate";
  handlers.step = "step";
  const listeners = Object.entries(handlers).map(([k, what]) => {
    const cb = () => schedule(what);
    model.on(`change:${k}`, cb);
    return [k, cb];
  });
  rebuild();
  return () => listeners.forEach(([k, cb]) => model.off(`change:${k}`, cb));
}

export default { render };
