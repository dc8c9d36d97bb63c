// AttentionSteps view. The widget's ES module is _prelude.js (h, bytesOf, LUT_RDBU, legend, onChanges, …) and
// _live.js (the live bar) followed by this file; it imports nothing, so it also runs from the widget state of the
// static book.
// State (see attention_steps.py): q, k, v = little-endian float32 or float64 bytes (dtype "f4" | "f8"), C order
// (L, H, T_q, d_k), (L, H, T_k, d_k), (L, H, T_k, d_v); shape = [L, H, T_q, T_k, d_k, d_v]; query_tokens,
// key_tokens, query_positions (query i sees keys j <= query_positions[i] under the causal mask); layer_ids,
// head_ids (the model's numbers of the layers and heads sent); query, causal, layer, head; title; index_base (0:
// positions and subscripts count from 0, as Python does; 1: from 1, as SLP writes x_1 ... x_n); live_spec
// (AttentionSteps.live): every layer's and head's q, k, v of the shipped character transformer over the reader's
// text, the query moved to its last character (the one that predicts the next).
// Every number shown is computed here from q, k, v (attendOne), as SLP (9.30)-(9.39) write it.
// The grid fits its container: the four vector columns share what the number columns leave (at most 150 px each);
// where that is under 40 px, the grid keeps 60 px vectors and scrolls sideways in a box the keyboard can reach.
// A page may ask for fewer rows: a slide deck sets --sv-steps-keys (n), and a query with more keys than n shows the
// n keys it weights most (in key order), then one row that sums up the rest ("… 32 more keys"); the Σ row still sums
// every key, and a table only screen readers see lists every key's numbers. The book's pages set nothing: a row
// per key.

const ROW_PX = 18; // one key per row
const STRIP_MAX = 150, STRIP_MIN = 40, STRIP_SCROLL = 60; // width of one vector column
const SMALL_D = 8; // vectors this short are also printed as numbers

// The most key rows the page asks for (--sv-steps-keys), or 0: a row for every key.
function keysWanted(root) {
  const n = parseInt(getComputedStyle(root).getPropertyValue("--sv-steps-keys"), 10);
  return n >= 1 ? n : 0;
}

// The keys a compact view shows: the n with the largest weights (ties: the earlier key), in key order.
export function topKeys(weights, Tk, n) {
  const order = Array.from({ length: Tk }, (_, j) => j).sort((a, b) => weights[b] - weights[a] || a - b);
  return order.slice(0, n).sort((a, b) => a - b);
}

// The rows `keys` of a rows x cols row-major matrix `a` (from offset), as one matrix.
function rowsOf(a, offset, keys, cols) {
  const out = new Float64Array(keys.length * cols);
  keys.forEach((j, r) => out.set(a.subarray(offset + j * cols, offset + (j + 1) * cols), r * cols));
  return out;
}

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
  const causalText = h("span", "", "");
  controls.append(layerLabel, headLabel, labelled("", causal, causalText));
  const queries = h("div", "sv-steps-queries");
  const qLine = h("div", "sv-steps-qline");
  let gridBox = h("div", "sv-steps-box");
  const grid = h("div", "sv-steps-grid");
  gridBox.appendChild(grid);
  const outLine = h("div", "sv-steps-out");
  const readout = readoutLine();
  const legendBox = h("div", "sv-legend-wrap");
  const summary = srOnly("div", "sv-summary");
  summary.setAttribute("aria-live", "polite");
  const allKeys = srOnly("div", "sv-steps-all"); // the compact view's text alternative: every key's numbers
  root.append(title, controls, queries, qLine, gridBox, outLine, readout, legendBox, summary, allKeys);
  // live: q, k, v of every layer and head over the reader's text (what AttentionSteps.set_data sets)
  const live = liveHost(model, root, title, {
    page: async (_, m, text) => {
      const e = m.encode(text);
      const f = await m.forward(e.ids);
      const T = f.T, range = (n) => Array.from({ length: n }, (_, i) => i);
      return {
        traits: { dtype: "f4", q: f32Bytes(f.q), k: f32Bytes(f.k), v: f32Bytes(f.v),
          shape: [f.L, f.H, T, T, f.dk, f.dk],
          query_tokens: e.chars, key_tokens: e.chars, query_positions: range(T), layer_ids: range(f.L),
          head_ids: range(f.H) },
        // every layer and head now: keep showing the model's layer and head that were shown
        view: { query: T - 1, layer: model.get("layer_ids")[model.get("layer")] || 0,
          head: model.get("head_ids")[model.get("head")] || 0 },
        notes: e.notes, status: `read ${e.ids.length} characters`, raw: { ids: e.ids, q: f.q, k: f.k, v: f.v },
      };
    },
  });

  layerSel.addEventListener("change", () => save(model, "layer", parseInt(layerSel.value, 10)));
  headSel.addEventListener("change", () => save(model, "head", parseInt(headSel.value, 10)));
  causal.addEventListener("change", () => save(model, "causal", causal.checked));

  let S = null, V = null, R = null, cur = null; // state; the view's elements; the last result; its selection
  let shown = null; // compact view: the keys the rows show (row r is key shown[r]); null: a row per key
  let width = widthOf(root), base = 0;
  const ix = (i) => i + base; // a position or subscript as the reader counts

  function readState() {
    const [L, H, Tq, Tk, dk, dv] = model.get("shape");
    const dtype = model.get("dtype");
    S = { L, H, Tq, Tk, dk, dv, q: readFloats(model.get("q"), dtype), k: readFloats(model.get("k"), dtype),
      v: readFloats(model.get("v"), dtype), qt: model.get("query_tokens"), kt: model.get("key_tokens"),
      pos: model.get("query_positions"), layerIds: model.get("layer_ids"), headIds: model.get("head_ids") };
    base = model.get("index_base") || 0; // a widget saved before index_base existed counts from 0
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
    const want = keysWanted(root);
    const nRows = want && S.Tk > want ? want : S.Tk; // key rows; compact, one more row sums up the others
    const compact = nRows < S.Tk;
    shown = compact ? [] : null;
    const key = (r) => (shown ? shown[r] : r);
    root.dataset.compact = compact ? String(nRows) : "";
    const keyW = Math.min(130, textWidth(S.kt.map(visible), 13, true) + 8);
    const fixed = textWidth([String(ix(S.Tk - 1))], 13) + keyW + 70 + 100 + 130 + 8 * 10 + 4;
    let strip = Math.min(STRIP_MAX, Math.floor((width - fixed) / 4));
    const scroll = strip < STRIP_MIN;
    if (scroll) strip = STRIP_SCROLL;
    const cwK = Math.max(1, Math.min(16, Math.floor(strip / S.dk)));
    const cwV = Math.max(1, Math.min(16, Math.floor(strip / S.dv)));
    const box = scroll ? scroller("attention step by step, one row per key: scrolls sideways", "sv-steps-box")
      : h("div", "sv-steps-box");
    box.appendChild(grid);
    gridBox.replaceWith(box);
    gridBox = box;
    root.dataset.scroll = String(scroll);
    grid.replaceChildren();
    grid.style.gridTemplateRows = `auto repeat(${nRows}, ${ROW_PX}px)${compact ? " auto" : ""} auto`;
    const footRow = nRows + 2 + (compact ? 1 : 0);
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
    const kC = canvas("sv-steps-k", 3, nRows, S.dk * cwK);
    const pC = canvas("sv-steps-prod", 4, nRows, S.dk * cwK);
    const vC = canvas("sv-steps-v", 8, nRows, S.dv * cwV);
    const wC = canvas("sv-steps-weighted", 9, nRows, S.dv * cwV);
    const rows = [];
    for (let j = 0; j < nRows; j++) {
      const cell = (cls, col, text) => {
        const e = h("div", `sv-steps-cell ${cls}`, text);
        e.style.gridColumn = String(col);
        e.style.gridRow = String(j + 2);
        grid.appendChild(e);
        return e;
      };
      const tok = cell("sv-steps-key sv-tok", 2, compact ? "" : visible(S.kt[j]));
      if (!compact) tok.title = S.kt[j];
      tok.style.maxWidth = `${keyW}px`;
      const bar = h("div", "sv-steps-bar");
      bar.setAttribute("aria-hidden", "true");
      const wNum = h("span", "sv-steps-wnum");
      const w = cell("sv-steps-weight", 7);
      w.append(bar, wNum);
      rows.push({ idx: cell("sv-steps-j", 1, compact ? "" : String(ix(j))), tok, dot: cell("sv-steps-dot", 5),
        scaled: cell("sv-steps-scaled", 6), w, bar, wNum });
    }
    let more = null;
    if (compact) { // the keys not shown, in one row
      more = h("div", "sv-steps-cell sv-steps-more");
      more.style.whiteSpace = "normal";
      more.style.gridColumn = "1 / -1";
      more.style.gridRow = String(nRows + 2);
      grid.appendChild(more);
    }
    const foot = (cls, col, text) => {
      const e = h("div", `sv-steps-foot ${cls}`, text);
      e.style.gridColumn = String(col);
      e.style.gridRow = String(footRow);
      grid.appendChild(e);
      return e;
    };
    foot("", 2, "\u03a3_j");
    const wSum = foot("sv-steps-wsum", 7, "");
    const yC = h("canvas", "sv-steps-mat sv-steps-y");
    yC.style.gridColumn = "9";
    yC.style.gridRow = String(footRow);
    grid.appendChild(yC);
    foot("sv-steps-ylabel", 8, "y_i =");
    const qC = h("canvas", "sv-steps-mat sv-steps-q");
    V = { cwK, cwV, kC, pC, vC, wC, yC, qC, rows, wSum, more, nRows };
    // the read-out of a vector column's cell, by mouse or keyboard
    const qOff = () => ((cur.l * S.H + cur.hd) * S.Tq + cur.i) * S.dk;
    const kOff = () => (cur.l * S.H + cur.hd) * S.Tk * S.dk;
    const vOff = () => (cur.l * S.H + cur.hd) * S.Tk * S.dv;
    const qi = () => ix(cur.i);
    // a key row's cursor reads key key(r) (compact: the row's key; else row r is key r)
    const readable = (c, n, dims, cw, what, fn, byKey = true) => cellCursor(c, {
      rows: () => n, cols: () => dims,
      cellAt: (ev) => cellUnder(ev, c, cw, ROW_PX, n, dims),
      label: `${what}: arrow keys read each number`,
      show: (r, x) => { readout.textContent = r === null ? "\u00a0" : fn(byKey ? key(r) : r, x); },
    });
    readable(kC, nRows, S.dk, cwK, "the keys k_j, one row per key",
      (j, d) => `k_${ix(j)}[${d}] = ${num(S.k[kOff() + j * S.dk + d])} (key \u201c${S.kt[j]}\u201d)`);
    readable(pC, nRows, S.dk, cwK, "the products q_i \u2299 k_j, one row per key",
      (j, d) => `q_${qi()}[${d}] \u00d7 k_${ix(j)}[${d}] = ${num(S.q[qOff() + d])} \u00d7 ` +
        `${num(S.k[kOff() + j * S.dk + d])} = ${num(R.products[j * S.dk + d])}; the ${S.dk} products sum to ` +
        `q_${qi()} \u00b7 k_${ix(j)} = ${num(R.dots[j])}`);
    readable(vC, nRows, S.dv, cwV, "the values v_j, one row per key",
      (j, c) => `v_${ix(j)}[${c}] = ${num(S.v[vOff() + j * S.dv + c])}`);
    readable(wC, nRows, S.dv, cwV, "the weighted values \u03b1_ij v_j, one row per key",
      (j, c) => `\u03b1_${qi()},${ix(j)} v_${ix(j)}[${c}] = ${R.weights[j].toFixed(4)} \u00d7 ` +
        `${num(S.v[vOff() + j * S.dv + c])} = ${num(R.weighted[j * S.dv + c])}`);
    readable(yC, 1, S.dv, cwV, "the output y_i",
      (_, c) => `y_${qi()}[${c}] = \u03a3_j \u03b1_${qi()}j v_j[${c}] = ${num(R.output[c])}`, false);
    readable(qC, 1, S.dk, cwK, "the query q_i", (_, d) => `q_${qi()}[${d}] = ${num(S.q[qOff() + d])}`, false);
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
    noteFonts(root, []);
  }

  // Set an element's text (and data-value) only where it changes: an unchanged number costs no layout.
  const put = (e, text, value) => {
    if (e.textContent !== text) e.textContent = text;
    if (value !== undefined && e.dataset.value !== value) e.dataset.value = value;
  };

  // The query picker: one chip per query, a radio group (Tab reaches the chosen one, arrows, Home and End move).
  function fillQueries() {
    const picker = choiceRow("query i", S.qt.map(visible),
      (i) => `query ${ix(i)}: \u201c${S.qt[i]}\u201d (position ${ix(S.pos[i])})`, (i) => save(model, "query", i));
    picker.el.classList.add("sv-steps-picker");
    picker.buttons.forEach((b) => b.classList.add("sv-steps-qtok"));
    queries.replaceChildren(h("span", "sv-steps-qlabel", S.Tq > 1 ? "query i: " : "the query: "), picker.el);
    V.picker = picker;
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
    const n = V.nRows;
    // compact: the rows show the keys weighted most, so they (and the k and v they paint) follow the query
    const was = shown && shown.join(",");
    if (shown) shown = topKeys(R.weights, S.Tk, n);
    const key = (r) => (shown ? shown[r] : r);
    const rowsMat = (a, cols) => (shown ? rowsOf(a, 0, shown, cols) : a);
    if (lastHead !== `${l}:${hd}` || (shown && shown.join(",") !== was)) {
      paintMatrix(V.kC, rowsMat(K, S.dk), 0, n, S.dk, V.cwK, mK);
      paintMatrix(V.vC, rowsMat(Vv, S.dv), 0, n, S.dv, V.cwV, mV);
      lastHead = `${l}:${hd}`;
    }
    const mP = maxAbs(R.products, 0, R.products.length);
    const fadedRow = (r) => masked(key(r));
    paintMatrix(V.pC, rowsMat(R.products, S.dk), 0, n, S.dk, V.cwK, mP, fadedRow);
    paintMatrix(V.wC, rowsMat(R.weighted, S.dv), 0, n, S.dv, V.cwV, mV, fadedRow);
    paintMatrix(V.yC, R.output, 0, 1, S.dv, V.cwV, mV);
    paintMatrix(V.qC, q, 0, 1, S.dk, V.cwK, mQ);
    let wMax = 0, best = 0;
    for (let j = 0; j <= last; j++) { if (R.weights[j] > wMax) { wMax = R.weights[j]; best = j; } }
    let total = 0;
    for (let j = 0; j < S.Tk; j++) total += R.weights[j];
    V.rows.forEach((r, row) => {
      const j = key(row);
      if (shown) {
        put(r.idx, String(ix(j)));
        put(r.tok, visible(S.kt[j]));
        if (r.tok.title !== S.kt[j]) r.tok.title = S.kt[j];
      }
      const m = masked(j);
      if (r.masked !== m) {
        for (const e of [r.idx, r.tok, r.dot, r.scaled, r.w]) e.classList.toggle("sv-masked", m);
        r.masked = m;
      }
      put(r.dot, num(R.dots[j]), String(R.dots[j]));
      put(r.scaled, m ? "\u2212\u221e (masked)" : num(R.scaled[j]), m ? "-Infinity" : String(R.scaled[j]));
      put(r.wNum, m ? "0 (masked)" : R.weights[j].toFixed(4));
      if (r.w.dataset.value !== String(R.weights[j])) r.w.dataset.value = String(R.weights[j]);
      const width = `${(60 * R.weights[j]) / (wMax || 1)}px`;
      if (r.bar.style.width !== width) r.bar.style.width = width;
      if (r.hl !== (j === S.pos[i])) { r.hl = j === S.pos[i]; r.tok.classList.toggle("sv-hl", r.hl); }
    });
    if (shown) { // the keys left out: how many, their largest weight and their sum; every key in the table
      const rest = S.Tk - n, restOf = new Set(shown);
      let restSum = 0, restMax = 0, restMasked = 0;
      for (let j = 0; j < S.Tk; j++) {
        if (restOf.has(j)) continue;
        restSum += R.weights[j];
        restMax = Math.max(restMax, R.weights[j]);
        restMasked += masked(j);
      }
      const maskedText = restMasked ? `, ${restMasked === rest ? "all" : restMasked} masked` : "";
      put(V.more, `\u2026 ${rest} more keys: \u03b1 \u2264 ${restMax.toFixed(4)} each, ` +
        `${restSum.toFixed(4)} together${maskedText}`);
      allKeysTable(i, last);
    } else if (allKeys.firstChild) allKeys.replaceChildren();
    put(V.wSum, total.toFixed(4), String(total));
    V.qHead.data = `q_${ix(i)} of \u201c`;
    put(V.qTok, visible(S.qt[i]));
    V.qTail.data = `\u201d (position ${ix(S.pos[i])}), d_k = ${S.dk}:`;
    if (S.dk <= SMALL_D) put(V.qVec, ` ${vecText(q, 0, S.dk)}`);
    put(V.yHead, `y_${ix(i)} = \u03a3_j \u03b1_${ix(i)}j v_j (9.36) = `);
    V.yVals.forEach((e, c) => put(e, num(R.output[c]), String(R.output[c])));
    V.picker.select(i);
    [[mQ], [mK], [mP], [mV]].forEach(([m], k) => { put(V.scales[k].lo, num(-m)); put(V.scales[k].hi, num(m)); });
    const where = S.L * S.H > 1 ? `layer ${S.layerIds[l]}, head ${S.headIds[hd]}, ` : "";
    summary.textContent = `${where}query ${ix(i)} \u201c${S.qt[i]}\u201d${cur.causal ? ", causal mask" : ""}: ` +
      `it may see ${last + 1} of ${S.Tk} keys; the largest weight \u03b1 = ${wMax.toFixed(4)} is on key ` +
      `${ix(best)} \u201c${S.kt[best]}\u201d; y_${ix(i)} = ${vecText(R.output, 0, Math.min(S.dv, SMALL_D))}` +
      `${S.dv > SMALL_D ? ` (first ${SMALL_D} of ${S.dv})` : ""}.`;
    root.dataset.query = String(i);
    root.dataset.layer = String(l);
    root.dataset.head = String(hd);
    root.dataset.causal = String(cur.causal);
  }

  // The compact view's text alternative: for every key j, its token, q_i . k_j, the scaled score and alpha_ij.
  function allKeysTable(i, last) {
    const table = h("table");
    table.appendChild(h("caption", "", `every key of query ${ix(i)} \u201c${S.qt[i]}\u201d (the rows above show ` +
      `the ${V.nRows} it weights most)`));
    const head = h("tr");
    for (const t of ["j", "key", "q_i \u00b7 k_j", `\u00f7 \u221a${S.dk}`, "\u03b1_ij"]) {
      head.appendChild(h("th", "", t));
    }
    table.appendChild(head);
    for (let j = 0; j < S.Tk; j++) {
      const m = j > last, tr = h("tr");
      tr.append(h("td", "", String(ix(j))), h("td", "", S.kt[j]), h("td", "", num(R.dots[j])),
        h("td", "", m ? "masked" : num(R.scaled[j])), h("td", "", m ? "0 (masked)" : R.weights[j].toFixed(4)));
      table.appendChild(tr);
    }
    allKeys.replaceChildren(table);
  }

  function rebuild() {
    readState();
    showTitle(title, model, "attention step by step");
    fillSelect(layerSel, S.layerIds, "layer");
    fillSelect(headSel, S.headIds, "head");
    layerLabel.style.display = S.L < 2 ? "none" : "";
    headLabel.style.display = S.H < 2 ? "none" : "";
    causalText.textContent = ` causal mask (query i sees keys j \u2264 i)`;
    build();
    fillQueries();
    lastHead = null;
    root.dataset.shape = `${S.L}x${S.H}x${S.Tq}x${S.Tk}x${S.dk}x${S.dv}`;
    draw();
  }

  rebuild();
  const stopResize = onResize(root, (w) => { width = w; build(); fillQueries(); lastHead = null; draw(); });
  // New q, k, v (set_data from Python, or the live bar) rebuild; a query, mask, layer or head change recomputes and
  // redraws; a new live_spec makes a new bar.
  const stop = onChanges(model, {
    data: ["q", "k", "v", "dtype", "shape", "query_tokens", "key_tokens", "query_positions", "layer_ids", "head_ids",
      "title", "index_base"],
    view: ["query", "causal", "layer", "head"],
    live: ["live_spec"],
  }, (kinds) => {
    if (kinds.has("live")) live.reset();
    if (kinds.has("data")) rebuild(); else draw();
  });
  return () => { stop(); stopResize(); live.stop(); };
}

export default { render };
