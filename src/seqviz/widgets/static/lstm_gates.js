// LSTMGates view: its ES module is _prelude.js (palettes, h, bytesOf, legend, onChanges, …) followed by this file, so
// it imports nothing and also runs from the static book's widget state.
// State (see lstm_gates.py): traces = uint8 bytes (G, T, units) C order, gate g decoded as lo + q / 255 * (hi - lo)
// with [lo, hi] = ranges[g]; gates, labels, kinds ("sigmoid" | "tanh" | "cell"); shape = [T, units]; tokens;
// gate (selected name); step (current time step); title.

const LUTS = { sigmoid: LUT_VIRIDIS, tanh: LUT_RDBU, cell: LUT_RDBU };

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

const WHAT = { sigmoid: "sigmoid gate, 0..1", tanh: "tanh, \u22121..1", cell: "cell state (not squashed)" };
const gateLegend = (s, g) => legend(LUTS[s.kinds[g]], fmt(s.ranges[g][0]), fmt(s.ranges[g][1]),
  `${s.labels[g]}: ${WHAT[s.kinds[g]]}`);

function render({ model, el }) {
  const { root, title, controls } = frame(el, "sv-lstm");
  let s = null;

  const gateSel = h("select", "sv-gate");
  const stepS = slider("time step", "sv-step", 0, 0, 1);
  const stepText = stepS.value;
  stepText.classList.add("sv-step-text");
  controls.append(labelled("show ", gateSel), stepS.label);

  const main = h("div", "sv-lstm-main");
  const unitAxis = h("div", "sv-units");
  const wrap = h("div", "sv-canvas-wrap");
  const heat = h("canvas", "sv-heat");
  const over = h("canvas", "sv-overlay");
  wrap.append(heat, over);
  const strip = h("div", "sv-strip");
  main.append(unitAxis, wrap, h("div", "sv-corner"), strip);
  const readout = readoutLine();
  const legendBox = h("div", "sv-legend-wrap");
  const stepTitle = h("div", "sv-panel-title");
  const table = h("table", "sv-step-table");
  root.append(title, controls, main, readout, legendBox, stepTitle, table);

  let cw = 10, ch = 6, tokenSpans = [], stepCanvases = [];

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
    ctx.strokeRect(t * cw + 1, 1, cw - 2, over.height - 2);
  }

  // What changes with the time step: cursor, token highlight, slider, per-step table.
  function drawStep() {
    const t = currentStep();
    stepS.input.value = String(t);
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
    legendBox.replaceChildren(gateLegend(s, g));
    root.dataset.gate = s.gates[g];
    drawCursor();
  }

  function rebuild() {
    s = readState(model);
    showTitle(title, model);
    cw = Math.max(6, Math.min(28, Math.floor(640 / s.T)));
    ch = Math.max(2, Math.min(14, Math.floor(260 / s.U)));
    gateSel.replaceChildren(...s.gates.map((g, i) => {
      const o = h("option", "", s.labels[i]);
      o.value = g;
      return o;
    }));
    stepS.input.max = String(s.T - 1);
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
      e.addEventListener("click", () => save(model, "step", i));
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
    if (t >= 0 && t < s.T) save(model, "step", t);
  });

  rebuild();
  // New data rebuilds; a gate or time-step change redraws only what it touches.
  return onChanges(model, {
    data: ["traces", "gates", "labels", "kinds", "ranges", "shape", "tokens", "title"],
    gate: ["gate"],
    step: ["step"],
  }, (kinds) => {
    if (kinds.has("data")) { rebuild(); return; }
    if (kinds.has("gate")) drawGate();
    if (kinds.has("step")) drawStep();
  });
}

export default { render };
