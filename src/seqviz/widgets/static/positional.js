// PositionalMatrix view (anywidget ES module, self-contained). The encodings are computed here, in the browser, from
// the d_model / max_len / base sliders, with the same formula as seqviz.widgets.positional.sinusoidal_encoding:
//   P[p, 2i] = sin(p / base^(2i/d)),  P[p, 2i+1] = cos(p / base^(2i/d)).
// State: d_model, max_len, base, dims (dimensions drawn as curves), positions ([p, q] compared), max_d_model,
// max_max_len, title.

const VIRIDIS = ["#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
  "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725"];
const RDBU = ["#053061", "#175290", "#2a71b2", "#3f8ec0", "#6bacd1", "#9bc9e0", "#c2ddec", "#e0ecf3", "#f7f6f6",
  "#fbe5d8", "#fbccb4", "#f5aa89", "#e48066", "#d05548", "#ba2832", "#930e26", "#67001f"];
const LINES = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
const SIDE = 256; // pixel side of the two matrix panels
const PLOT_W = 380, PLOT_H = 256;

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
const LUT_V = makeLut(VIRIDIS);
const LUT_D = makeLut(RDBU);

// P as a Float64Array, row-major (maxLen, d): exported so a test can compare it with the Python reference.
export function sinusoidalEncoding(maxLen, d, base) {
  const P = new Float64Array(maxLen * d);
  for (let k = 0; k < d; k += 2) {
    const div = Math.pow(base, k / d); // base^(2i/d) with k = 2i
    for (let p = 0; p < maxLen; p++) {
      const angle = p / div;
      P[p * d + k] = Math.sin(angle);
      if (k + 1 < d) P[p * d + k + 1] = Math.cos(angle);
    }
  }
  return P;
}

// S = P P^T (maxLen, maxLen), symmetric, so compute the upper triangle once.
export function dotProducts(P, maxLen, d) {
  const S = new Float64Array(maxLen * maxLen);
  for (let p = 0; p < maxLen; p++) {
    for (let q = p; q < maxLen; q++) {
      let acc = 0;
      const a = p * d, b = q * d;
      for (let k = 0; k < d; k++) acc += P[a + k] * P[b + k];
      S[p * maxLen + q] = acc;
      S[q * maxLen + p] = acc;
    }
  }
  return S;
}

function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// Draw a rows x cols matrix into a SIDE x SIDE canvas; values mapped through lut on [lo, hi].
function paintMatrix(canvas, M, rows, cols, lo, hi, lut) {
  canvas.width = SIDE; canvas.height = SIDE;
  const img = new ImageData(cols, rows);
  const px = img.data;
  const scale = hi > lo ? 255 / (hi - lo) : 0;
  for (let n = 0; n < rows * cols; n++) {
    const q = Math.max(0, Math.min(255, Math.round((M[n] - lo) * scale))) * 3;
    px[4 * n] = lut[q]; px[4 * n + 1] = lut[q + 1]; px[4 * n + 2] = lut[q + 2]; px[4 * n + 3] = 255;
  }
  const off = document.createElement("canvas");
  off.width = cols; off.height = rows;
  off.getContext("2d").putImageData(img, 0, 0);
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = cols > SIDE || rows > SIDE;
  ctx.drawImage(off, 0, 0, SIDE, SIDE);
  return ctx;
}

function legendBar(lut, lo, hi, label) {
  const box = h("div", "sv-legend");
  box.appendChild(h("span", "", lo));
  const c = h("canvas", "sv-legend-bar");
  c.width = 120; c.height = 10;
  const g = c.getContext("2d");
  for (let x = 0; x < 120; x++) {
    const q = Math.round((x / 119) * 255) * 3;
    g.fillStyle = `rgb(${lut[q]},${lut[q + 1]},${lut[q + 2]})`;
    g.fillRect(x, 0, 1, 10);
  }
  box.append(c, h("span", "", hi), h("span", "sv-legend-label", label));
  return box;
}

function slider(labelText, cls, min, max, step) {
  const label = h("label", "sv-control", `${labelText} `);
  const input = h("input", cls);
  input.type = "range";
  input.min = String(min); input.max = String(max); input.step = String(step);
  const value = h("span", "sv-value");
  label.append(input, value);
  return { label, input, value };
}

function render({ model, el }) {
  const root = h("div", "seqviz sv-pos");
  el.appendChild(root);
  const title = h("div", "sv-title");
  const controls = h("div", "sv-controls");
  const dS = slider("d_model", "sv-d-model", 2, model.get("max_d_model"), 2);
  const nS = slider("max_len", "sv-max-len", 2, model.get("max_max_len"), 1);
  const bS = slider("base", "sv-base", 0.3, 5, 0.05); // log10(base)
  const dimsLabel = h("label", "sv-control", "dimensions ");
  const dimsInput = h("input", "sv-dims");
  dimsInput.type = "text";
  dimsInput.size = 14;
  dimsLabel.appendChild(dimsInput);
  const posLabel = h("label", "sv-control", "compare positions ");
  const pIn = h("input", "sv-pos-p"), qIn = h("input", "sv-pos-q");
  for (const e of [pIn, qIn]) { e.type = "number"; e.min = "0"; e.step = "1"; e.style.width = "4.5em"; }
  posLabel.append(pIn, " and ", qIn);
  controls.append(dS.label, nS.label, bS.label, dimsLabel, posLabel);
  const note = h("div", "sv-note");

  const panels = h("div", "sv-pos-panels");
  const mk = (t) => {
    const p = h("div", "sv-panel");
    p.appendChild(h("div", "sv-panel-title", t));
    panels.appendChild(p);
    return p;
  };
  const p1 = mk("P: position (rows) \u00d7 dimension (columns)");
  const p2 = mk("chosen dimensions over positions");
  const p3 = mk("P P\u1d40: dot product of positions p (rows) and q (columns)");
  const encCanvas = h("canvas", "sv-enc");
  const curveCanvas = h("canvas", "sv-curves");
  const simCanvas = h("canvas", "sv-sim");
  const encLegend = h("div"), curveLegend = h("div", "sv-legend"), simLegend = h("div");
  p1.append(encCanvas, encLegend);
  p2.append(curveCanvas, curveLegend);
  p3.append(simCanvas, simLegend);
  const readout = h("div", "sv-readout sv-hover", "\u00a0");
  const pair = h("div", "sv-readout sv-pair");
  root.append(title, controls, note, panels, pair, readout);

  let P = null, S = null, d = 0, n = 0, smin = 0, smax = 0;

  const setAndSave = (k, v) => { model.set(k, v); model.save_changes(); };
  dS.input.addEventListener("input", () => setAndSave("d_model", parseInt(dS.input.value, 10)));
  nS.input.addEventListener("input", () => setAndSave("max_len", parseInt(nS.input.value, 10)));
  bS.input.addEventListener("input", () => {
    setAndSave("base", Math.round(Math.pow(10, parseFloat(bS.input.value)) * 100) / 100);
  });
  dimsInput.addEventListener("change", () => {
    const parts = dimsInput.value.split(/[\s,;]+/).filter((x) => x.length);
    const dims = parts.map((x) => Number(x));
    const dm = model.get("d_model");
    if (!dims.length || dims.length > 8 || dims.some((x) => !Number.isInteger(x) || x < 0 || x >= dm)) {
      note.textContent = `dimensions: give 1 to 8 whole numbers between 0 and ${dm - 1}, separated by commas`;
      return;
    }
    note.textContent = "";
    setAndSave("dims", dims);
  });
  const setPositions = () => {
    const ps = [Number(pIn.value), Number(qIn.value)];
    const nn = model.get("max_len");
    if (ps.some((x) => !Number.isInteger(x) || x < 0 || x >= nn)) {
      note.textContent = `positions: whole numbers between 0 and ${nn - 1}`;
      return;
    }
    note.textContent = "";
    setAndSave("positions", ps);
  };
  pIn.addEventListener("change", setPositions);
  qIn.addEventListener("change", setPositions);

  function compute() {
    d = model.get("d_model");
    n = model.get("max_len");
    P = sinusoidalEncoding(n, d, model.get("base"));
    S = dotProducts(P, n, d);
    smin = Infinity; smax = -Infinity;
    for (let k = 0; k < S.length; k++) { if (S[k] < smin) smin = S[k]; if (S[k] > smax) smax = S[k]; }
  }

  const visibleDims = () => model.get("dims").filter((x) => x < d);
  const visiblePositions = () => model.get("positions").map((x) => Math.min(x, n - 1));

  function drawEncoding() {
    const ctx = paintMatrix(encCanvas, P, n, d, -1, 1, LUT_D);
    const w = SIDE / d;
    visibleDims().forEach((k, j) => {
      ctx.fillStyle = LINES[j % LINES.length];
      ctx.fillRect(k * w, 0, Math.max(2, w), 5);
    });
    encLegend.replaceChildren(legendBar(LUT_D, "\u22121", "1", "value"));
  }

  function drawCurves() {
    curveCanvas.width = PLOT_W; curveCanvas.height = PLOT_H;
    const ctx = curveCanvas.getContext("2d");
    const L = 34, R = 8, T = 8, B = 24;
    const X = (p) => L + (n > 1 ? (p / (n - 1)) * (PLOT_W - L - R) : 0);
    const Y = (v) => T + ((1 - v) / 2) * (PLOT_H - T - B);
    ctx.clearRect(0, 0, PLOT_W, PLOT_H);
    ctx.font = "11px sans-serif";
    ctx.fillStyle = "#777";
    ctx.strokeStyle = "rgba(128,128,128,0.5)";
    ctx.lineWidth = 1;
    for (const v of [-1, 0, 1]) {
      ctx.beginPath(); ctx.moveTo(L, Y(v)); ctx.lineTo(PLOT_W - R, Y(v)); ctx.stroke();
      ctx.fillText(String(v), 8, Y(v) + 4);
    }
    ctx.fillText("0", L - 3, PLOT_H - 8);
    ctx.fillText(String(n - 1), PLOT_W - R - 20, PLOT_H - 8);
    ctx.fillText("position p", PLOT_W / 2 - 25, PLOT_H - 8);
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = "#555";
    for (const p of visiblePositions()) {
      ctx.beginPath(); ctx.moveTo(X(p), T); ctx.lineTo(X(p), PLOT_H - B); ctx.stroke();
      ctx.fillText(String(p), X(p) + 2, T + 10);
    }
    ctx.setLineDash([]);
    curveLegend.replaceChildren();
    visibleDims().forEach((k, j) => {
      const col = LINES[j % LINES.length];
      ctx.strokeStyle = col;
      ctx.lineWidth = 1.6;
      ctx.beginPath();
      for (let p = 0; p < n; p++) {
        const v = P[p * d + k];
        if (p === 0) ctx.moveTo(X(p), Y(v)); else ctx.lineTo(X(p), Y(v));
      }
      ctx.stroke();
      const item = h("span", "sv-legend-item");
      const sw = h("span", "sv-swatch", "\u25a0 ");
      sw.style.color = col;
      item.append(sw, `dim ${k} (${k % 2 === 0 ? "sin" : "cos"}, i=${Math.floor(k / 2)})  `);
      curveLegend.appendChild(item);
    });
    const hidden = model.get("dims").filter((x) => x >= d);
    if (hidden.length) {
      curveLegend.appendChild(h("span", "sv-note", `(dim ${hidden.join(", ")} hidden: d_model = ${d})`));
    }
  }

  function drawSimilarity() {
    const ctx = paintMatrix(simCanvas, S, n, n, smin, smax, LUT_V);
    const [p, q] = visiblePositions();
    const c = SIDE / n;
    ctx.strokeStyle = "#e4572e";
    ctx.lineWidth = 2;
    ctx.strokeRect(q * c - 1, p * c - 1, Math.max(c, 2) + 2, Math.max(c, 2) + 2);
    simLegend.replaceChildren(legendBar(LUT_V, smin.toFixed(1), smax.toFixed(1), "dot product"));
    pair.textContent = `P[${p}] \u00b7 P[${q}] = ${S[p * n + q].toFixed(3)}  (p \u2212 q = ${p - q}; ` +
      `P[p] \u00b7 P[p] = ${S[p * n + p].toFixed(1)} for every p)`;
  }

  function syncControls() {
    dS.input.value = String(d); dS.value.textContent = String(d);
    nS.input.value = String(n); nS.value.textContent = String(n);
    const base = model.get("base");
    bS.input.value = String(Math.log10(base)); bS.value.textContent = base >= 100 ? base.toFixed(0) : base.toFixed(2);
    if (document.activeElement !== dimsInput) dimsInput.value = model.get("dims").join(", ");
    const [p, q] = model.get("positions");
    pIn.max = qIn.max = String(n - 1);
    pIn.value = String(p); qIn.value = String(q);
    title.textContent = model.get("title");
    title.hidden = !model.get("title");
    root.dataset.dModel = String(d); root.dataset.maxLen = String(n); root.dataset.base = String(base);
  }

  function hover(canvas, rows, cols, describe) {
    canvas.addEventListener("mousemove", (ev) => {
      const r = canvas.getBoundingClientRect();
      const i = Math.floor(((ev.clientY - r.top) / r.height) * rows());
      const j = Math.floor(((ev.clientX - r.left) / r.width) * cols());
      if (i >= 0 && j >= 0 && i < rows() && j < cols()) readout.textContent = describe(i, j);
    });
    canvas.addEventListener("mouseleave", () => { readout.textContent = "\u00a0"; });
  }
  hover(encCanvas, () => n, () => d, (p, k) => {
    const freq = 1 / Math.pow(model.get("base"), (k - (k % 2)) / d); // base^(-2i/d)
    const fn = k % 2 === 0 ? "sin" : "cos";
    return `P[${p}, ${k}] = ${P[p * d + k].toFixed(4)}  (${fn}, frequency ${freq.toPrecision(3)})`;
  });
  hover(simCanvas, () => n, () => n,
    (p, q) => `P[${p}] \u00b7 P[${q}] = ${S[p * n + q].toFixed(3)}  (p \u2212 q = ${p - q})`);

  // Coalesce bursts of change events; recompute P and P P^T only when d_model, max_len or base changed.
  let pending = null;
  const schedule = (recompute) => {
    if (pending !== null) { pending = pending || recompute; return; }
    pending = recompute;
    queueMicrotask(() => {
      const full = pending;
      pending = null;
      if (full) compute();
      syncControls();
      if (full) drawEncoding();
      drawCurves();
      drawSimilarity();
      if (!full) drawEncoding();
    });
  };
  const heavy = ["d_model", "max_len", "base"], light = ["dims", "positions", "title"];
  const onHeavy = () => schedule(true), onLight = () => schedule(false);
  heavy.forEach((k) => model.on(`change:${k}`, onHeavy));
  light.forEach((k) => model.on(`change:${k}`, onLight));
  compute();
  syncControls();
  drawEncoding();
  drawCurves();
  drawSimilarity();
  return () => {
    heavy.forEach((k) => model.off(`change:${k}`, onHeavy));
    light.forEach((k) => model.off(`change:${k}`, onLight));
  };
}

export default { render };
