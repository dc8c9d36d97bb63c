// LSTMGates view: its ES module is _prelude.js (palettes, h, bytesOf, legend, onChanges, …) and _live.js (the live
// bar) followed by this file, so it imports nothing and also runs from the static book's widget state.
// State (see lstm_gates.py): traces = uint8 bytes (G, T, units) C order, gate g decoded as lo + q / 255 * (hi - lo)
// with [lo, hi] = ranges[g]; gates, labels, kinds ("sigmoid" | "tanh" | "cell"); shape = [T, units]; tokens;
// gate (selected name); step (current time step); title; live_spec (LSTMGates.live): the shipped character LSTM's
// gates and states of one layer (the bar's layer selector) over the reader's text, from the zero state.
// The heatmap fits its container: time steps as wide as the width allows (at most 28 px); where a step would be too
// narrow for its token's label, the time axis keeps 14 px steps and scrolls sideways in a box the keyboard can reach,
// following the time step.

const LUTS = { sigmoid: LUT_VIRIDIS, tanh: LUT_RDBU, cell: LUT_RDBU };
const UNITS_PX = 260; // height of the units axis
const AXIS_W = 34; // the unit axis's labels

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
  blit(canvas, img, s.T * cw, s.U * ch);
}

// One row of `units` cells: gate g at time step t, `width` pixels wide.
function paintStep(canvas, s, g, t, width) {
  const cw = width / s.U;
  canvas.width = Math.max(1, Math.round(width));
  canvas.height = 12;
  const ctx = canvas.getContext("2d");
  const lut = LUTS[s.kinds[g]];
  for (let u = 0; u < s.U; u++) {
    const q = byteAt(s, g, t, u) * 3;
    ctx.fillStyle = `rgb(${lut[q]},${lut[q + 1]},${lut[q + 2]})`;
    ctx.fillRect(Math.floor(u * cw), 0, Math.ceil(cw), 12);
  }
}

const WHAT = { sigmoid: "sigmoid gate, 0..1", tanh: "tanh, \u22121..1", cell: "cell state (not squashed)" };
const gateLegend = (s, g) => legend(LUTS[s.kinds[g]], fmt(s.ranges[g][0]), fmt(s.ranges[g][1]),
  `${s.labels[g]}: ${WHAT[s.kinds[g]]}`);

// Mean and the units with the largest values of gate g at step t (for the text alternative).
function stepStats(s, g, t) {
  let sum = 0;
  const units = [];
  for (let u = 0; u < s.U; u++) { const v = valueAt(s, g, t, u); sum += v; units.push([v, u]); }
  units.sort((a, b) => b[0] - a[0]);
  return { mean: sum / s.U, top: units.slice(0, 3), bottom: units.slice(-1)[0] };
}

// What the widget draws for the reader's text, computed in the page (the traits LSTMGates.set_data sets): each gate
// the recorded example shows, of one layer, quantised over its range (a sigmoid 0..1, tanh -1..1, the cell state
// symmetric around 0, at least -1..1).
async function liveGates(model, m, text, layer) {
  const e = m.encode(text); // cropped by the model's rule (the manifest's crop: the first characters the widget draws)
  const t = await m.trace(e.ids); // each (L, T, d_h)
  const T = t.T, U = t.dh, gates = model.get("gates"), kinds = model.get("kinds");
  const traces = new Uint8Array(gates.length * T * U), ranges = [];
  gates.forEach((g, i) => {
    const values = t[g].subarray(layer * T * U, (layer + 1) * T * U);
    let r = 1;
    if (kinds[i] === "cell") for (const x of values) r = Math.max(r, Math.abs(x));
    const [lo, hi] = kinds[i] === "sigmoid" ? [0, 1] : kinds[i] === "tanh" ? [-1, 1] : [-r, r];
    ranges.push([lo, hi]);
    quantized(values, lo, hi, traces, i * T * U);
  });
  return { traits: { traces: new DataView(traces.buffer), ranges, shape: [T, U], tokens: e.chars },
    view: { step: Math.min(model.get("step"), T - 1) }, notes: e.notes,
    status: `read ${e.ids.length} characters; layer ${layer} shown`, raw: { ids: e.ids, layer, trace: t } };
}

function render({ model, el }) {
  const { root, title, controls } = frame(el, "sv-lstm");
  let s = null;

  const gateSel = h("select", "sv-gate");
  const stepS = slider("time step", "sv-step", 0, 0, 1);
  controls.append(labelled("show ", gateSel), stepS.label);

  const main = h("div", "sv-lstm-main");
  const unitAxis = h("div", "sv-units");
  unitAxis.setAttribute("aria-hidden", "true");
  const wrap = h("div", "sv-canvas-wrap");
  const heat = h("canvas", "sv-heat");
  const over = h("canvas", "sv-overlay");
  over.setAttribute("aria-hidden", "true");
  wrap.append(heat, over);
  const strip = h("div", "sv-strip");
  strip.setAttribute("aria-hidden", "true"); // the slider and the cursor's read-out say which token a step is
  let area = null; // the heatmap and its token strip, plain or in a scrolling box
  const axes = h("div", "sv-axes", "rows: units \u00b7 columns: time steps (the token read at each step)");
  const readout = readoutLine();
  const legendBox = h("div", "sv-legend-wrap");
  const stepTitle = h("div", "sv-panel-title");
  const table = h("div", "sv-step-table");
  const summary = srOnly("div", "sv-summary");
  summary.setAttribute("aria-live", "polite");
  root.append(title, controls, axes, main, readout, legendBox, stepTitle, table, summary);
  let liveLayer = 0;
  const live = liveHost(model, root, title, {
    page: (_, m, text, request) => liveGates(model, m, text, request.layer),
    request: () => ({ layer: liveLayer }),
    controls: (bar, row) => {
      const spec = model.get("live_spec");
      liveLayer = spec.layer;
      const sel = h("select", "sv-live-layer");
      for (let l = 0; l < spec.layers; l++) {
        const o = h("option", "", `layer ${l}`);
        o.value = String(l);
        sel.appendChild(o);
      }
      sel.value = String(liveLayer);
      sel.addEventListener("change", () => { liveLayer = parseInt(sel.value, 10); bar.run(); });
      row.appendChild(labelled("show ", sel));
    },
  });

  let cw = 10, ch = 6, width = widthOf(root), font = 0, tokenSpans = [], stepCanvases = [], stepWidth = 0;
  let cursor = null;

  gateSel.addEventListener("change", () => save(model, "gate", gateSel.value));
  stepS.input.addEventListener("input", () => save(model, "step", parseInt(stepS.input.value, 10)));

  const gateIndex = () => Math.max(0, s.gates.indexOf(model.get("gate")));
  const currentStep = () => Math.min(Math.max(model.get("step"), 0), s.T - 1);

  function drawCursor() {
    const t = currentStep();
    const ctx = over.getContext("2d");
    ctx.clearRect(0, 0, over.width, over.height);
    ctx.strokeStyle = ACCENT;
    ctx.lineWidth = 2;
    ctx.strokeRect(t * cw + 1, 1, Math.max(1, cw - 2), over.height - 2);
    const c = cursor && cursor.get();
    if (c) {
      ctx.strokeStyle = "#ffffff";
      ctx.lineWidth = 2;
      ctx.strokeRect(c[1] * cw, c[0] * ch, cw, ch);
      ctx.strokeStyle = "#000000";
      ctx.lineWidth = 1;
      ctx.strokeRect(c[1] * cw - 1.5, c[0] * ch - 1.5, cw + 3, ch + 3);
    }
  }

  function keepInView(t) {
    if (!area || !area.classList.contains("sv-scroll")) return;
    const x = t * cw;
    if (x < area.scrollLeft) area.scrollLeft = Math.max(0, x - 2 * cw);
    else if (x + cw > area.scrollLeft + area.clientWidth) area.scrollLeft = x + 3 * cw - area.clientWidth;
  }

  function summarize() {
    const t = currentStep(), g = gateIndex();
    const st = stepStats(s, g, t);
    const top = st.top.map(([v, u]) => `unit ${u} ${fmt(v)}`).join(", ");
    summary.textContent = `${s.labels[g]} over ${s.T} time steps and ${s.U} units. At t = ${t}, ` +
      `token \u201c${visible(s.tokens[t])}\u201d: mean ${fmt(st.mean)}; largest ${top}; smallest unit ` +
      `${st.bottom[1]} ${fmt(st.bottom[0])}.`;
  }

  // What changes with the time step: cursor, token highlight, slider, per-step table.
  function drawStep() {
    const t = currentStep();
    stepS.input.value = String(t);
    setValueText(stepS, `t = ${t}: \u201c${visible(s.tokens[t])}\u201d`);
    tokenSpans.forEach((e, i) => e.classList.toggle("sv-current", i === t));
    drawCursor();
    keepInView(t);
    stepTitle.textContent = `all quantities at t = ${t} (each cell one unit, units 0\u2013${s.U - 1} left to right)`;
    s.gates.forEach((_, g) => paintStep(stepCanvases[g], s, g, t, stepWidth));
    root.dataset.step = String(t);
    summarize();
  }

  // What changes with the gate: the big heatmap and the legend.
  function drawGate() {
    const g = gateIndex();
    gateSel.value = s.gates[g];
    paintHeat(heat, s, g, cw, ch);
    over.width = heat.width; over.height = heat.height;
    legendBox.replaceChildren(gateLegend(s, g));
    root.dataset.gate = s.gates[g];
    drawCursor();
    summarize();
  }

  // Lay the heatmap out for the width: a step per cw pixels, labelled when cw leaves room for a 10 px label.
  function layout() {
    const fit = Math.min(28, Math.floor((width - AXIS_W - 4) / s.T));
    const scroll = fit < LABEL_CELL_PX - 2;
    cw = scroll ? LABEL_CELL_PX : Math.max(1, fit);
    // the units axis is UNITS_PX high, or less where the page asks (a slide deck sets --sv-lstm-units-px)
    const unitsPx = parseFloat(getComputedStyle(root).getPropertyValue("--sv-lstm-units-px")) || UNITS_PX;
    ch = Math.max(unitsPx < UNITS_PX ? 1 : 2, Math.min(14, Math.floor(unitsPx / s.U)));
    font = labelFont(cw);
    const next = scroll ? scroller(`${s.T} time steps, scrolls sideways; it follows the time step`, "sv-lstm-scroll")
      : h("div", "sv-lstm-area");
    next.append(wrap, strip);
    if (area) area.replaceWith(next); else main.append(unitAxis, next);
    area = next;
    unitAxis.replaceChildren();
    unitAxis.style.width = `${AXIS_W}px`;
    if (ch >= 12) {
      for (let u = 0; u < s.U; u++) {
        const e = h("span", "", String(u));
        e.style.height = e.style.lineHeight = `${ch}px`;
        unitAxis.appendChild(e);
      }
    } else {
      const e = h("span", "sv-units-span", `units 0\u2013${s.U - 1}`);
      e.style.height = `${s.U * ch}px`;
      unitAxis.appendChild(e);
    }
    strip.classList.toggle("sv-strip-short", s.tokens.every((t) => t.length <= 2));
    tokenSpans = s.tokens.map((t, i) => {
      const e = h("span", "sv-tok", visible(t));
      e.style.width = `${cw}px`;
      e.style.fontSize = `${font}px`;
      e.title = `t = ${i}: ${t}`;
      e.addEventListener("click", () => save(model, "step", i));
      return e;
    });
    strip.replaceChildren(...tokenSpans);
    const nameW = Math.min(210, Math.floor(width * 0.45));
    // a pixel per unit where that fits; more units than the column has pixels share them (a row then wraps under
    // its name and takes the column's width)
    stepWidth = Math.min(width - 4, Math.max(s.U, Math.min(480, width - nameW - 12)));
    table.replaceChildren();
    stepCanvases = s.gates.map((_, g) => {
      const row = h("div", "sv-step-row");
      const name = h("span", "sv-step-name", s.labels[g]);
      name.style.width = `${nameW}px`;
      const c = h("canvas", "sv-step-cells");
      c.setAttribute("role", "img");
      c.setAttribute("aria-label", `${s.labels[g]} of every unit at the current step (see the summary below)`);
      row.append(name, c);
      table.appendChild(row);
      return c;
    });
    root.dataset.scroll = String(scroll);
    root.dataset.cell = String(cw);
    noteFonts(root, [font]);
  }

  function rebuild() {
    s = readState(model);
    showTitle(title, model, "LSTM gates");
    gateSel.replaceChildren(...s.gates.map((g, i) => {
      const o = h("option", "", s.labels[i]);
      o.value = g;
      return o;
    }));
    stepS.input.max = String(s.T - 1);
    root.dataset.shape = `${s.T}x${s.U}`;
    layout();
    drawGate();
    drawStep();
  }

  cursor = cellCursor(heat, {
    rows: () => s.U, cols: () => s.T,
    cellAt: (ev) => cellUnder(ev, heat, cw, ch, s.U, s.T),
    label: "gate values, units by time steps: arrow keys move from cell to cell, Enter makes the column the time step",
    page: 16,
    show: (u, t) => {
      drawCursor();
      root.dataset.cursor = u === null ? "" : `${u},${t}`;
      if (u === null) { readout.textContent = "\u00a0"; return; }
      const g = gateIndex();
      readout.textContent = `unit ${u}, t = ${t} \u201c${visible(s.tokens[t])}\u201d: ${s.gates[g]}_t = ` +
        `${fmt(valueAt(s, g, t, u))}`;
      keepInView(t);
    },
    activate: (u, t) => save(model, "step", t),
  });

  rebuild();
  const stopResize = onResize(root, (w) => { width = w; layout(); drawGate(); drawStep(); });
  // New data rebuilds; a gate or time-step change redraws only what it touches; a new live_spec makes a new bar.
  const stop = onChanges(model, {
    data: ["traces", "gates", "labels", "kinds", "ranges", "shape", "tokens", "title"],
    gate: ["gate"],
    step: ["step"],
    live: ["live_spec"],
  }, (kinds) => {
    if (kinds.has("live")) live.reset();
    if (kinds.has("data")) { rebuild(); return; }
    if (kinds.has("gate")) drawGate();
    if (kinds.has("step")) drawStep();
  });
  return () => { stop(); stopResize(); live.stop(); };
}

export default { render };
