// AttentionSteps view. The widget's ES module is _prelude.js (h, bytesOf, LUT_RDBU, legend, onChanges, …) followed
// by this file; it imports nothing, so it also runs from the widget state of the static book.
// State (see attention_steps.py): q, k, v = little-endian float32 or float64 bytes (dtype "f4" | "f8"), C order
// (L, H, T_q, d_k), (L, H, T_k, d_k), (L, H, T_k, d_v); shape = [L, H, T_q, T_k, d_k, d_v]; query_tokens,
// key_tokens, query_positions (query i sees keys j <= query_positions[i] under the causal mask); layer_ids,
// head_ids (the model's numbers of the layers and heads sent); query, causal, layer, head; title.
// Every number shown is computed here from q, k, v (attendOne), as SLP (9.30)-(9.39) write it.

const ROW_PX = 18; // one key per row
const STRIP_PX = 150; // target width of one vector
const SMALL_D = 8; // vectors this short are also printed as numbers

function readFloats(v, dtype) {
  const b = bytesOf(v);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const size = dtype === "f8" ? 8 : 4;
  const out = new Float64Array(b.byteLength / size);
  for (let i = 0; i < out.length; i++) out[i] = size === 8 ? dv.getFloat64(8 * i, true) : dv.getFloat32(4 * i, true);
  return out;
}

// One query's attention over T_k keys: q (d_k), K (T_k x d_k) and V (T_k x d_v) row-major; keys j > last are masked
// (last = T_k - 1: no mask). Returns every intermediate number, as Float64Arrays.
export function attendOne(q, K, V, dk, dv, Tk, last) {
  const products = new Float64Array(Tk * dk), dots = new Float64Array(Tk), scaled = new Float64Array(Tk);
  const weights = new Float64Array(Tk), weighted = new Float64Array(Tk * dv), output = new Float64Array(dv);
  const scale = 1 / Math.sqrt(dk);
  let max = -Infinity;
  for (let j = 0; j < Tk; j++) {
    let dot = 0;
    for (let d = 0; d < dk; d++) {
      const p = q[d] * K[j * dk + d];
      products[j * dk + d] = p;
      dot += p;
    }
    dots[j] = dot; // (9.35) q_i . k_j
    scaled[j] = dot * scale; // (9.37) q_i . k_j / sqrt(d_k)
    if (j <= last && scaled[j] > max) max = scaled[j];
  }
  let total = 0;
  for (let j = 0; j <= last; j++) { weights[j] = Math.exp(scaled[j] - max); total += weights[j]; }
  for (let j = 0; j <= last; j++) weights[j] /= total; // (9.31)-(9.32) softmax over the keys it may see
  for (let j = 0; j <= last; j++) {
    for (let c = 0; c < dv; c++) {
      const x = weights[j] * V[j * dv + c];
      weighted[j * dv + c] = x;
      output[c] += x; // (9.36) y_i = sum_j alpha_ij v_j
    }
  }
  return { products, dots, scaled, weights, weighted, output };
}

function maxAbs(a, from, to) {
  let m = 0;
  for (let i = from; i < to; i++) m = Math.max(m, Math.abs(a[i]));
  return m || 1;
}

// rows x cols matrix (row-major, from offset) as cells of cw x ROW_PX pixels with a gap between rows, coloured on a
// symmetric scale -m..m (RdBu: blue negative, red positive); rows for which faded(r) is true are drawn pale. The
// numbers become one pixel each in a scratch canvas, and each row is scaled up into its cells without smoothing.
const scratch = document.createElement("canvas");
function paintMatrix(canvas, a, offset, rows, cols, cw, m, faded) {
  if (canvas.width !== cols * cw) canvas.width = cols * cw;
  if (canvas.height !== rows * ROW_PX) canvas.height = rows * ROW_PX;
  const img = new ImageData(cols, rows);
  for (let i = 0; i < rows * cols; i++) {
    const q = Math.max(0, Math.min(255, Math.round(((a[offset + i] / m + 1) / 2) * 255))) * 3;
    img.data[4 * i] = LUT_RDBU[q];
    img.data[4 * i + 1] = LUT_RDBU[q + 1];
    img.data[4 * i + 2] = LUT_RDBU[q + 2];
    img.data[4 * i + 3] = 255;
  }
  scratch.width = cols;
  scratch.height = rows;
  scratch.getContext("2d").putImageData(img, 0, 0);
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.imageSmoothingEnabled = false;
  for (let r = 0; r < rows; r++) {
    g.globalAlpha = faded && faded(r) ? 0.18 : 1;
    g.drawImage(scratch, 0, r, cols, 1, 0, r * ROW_PX + 2, cols * cw, ROW_PX - 4);
  }
  g.globalAlpha = 1;
}

const num = (x) => (Math.abs(x) >= 100 ? x.toFixed(1) : x.toFixed(3));
const vecText = (a, from, n) => `[${Array.from(a.slice(from, from + n), num).join(", ")}]`;

function render({ model, el }) {
  const { root, title, controls } = frame(el, "sv-steps");
  const layerSel = h("select", "sv-layer");
  const headSel = h("select", "sv-head");
  const layerLabel = labelled("layer ", layerSel);
  const headLabel = labelled("head ", headSel);
  const causal = h("input", "sv-causal");
  causal.type = "checkbox";
  controls.append(layerLabel, headLabel, labelled("", causal, " causal mask (query i sees keys j \u2264 i)"));
  const queries = h("div", "sv-steps-queries");
  const qLine = h("div", "sv-steps-qline");
  const grid = h("div", "sv-steps-grid");
  const outLine = h("div", "sv-steps-out");
  const readout = readoutLine();
  const legendBox = h("div", "sv-legend-wrap");
  root.append(title, controls, queries, qLine, grid, outLine, readout, legendBox);

  layerSel.addEventListener("change", () => save(model, "layer", parseInt(layerSel.value, 10)));
  headSel.addEventListener("change", () => save(model, "head", parseInt(headSel.value, 10)));
  causal.addEventListener("change", () => save(model, "causal", causal.checked));

  let S = null, V = null, R = null, cur = null; // state; the view's elements; the last result; its selection

  function readState() {
    const [L, H, Tq, Tk, dk, dv] = model.get("shape");
    const dtype = model.get("dtype");
    S = { L, H, Tq, Tk, dk, dv, q: readFloats(model.get("q"), dtype), k: readFloats(model.get("k"), dtype),
      v: readFloats(model.get("v"), dtype), qt: model.get("query_tokens"), kt: model.get("key_tokens"),
      pos: model.get("query_positions"), layerIds: model.get("layer_ids"), headIds: model.get("head_ids") };
  }

  function fillSelect(sel, ids, prefix) {
    sel.replaceChildren(...ids.map((id, i) => {
      const o = h("option", "", `${prefix} ${id}`);
      o.value = String(i);
      return o;
    }));
  }

  // The grid: a header, one row per key j, a sum row. The vector columns are canvases spanning every key row.
  function build() {
    const cwK = Math.max(2, Math.min(16, Math.floor(STRIP_PX / S.dk)));
    const cwV = Math.max(2, Math.min(16, Math.floor(STRIP_PX / S.dv)));
    grid.replaceChildren();
    grid.style.gridTemplateRows = `auto repeat(${S.Tk}, ${ROW_PX}px) auto`;
    const heads = ["j", "key", "k_j", "q_i \u2299 k_j", "q_i \u00b7 k_j (9.35)", `\u00f7 \u221a${S.dk} (9.37)`,
      "\u03b1_ij = softmax (9.31)\u2013(9.32)", "v_j", "\u03b1_ij v_j"];
    heads.forEach((t, c) => {
      const e = h("div", "sv-steps-head", t);
      e.style.gridColumn = String(c + 1);
      grid.appendChild(e);
    });
    const canvas = (cls, col, rows, w) => {
      const c = h("canvas", `sv-steps-mat ${cls}`);
      c.style.gridColumn = String(col);
      c.style.gridRow = `2 / span ${rows}`;
      c.width = w;
      c.height = rows * ROW_PX;
      grid.appendChild(c);
      return c;
    };
    const kC = canvas("sv-steps-k", 3, S.Tk, S.dk * cwK);
    const pC = canvas("sv-steps-prod", 4, S.Tk, S.dk * cwK);
    const vC = canvas("sv-steps-v", 8, S.Tk, S.dv * cwV);
    const wC = canvas("sv-steps-weighted", 9, S.Tk, S.dv * cwV);
    const rows = [];
    for (let j = 0; j < S.Tk; j++) {
      const cell = (cls, col, text) => {
        const e = h("div", `sv-steps-cell ${cls}`, text);
        e.style.gridColumn = String(col);
        e.style.gridRow = String(j + 2);
        grid.appendChild(e);
        return e;
      };
      const tok = cell("sv-steps-key sv-tok", 2, visible(S.kt[j]));
      tok.title = S.kt[j];
      const bar = h("div", "sv-steps-bar");
      const wNum = h("span", "sv-steps-wnum");
      const w = cell("sv-steps-weight", 7);
      w.append(bar, wNum);
      rows.push({ idx: cell("sv-steps-j", 1, String(j)), tok, dot: cell("sv-steps-dot", 5),
        scaled: cell("sv-steps-scaled", 6), w, bar, wNum });
    }
    const foot = (cls, col, text) => {
      const e = h("div", `sv-steps-foot ${cls}`, text);
      e.style.gridColumn = String(col);
      e.style.gridRow = String(S.Tk + 2);
      grid.appendChild(e);
      return e;
    };
    foot("", 2, "\u03a3_j");
    const wSum = foot("sv-steps-wsum", 7, "");
    const yC = h("canvas", "sv-steps-mat sv-steps-y");
    yC.style.gridColumn = "9";
    yC.style.gridRow = String(S.Tk + 2);
    grid.appendChild(yC);
    foot("sv-steps-ylabel", 8, "y_i =");
    const qC = h("canvas", "sv-steps-mat sv-steps-q");
    V = { cwK, cwV, kC, pC, vC, wC, yC, qC, rows, wSum };
    // hover: which number a cell of a vector column is
    const hover = (c, fn) => {
      c.addEventListener("mousemove", (ev) => {
        const r = c.getBoundingClientRect();
        const x = Math.floor(((ev.clientX - r.left) * c.width) / r.width);
        const y = Math.floor(((ev.clientY - r.top) * c.height) / r.height);
        readout.textContent = fn(Math.floor(y / ROW_PX), x) || "\u00a0";
      });
      c.addEventListener("mouseleave", () => { readout.textContent = "\u00a0"; });
    };
    const qOff = () => ((cur.l * S.H + cur.hd) * S.Tq + cur.i) * S.dk;
    const kOff = () => (cur.l * S.H + cur.hd) * S.Tk * S.dk;
    const vOff = () => (cur.l * S.H + cur.hd) * S.Tk * S.dv;
    hover(kC, (j, x) => {
      const d = Math.floor(x / cwK);
      return `k_${j}[${d}] = ${num(S.k[kOff() + j * S.dk + d])} (key \u201c${S.kt[j]}\u201d)`;
    });
    hover(pC, (j, x) => {
      const d = Math.floor(x / cwK);
      return `q_i[${d}] \u00d7 k_${j}[${d}] = ${num(S.q[qOff() + d])} \u00d7 ${num(S.k[kOff() + j * S.dk + d])} = ` +
        `${num(R.products[j * S.dk + d])}; the ${S.dk} products sum to q_i \u00b7 k_${j} = ${num(R.dots[j])}`;
    });
    hover(vC, (j, x) => { const c = Math.floor(x / cwV); return `v_${j}[${c}] = ${num(S.v[vOff() + j * S.dv + c])}`; });
    hover(wC, (j, x) => {
      const c = Math.floor(x / cwV);
      return `\u03b1_i${j} v_${j}[${c}] = ${R.weights[j].toFixed(4)} \u00d7 ${num(S.v[vOff() + j * S.dv + c])} = ` +
        `${num(R.weighted[j * S.dv + c])}`;
    });
    hover(yC, (_, x) => {
      const c = Math.floor(x / cwV);
      return `y_i[${c}] = \u03a3_j \u03b1_ij v_j[${c}] = ${num(R.output[c])}`;
    });
    hover(qC, (_, x) => { const d = Math.floor(x / cwK); return `q_i[${d}] = ${num(S.q[qOff() + d])}`; });
    // the query line, the output line and the legends are built once per shape; a redraw only edits their text
    const qName = h("span", "sv-steps-qname");
    const qTok = h("span", "sv-tok-inline");
    const qHead = document.createTextNode(""), qTail = document.createTextNode("");
    qName.append(qHead, qTok, qTail);
    const qVec = h("span", "sv-steps-vec");
    qLine.replaceChildren(qName, qC);
    if (S.dk <= SMALL_D) qLine.appendChild(qVec);
    const yHead = h("span", "");
    outLine.replaceChildren(yHead, "[");
    const yVals = Array.from({ length: S.dv }, (_, c) => {
      const e = h("span", "sv-steps-yval");
      if (c) outLine.append(", ");
      outLine.append(e);
      return e;
    });
    outLine.append("]");
    const legends = h("div", "sv-steps-legends");
    const scales = ["q_i", "k_j", "q_i \u2299 k_j", "v_j, \u03b1_ij v_j, y_i"].map((label) => {
      const box = legend(LUT_RDBU, "", "", label);
      legends.appendChild(box);
      return { lo: box.querySelector(".sv-legend-lo"), hi: box.querySelector(".sv-legend-hi") };
    });
    legendBox.replaceChildren(legends);
    Object.assign(V, { qHead, qTok, qTail, qVec, yHead, yVals, scales });
  }

  // Set an element's text (and data-value) only where it changes: an unchanged number costs no layout.
  const put = (e, text, value) => {
    if (e.textContent !== text) e.textContent = text;
    if (value !== undefined && e.dataset.value !== value) e.dataset.value = value;
  };

  function fillQueries() {
    queries.replaceChildren(h("span", "sv-steps-qlabel", "query i: "));
    V.qButtons = S.qt.map((t, i) => {
      const b = h("button", "sv-steps-qtok sv-tok-inline", visible(t));
      b.type = "button";
      b.title = `query ${i}: \u201c${t}\u201d (position ${S.pos[i]})`;
      b.addEventListener("click", () => save(model, "query", i));
      queries.appendChild(b);
      return b;
    });
  }

  let lastHead = null;
  // Recompute the chosen query's attention and redraw what depends on it; repaint k and v on a new layer/head.
  function draw() {
    cur = { l: Math.min(model.get("layer"), S.L - 1), hd: Math.min(model.get("head"), S.H - 1),
      i: Math.min(model.get("query"), S.Tq - 1), causal: model.get("causal") };
    layerSel.value = String(cur.l);
    headSel.value = String(cur.hd);
    causal.checked = cur.causal;
    const { l, hd, i } = cur;
    const qo = ((l * S.H + hd) * S.Tq + i) * S.dk, ko = (l * S.H + hd) * S.Tk * S.dk, vo = (l * S.H + hd) * S.Tk * S.dv;
    const q = S.q.subarray(qo, qo + S.dk);
    const K = S.k.subarray(ko, ko + S.Tk * S.dk), Vv = S.v.subarray(vo, vo + S.Tk * S.dv);
    const last = cur.causal ? S.pos[i] : S.Tk - 1;
    R = attendOne(q, K, Vv, S.dk, S.dv, S.Tk, last);
    const mQ = maxAbs(S.q, (l * S.H + hd) * S.Tq * S.dk, (l * S.H + hd + 1) * S.Tq * S.dk), mK = maxAbs(K, 0, K.length);
    const mV = maxAbs(Vv, 0, Vv.length);
    const masked = (j) => j > last;
    if (lastHead !== `${l}:${hd}`) {
      paintMatrix(V.kC, K, 0, S.Tk, S.dk, V.cwK, mK);
      paintMatrix(V.vC, Vv, 0, S.Tk, S.dv, V.cwV, mV);
      lastHead = `${l}:${hd}`;
    }
    const mP = maxAbs(R.products, 0, R.products.length);
    paintMatrix(V.pC, R.products, 0, S.Tk, S.dk, V.cwK, mP, masked);
    paintMatrix(V.wC, R.weighted, 0, S.Tk, S.dv, V.cwV, mV, masked);
    paintMatrix(V.yC, R.output, 0, 1, S.dv, V.cwV, mV);
    paintMatrix(V.qC, q, 0, 1, S.dk, V.cwK, mQ);
    let wMax = 0;
    for (let j = 0; j <= last; j++) wMax = Math.max(wMax, R.weights[j]);
    let total = 0;
    V.rows.forEach((r, j) => {
      const m = masked(j);
      if (r.masked !== m) {
        for (const e of [r.idx, r.tok, r.dot, r.scaled, r.w]) e.classList.toggle("sv-masked", m);
        r.masked = m;
      }
      put(r.dot, num(R.dots[j]), String(R.dots[j]));
      put(r.scaled, m ? "\u2212\u221e (masked)" : num(R.scaled[j]), m ? "-Infinity" : String(R.scaled[j]));
      put(r.wNum, R.weights[j].toFixed(4));
      if (r.w.dataset.value !== String(R.weights[j])) r.w.dataset.value = String(R.weights[j]);
      const width = `${(60 * R.weights[j]) / (wMax || 1)}px`;
      if (r.bar.style.width !== width) r.bar.style.width = width;
      if (r.hl !== (j === S.pos[i])) { r.hl = j === S.pos[i]; r.tok.classList.toggle("sv-hl", r.hl); }
      total += R.weights[j];
    });
    put(V.wSum, total.toFixed(4), String(total));
    V.qHead.data = `q_${i} of \u201c`;
    put(V.qTok, visible(S.qt[i]));
    V.qTail.data = `\u201d (position ${S.pos[i]}), d_k = ${S.dk}:`;
    if (S.dk <= SMALL_D) put(V.qVec, ` ${vecText(q, 0, S.dk)}`);
    put(V.yHead, `y_${i} = \u03a3_j \u03b1_${i}j v_j (9.36) = `);
    V.yVals.forEach((e, c) => put(e, num(R.output[c]), String(R.output[c])));
    if (V.current !== i) {
      if (V.current !== undefined && V.qButtons[V.current]) V.qButtons[V.current].classList.remove("sv-current");
      V.qButtons[i].classList.add("sv-current");
      V.current = i;
    }
    [[mQ], [mK], [mP], [mV]].forEach(([m], k) => { put(V.scales[k].lo, num(-m)); put(V.scales[k].hi, num(m)); });
    root.dataset.query = String(i);
    root.dataset.layer = String(l);
    root.dataset.head = String(hd);
    root.dataset.causal = String(cur.causal);
  }

  function rebuild() {
    readState();
    showTitle(title, model);
    fillSelect(layerSel, S.layerIds, "layer");
    fillSelect(headSel, S.headIds, "head");
    layerLabel.style.display = S.L < 2 ? "none" : "";
    headLabel.style.display = S.H < 2 ? "none" : "";
    build();
    fillQueries();
    lastHead = null;
    root.dataset.shape = `${S.L}x${S.H}x${S.Tq}x${S.Tk}x${S.dk}x${S.dv}`;
    draw();
  }

  rebuild();
  // New q, k, v (set_data from Python) rebuild; a query, mask, layer or head change recomputes and redraws.
  return onChanges(model, {
    data: ["q", "k", "v", "dtype", "shape", "query_tokens", "key_tokens", "query_positions", "layer_ids", "head_ids",
      "title"],
    view: ["query", "causal", "layer", "head"],
  }, (kinds) => (kinds.has("data") ? rebuild() : draw()));
}

export default { render };
