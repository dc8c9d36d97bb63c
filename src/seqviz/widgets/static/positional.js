// PositionalMatrix view: its ES module is _prelude.js (palettes, h, slider, legend, onChanges, …) followed by this
// file. The encodings are computed here, in the browser, from the d_model / max_len / base sliders, with the same
// formula as seqviz.transformer.sinusoidal_encoding:
//   P[p, 2i] = sin(p / base^(2i/d)),  P[p, 2i+1] = cos(p / base^(2i/d)).
// State: d_model, max_len, base, dims (dimensions drawn as curves), positions ([p, q] compared), max_d_model,
// max_max_len, title.
// The panels fit their container (each at most SIDE or PLOT_W wide); the curves are told apart by colour (Okabe-Ito,
// safe for colour-blind readers) and by dash pattern, and the legend shows both.

const LINES = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442"];
const DASHES = [[], [6, 3], [2, 2], [8, 3, 2, 3], [1, 3], [10, 4], [4, 2, 1, 2], [12, 2]];
const SIDE_MAX = 256; // pixel side of the two matrix panels, at most
const PLOT_W_MAX = 380, PLOT_H = 256;
const AXIS_FONT = 12;

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

// Draw a rows x cols matrix into a side x side canvas; values mapped through lut on [lo, hi].
function paintMatrix(canvas, M, rows, cols, lo, hi, lut, side) {
  const img = new ImageData(cols, rows);
  const px = img.data;
  const scale = hi > lo ? 255 / (hi - lo) : 0;
  for (let n = 0; n < rows * cols; n++) {
    const q = Math.max(0, Math.min(255, Math.round((M[n] - lo) * scale))) * 3;
    px[4 * n] = lut[q]; px[4 * n + 1] = lut[q + 1]; px[4 * n + 2] = lut[q + 2]; px[4 * n + 3] = 255;
  }
  return blit(canvas, img, side, side, cols > side || rows > side);
}

// A short line in colour k and its dash pattern, for the legend.
function lineSwatch(k) {
  const c = document.createElement("canvas");
  c.width = 28; c.height = 10;
  c.setAttribute("aria-hidden", "true");
  const g = c.getContext("2d");
  g.strokeStyle = LINES[k % LINES.length];
  g.lineWidth = 2;
  g.setLineDash(DASHES[k % DASHES.length]);
  g.beginPath(); g.moveTo(0, 5); g.lineTo(28, 5); g.stroke();
  return c;
}

function render({ model, el }) {
  const { root, title, controls } = frame(el, "sv-pos");
  const dS = slider("d_model", "sv-d-model", 2, model.get("max_d_model"), 2);
  const nS = slider("max_len", "sv-max-len", 2, model.get("max_max_len"), 1);
  const bS = slider("base", "sv-base", 0.3, 5, 0.05); // log10(base)
  const dimsInput = h("input", "sv-dims");
  dimsInput.type = "text";
  dimsInput.size = 14;
  const pIn = h("input", "sv-pos-p"), qIn = h("input", "sv-pos-q");
  for (const e of [pIn, qIn]) { e.type = "number"; e.min = "0"; e.step = "1"; e.style.width = "4.5em"; }
  pIn.setAttribute("aria-label", "compare position p"); // one <label> names only its first input
  qIn.setAttribute("aria-label", "with position q");
  controls.append(dS.label, nS.label, bS.label, labelled("dimensions ", dimsInput),
    labelled("compare positions ", pIn, " and ", qIn));
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
  const readout = readoutLine("sv-readout sv-hover");
  const pair = h("div", "sv-readout sv-pair");
  const summary = srOnly("div", "sv-summary");
  summary.setAttribute("aria-live", "polite");
  note.setAttribute("role", "status");
  curveCanvas.setAttribute("role", "img");
  root.append(title, controls, note, panels, pair, readout, summary);

  let P = null, S = null, d = 0, n = 0, smin = 0, smax = 0, side = SIDE_MAX, plotW = PLOT_W_MAX, plotH = PLOT_H;
  let encCursor = null, simCursor = null;
  const fitPanels = (w) => {
    // at most SIDE_MAX, PLOT_W_MAX x PLOT_H, or less where the page asks (a slide deck sets --sv-pos-side etc.)
    const css = getComputedStyle(root), ask = (name, px) => parseFloat(css.getPropertyValue(name)) || px;
    side = Math.max(120, Math.min(ask("--sv-pos-side", SIDE_MAX), w - 4));
    plotW = Math.max(160, Math.min(ask("--sv-pos-plot-w", PLOT_W_MAX), w - 4));
    plotH = Math.max(120, ask("--sv-pos-plot-h", PLOT_H));
    for (const p of [p1, p3]) p.style.maxWidth = `${side}px`;
    p2.style.maxWidth = `${plotW}px`;
  };
  fitPanels(widthOf(root));

  const setAndSave = (k, v) => save(model, k, v);
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
    const ctx = paintMatrix(encCanvas, P, n, d, -1, 1, LUT_RDBU, side);
    const w = side / d;
    visibleDims().forEach((k, j) => {
      ctx.fillStyle = LINES[j % LINES.length];
      ctx.fillRect(k * w, 0, Math.max(2, w), 5);
    });
    const c = encCursor && encCursor.get();
    if (c) outline(ctx, c[1] * w, c[0] * (side / n), w, side / n);
    encLegend.replaceChildren(legend(LUT_RDBU, "\u22121", "1", "value", 120));
  }

  function outline(ctx, x, y, w, hh) {
    ctx.strokeStyle = "#000000";
    ctx.lineWidth = 1;
    ctx.strokeRect(x - 1.5, y - 1.5, Math.max(w, 2) + 3, Math.max(hh, 2) + 3);
    ctx.strokeStyle = "#ffffff";
    ctx.strokeRect(x - 0.5, y - 0.5, Math.max(w, 2) + 1, Math.max(hh, 2) + 1);
  }

  function drawCurves() {
    const PLOT_W = plotW, PLOT_H = plotH;
    curveCanvas.width = PLOT_W; curveCanvas.height = PLOT_H;
    const ctx = curveCanvas.getContext("2d");
    const L = 34, R = 8, T = 8, B = 24;
    const X = (p) => L + (n > 1 ? (p / (n - 1)) * (PLOT_W - L - R) : 0);
    const Y = (v) => T + ((1 - v) / 2) * (PLOT_H - T - B);
    ctx.clearRect(0, 0, PLOT_W, PLOT_H);
    ctx.font = `${AXIS_FONT}px sans-serif`;
    ctx.fillStyle = "#4d4d4d";
    ctx.strokeStyle = "rgba(128,128,128,0.5)";
    ctx.lineWidth = 1;
    for (const v of [-1, 0, 1]) {
      ctx.beginPath(); ctx.moveTo(L, Y(v)); ctx.lineTo(PLOT_W - R, Y(v)); ctx.stroke();
      ctx.fillText(String(v), 8, Y(v) + 4);
    }
    ctx.fillText("0", L - 3, PLOT_H - 8);
    ctx.fillText(String(n - 1), PLOT_W - R - 22, PLOT_H - 8);
    ctx.fillText("position p", PLOT_W / 2 - 28, PLOT_H - 8);
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = "#555";
    for (const p of visiblePositions()) {
      ctx.beginPath(); ctx.moveTo(X(p), T); ctx.lineTo(X(p), PLOT_H - B); ctx.stroke();
      ctx.fillText(String(p), X(p) + 2, T + 10);
    }
    ctx.setLineDash([]);
    curveLegend.replaceChildren();
    visibleDims().forEach((k, j) => {
      ctx.strokeStyle = LINES[j % LINES.length];
      ctx.setLineDash(DASHES[j % DASHES.length]);
      ctx.lineWidth = 1.8;
      ctx.beginPath();
      for (let p = 0; p < n; p++) {
        const v = P[p * d + k];
        if (p === 0) ctx.moveTo(X(p), Y(v)); else ctx.lineTo(X(p), Y(v));
      }
      ctx.stroke();
      const item = h("span", "sv-legend-item");
      item.append(lineSwatch(j), ` dim ${k} (${k % 2 === 0 ? "sin" : "cos"}, i=${Math.floor(k / 2)})`);
      curveLegend.appendChild(item);
    });
    ctx.setLineDash([]);
    curveCanvas.setAttribute("aria-label", `curves of dimensions ${visibleDims().join(", ")} of P over positions ` +
      `0\u2013${n - 1}, dashed lines at positions ${visiblePositions().join(" and ")}`);
    const hidden = model.get("dims").filter((x) => x >= d);
    if (hidden.length) {
      curveLegend.appendChild(h("span", "sv-note", `(dim ${hidden.join(", ")} hidden: d_model = ${d})`));
    }
  }

  function drawSimilarity() {
    const ctx = paintMatrix(simCanvas, S, n, n, smin, smax, LUT_VIRIDIS, side);
    const [p, q] = visiblePositions();
    const c = side / n;
    ctx.strokeStyle = ACCENT;
    ctx.lineWidth = 2;
    ctx.strokeRect(q * c - 1, p * c - 1, Math.max(c, 2) + 2, Math.max(c, 2) + 2);
    const k = simCursor && simCursor.get();
    if (k) outline(ctx, k[1] * c, k[0] * c, c, c);
    simLegend.replaceChildren(legend(LUT_VIRIDIS, smin.toFixed(1), smax.toFixed(1), "dot product", 120));
    pair.textContent = `P[${p}] \u00b7 P[${q}] = ${S[p * n + q].toFixed(3)}  (p \u2212 q = ${p - q}; ` +
      `P[p] \u00b7 P[p] = ${S[p * n + p].toFixed(1)} for every p)`;
    summary.textContent = `Sinusoidal positions for d_model = ${d}, max_len = ${n}, base = ${model.get("base")}. ` +
      `Curves of dimensions ${visibleDims().join(", ")}. ${pair.textContent}. The dot product of two positions ` +
      `ranges from ${smin.toFixed(1)} to ${smax.toFixed(1)} and depends only on their distance.`;
    noteFonts(root, [AXIS_FONT]);
  }

  function syncControls() {
    dS.input.max = String(model.get("max_d_model"));
    nS.input.max = String(model.get("max_max_len"));
    dS.input.value = String(d);
    nS.input.value = String(n);
    const base = model.get("base");
    bS.input.value = String(Math.log10(base));
    setValueText(bS, base >= 100 ? base.toFixed(0) : base.toFixed(2));
    setValueText(dS, String(d));
    setValueText(nS, String(n));
    if (document.activeElement !== dimsInput) dimsInput.value = model.get("dims").join(", ");
    const [p, q] = model.get("positions");
    pIn.max = qIn.max = String(n - 1);
    pIn.value = String(p); qIn.value = String(q);
    showTitle(title, model, "positional encodings");
    root.dataset.dModel = String(d); root.dataset.maxLen = String(n); root.dataset.base = String(base);
  }

  // The two matrices' read-outs, by mouse or keyboard (a cursor on each canvas).
  encCursor = cellCursor(encCanvas, {
    rows: () => n, cols: () => d, page: 10,
    cellAt: (ev) => cellUnder(ev, encCanvas, side / d, side / n, n, d),
    label: "P, positions by dimensions: arrow keys move from cell to cell",
    show: (p, k) => {
      drawEncoding();
      if (p === null) { readout.textContent = "\u00a0"; return; }
      const freq = 1 / Math.pow(model.get("base"), (k - (k % 2)) / d); // base^(-2i/d)
      const fn = k % 2 === 0 ? "sin" : "cos";
      readout.textContent = `P[${p}, ${k}] = ${P[p * d + k].toFixed(4)}  (${fn}, frequency ${freq.toPrecision(3)})`;
    },
  });
  simCursor = cellCursor(simCanvas, {
    rows: () => n, cols: () => n, page: 10,
    cellAt: (ev) => cellUnder(ev, simCanvas, side / n, side / n, n, n),
    label: "P P transposed, positions by positions: arrow keys move, Enter compares the two positions",
    show: (p, q) => {
      drawSimilarity();
      readout.textContent = p === null ? "\u00a0"
        : `P[${p}] \u00b7 P[${q}] = ${S[p * n + q].toFixed(3)}  (p \u2212 q = ${p - q})`;
    },
    activate: (p, q) => setAndSave("positions", [p, q]),
  });
  encCanvas.setAttribute("aria-roledescription", "matrix");
  simCanvas.setAttribute("aria-roledescription", "matrix");

  compute();
  syncControls();
  drawEncoding();
  drawCurves();
  drawSimilarity();
  const stopResize = onResize(root, (w) => { fitPanels(w); drawEncoding(); drawCurves(); drawSimilarity(); });
  // Recompute P and P P^T only when d_model, max_len or base changed; the rest redraws from them.
  const stop = onChanges(model, {
    heavy: ["d_model", "max_len", "base"],
    light: ["dims", "positions", "title", "max_d_model", "max_max_len"],
  }, (kinds) => {
    const full = kinds.has("heavy");
    if (full) compute();
    syncControls();
    drawEncoding();
    drawCurves();
    drawSimilarity();
  });
  return () => { stop(); stopResize(); };
}

export default { render };
