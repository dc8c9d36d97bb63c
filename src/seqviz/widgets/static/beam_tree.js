// BeamTree view. The widget's ES module is _prelude.js (h, bytesOf, visible, slider, labelled, onChanges, …) and
// _live.js (the live bar) followed by this file; it imports nothing, so it also runs from the widget state of the
// static book.
// State (see beam_tree.py): a flat node list in drawing order, node 0 the prompt: parent = int32 LE (-1 for the
// root), status = uint8 (0 kept, 1 pruned, 2 finished, 3 greedy only), logprob = float64 LE (log P of the
// hypothesis), token = uint32 LE index into vocab; step_start = node offsets of steps 0..n and the node count;
// greedy = greedy's node at steps 1, 2, …; result = the returned hypotheses' nodes, best first; beam_size,
// length_penalty (how the search ranked), joiner; step, show_pruned, normalise, alpha (what the view shows); title;
// live_spec (BeamTree.live): the shipped date model's beam search (with greedy's path) over the reader's date.
// Token text is written with textContent only (SVG <text> and table cells), never parsed as markup.
// The tree scrolls in a box the keyboard can reach: with the focus in it, Left/Right go from step to step, Up/Down
// from node to node of a step, Home/End to a step's first/last node, Enter makes the cursor's step the shown one;
// the cursor's node reads out (and highlights its path) as the mouse's does. The table under the tree, the beam at
// the shown step, is the tree's text alternative.

const SVG_NS = "http://www.w3.org/2000/svg";
const KEPT = 0, PRUNED = 1, FINISHED = 2, GREEDY_ONLY = 3;
const STATUS_CLASS = ["sv-kept", "sv-pruned", "sv-finished", "sv-greedy-only"];
const STATUS_TEXT = ["kept", "pruned", "finished", "greedy only (the beam never proposed it)"];
// The legend: a node's classes and what they mean. "kept, dropped later": kept at its step, but none of its
// continuations is in the beam at the step shown (draw() marks these sv-dropped); greedy only: shown when the search
// has such nodes.
const LEGEND = [["sv-kept", "kept"], ["sv-kept sv-dropped", "kept, dropped later"], ["sv-pruned", "pruned"],
  ["sv-finished", "finished"], ["sv-on-greedy", "greedy's path"], ["sv-greedy-only", "greedy only"]];
let clipCount = 0; // a page-unique id for each tree's clip path
const ROW = 22, NODE_H = 18, HEAD = 22, GAP = 26, CHAR_PX = 8, SCORE_PX = 44, MAX_CHARS = 14;
const SCORE_FONT = 11; // px, the node scores (widgets.css); the labels and column heads are 12 px

function svgEl(tag, cls, attrs) {
  const e = document.createElementNS(SVG_NS, tag);
  if (cls) e.setAttribute("class", cls);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

// Little-endian numbers from a widget buffer (any alignment).
function readNumbers(v, kind) {
  const b = bytesOf(v);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const size = { i32: 4, u32: 4, f64: 8 }[kind];
  const out = kind === "f64" ? new Float64Array(b.byteLength / size) : new Int32Array(b.byteLength / size);
  for (let i = 0; i < out.length; i++) {
    out[i] = kind === "f64" ? dv.getFloat64(8 * i, true) : kind === "u32" ? dv.getUint32(4 * i, true)
      : dv.getInt32(4 * i, true);
  }
  return out;
}

// The decoded search: per node its step, parent, status, log P, label; and greedy's path and the result.
function readSearch(model) {
  const parent = readNumbers(model.get("parent"), "i32");
  const status = bytesOf(model.get("status")).slice();
  const logprob = readNumbers(model.get("logprob"), "f64");
  const token = readNumbers(model.get("token"), "u32");
  const vocab = model.get("vocab");
  const starts = model.get("step_start");
  const N = parent.length;
  const step = new Int32Array(N);
  for (let s = 0; s + 1 < starts.length; s++) for (let n = starts[s]; n < starts[s + 1]; n++) step[n] = s;
  const labels = Array.from(token, (t) => vocab[t]);
  return { N, parent, status, logprob, step, labels, starts, nSteps: starts.length - 2,
    greedy: model.get("greedy"), result: model.get("result"), beamSize: model.get("beam_size"),
    lengthPenalty: model.get("length_penalty"), joiner: model.get("joiner") };
}

// The ranking score of a node of N = step new tokens: log P / N^alpha (alpha = 0: the plain sum log P).
export function normalised(logprob, step, alpha) {
  return logprob / Math.pow(Math.max(step, 1), alpha);
}

function hypothesis(S, n) {
  const out = [];
  for (; n > 0; n = S.parent[n]) out.push(S.labels[n]);
  return out.reverse().join(S.joiner);
}

// A search in BeamTrace.to_dict()'s form (what the live runtime's beam search returns) as the widget's flat node
// list, in seqviz.widgets.beam_tree.prepare_beam's drawing order: step by step, a step's candidates grouped by their
// parent's place in its column (in proposal order within a parent), greedy's path through the tree's nodes where the
// beam proposed the same hypothesis, as greedy-only nodes (last in their step) where not. `itos` labels the tokens.
// Returns the traits BeamTree.set_data sets.
export function flattenSearch(trace, itos) {
  const CODE = { kept: KEPT, pruned: PRUNED, finished: FINISHED };
  const key = (path) => path.join(",");
  const columns = [[{ path: [], up: null, status: KEPT, token: -1, lp: 0 }]];
  const where = new Map([["", 0]]); // a path's place in its column
  let keptPaths = [[]];
  for (const cands of trace.steps) { // [parent, token, token_logprob, logprob, status]
    const order = cands.map((_, i) => i).sort((a, b) =>
      where.get(key(keptPaths[cands[a][0]])) - where.get(key(keptPaths[cands[b][0]])) || a - b);
    const column = order.map((i) => {
      const [parent, token, , lp, status] = cands[i];
      const up = keptPaths[parent];
      return { path: up.concat([token]), up, status: CODE[status], token, lp };
    });
    keptPaths = cands.filter((c) => c[4] === "kept").map(([parent, token]) => keptPaths[parent].concat([token]));
    column.forEach((rec, pos) => where.set(key(rec.path), pos));
    columns.push(column);
  }
  const known = new Set(columns.flat().map((rec) => key(rec.path)));
  const greedyPaths = [];
  let up = [], lp = 0;
  (trace.greedy || []).forEach(([token, tlp], s) => {
    lp += tlp;
    const path = up.concat([token]);
    if (!known.has(key(path))) {
      while (columns.length <= s + 1) columns.push([]);
      columns[s + 1].push({ path, up, status: GREEDY_ONLY, token, lp });
      known.add(key(path));
    }
    greedyPaths.push(path);
    up = path;
  });
  const flat = columns.flat();
  const index = new Map(flat.map((rec, n) => [key(rec.path), n]));
  const prompt = trace.prompt_ids.map((i) => (i >= 0 && i < itos.length ? itos[i] : String(i)));
  const rootLabel = prompt.length <= 3 ? prompt.slice(-3).join(" ") : `\u2026 ${prompt.slice(-2).join(" ")}`;
  const labels = [rootLabel].concat(flat.slice(1).map((rec) => itos[rec.token]));
  const vocab = [...new Set(labels)];
  const at = new Map(vocab.map((t, i) => [t, i]));
  const stepStart = columns.map((_, s) => columns.slice(0, s).reduce((n, c) => n + c.length, 0)).concat([flat.length]);
  const parent = new Int32Array(flat.map((rec) => (rec.up === null ? -1 : index.get(key(rec.up)))));
  const logprob = new Float64Array(flat.map((rec) => rec.lp));
  const token = new Uint32Array(labels.map((t) => at.get(t)));
  const le = (a, size, set) => { // little-endian bytes of a typed array
    const dv = new DataView(new ArrayBuffer(a.length * size));
    a.forEach((x, i) => dv[set](i * size, x, true));
    return dv;
  };
  return {
    parent: le(parent, 4, "setInt32"), status: new DataView(Uint8Array.from(flat, (rec) => rec.status).buffer),
    logprob: le(logprob, 8, "setFloat64"), token: le(token, 4, "setUint32"), vocab, step_start: stepStart,
    greedy: greedyPaths.map((path) => index.get(key(path))),
    result: trace.hypotheses.map(([ids]) => index.get(key(ids))),
    beam_size: trace.beam_size, length_penalty: trace.length_penalty,
  };
}

const short = (t) => { const v = visible(t); return v.length > MAX_CHARS ? `${v.slice(0, MAX_CHARS - 1)}\u2026` : v; };
const fmt = (x) => x.toFixed(2);

function render({ model, el }) {
  const { root, title, controls } = frame(el, "sv-beam");
  const stepS = slider("step", "sv-step", 1, 1, 1);
  const pruned = h("input", "sv-show-pruned");
  pruned.type = "checkbox";
  const scoreSel = h("select", "sv-score");
  for (const [value, text] of [["sum", "log P (sum)"], ["norm", "log P / N^\u03b1 (normalised)"]]) {
    const o = h("option", "", text);
    o.value = value;
    scoreSel.appendChild(o);
  }
  controls.append(stepS.label, labelled("", pruned, " show pruned"), labelled("label nodes with ", scoreSel));
  const note = h("div", "sv-note sv-beam-note");
  const treeBox = scroller("beam search tree, one column per step; Left/Right: step, Up/Down: node, Enter: show " +
    "that step (the table below lists the beam)", "sv-beam-tree");
  const readout = readoutLine();
  // Each swatch is a node box with the node's classes, so the tree's style rules draw it: the legend shows every look
  // the tree draws, and only those (a kind of node the search lacks is left out, see rebuild).
  const legendBox = h("div", "sv-legend sv-beam-legend");
  const legendItems = LEGEND.map(([cls, text]) => {
    const sw = svgEl("svg", "sv-beam-swatch", { width: 22, height: 14, viewBox: "0 0 22 14" });
    const g = svgEl("g", `sv-node ${cls}`);
    g.appendChild(svgEl("rect", "", { x: 1.5, y: 1.5, width: 19, height: 11, rx: 3 }));
    sw.appendChild(g);
    const item = h("span", "sv-beam-legend-item");
    item.append(sw, h("span", "sv-legend-label", text));
    legendBox.appendChild(item);
    return item;
  });
  const table = h("table", "sv-beam-table");
  root.append(title, controls, note, treeBox, readout, legendBox, table);
  const live = liveHost(model, root, title, {
    page: async (_, m, text) => {
      const spec = model.get("live_spec");
      const e = m.encode(text);
      const b = await m.beam(e.ids, spec.beam_size, { lengthPenalty: spec.length_penalty, trace: true,
        withGreedy: true });
      const traits = flattenSearch(b.trace, m.tgtItos);
      const note = m.formatNote(e.chars.join(""));
      return { traits, view: { step: traits.step_start.length - 2 }, notes: note ? e.notes.concat([note]) : e.notes,
        status: `beam of ${spec.beam_size}: \u201c${m.text(b.hypotheses[0][0])}\u201d; greedy: ` +
          `\u201c${m.text(b.trace.greedy.map(([t]) => t))}\u201d`, raw: { src: e.ids, trace: b.trace, traits } };
    },
  });
  legendBox.querySelectorAll(".sv-beam-swatch").forEach((e) => e.setAttribute("aria-hidden", "true"));

  stepS.input.addEventListener("input", () => save(model, "step", parseInt(stepS.input.value, 10)));
  pruned.addEventListener("change", () => save(model, "show_pruned", pruned.checked));
  scoreSel.addEventListener("change", () => save(model, "normalise", scoreSel.value === "norm"));

  // the search; the layout shown (svg, per-step groups, node elements); the layouts built, by show_pruned
  let S = null, L = null, built = new Map();

  function scoreOf(n) {
    return model.get("normalise") ? normalised(S.logprob[n], S.step[n], model.get("alpha")) : S.logprob[n];
  }

  function describe(n) {
    if (n === 0) return `the prompt \u201c${S.labels[0]}\u201d`;
    const tlp = S.logprob[n] - S.logprob[S.parent[n]];
    const a = model.get("alpha");
    const norm = normalised(S.logprob[n], S.step[n], a);
    const dropped = L && L.nodes[n] && L.nodes[n].classList.contains("sv-dropped");
    const state = dropped ? `kept at step ${S.step[n]}, dropped later (none of its continuations is in the beam ` +
      `at step ${L.current})` : STATUS_TEXT[S.status[n]];
    return `step ${S.step[n]}: \u201c${hypothesis(S, n)}\u201d  log P = ${S.logprob[n].toFixed(3)} ` +
      `(this token ${tlp.toFixed(3)}), log P / ${S.step[n]}^${a} = ${norm.toFixed(3)}; ` +
      `${state}${S.greedy.includes(n) ? ", on greedy's path" : ""}`;
  }

  // The layout for the pruned switch's state: built the first time, kept while the search stays the same. The one
  // not shown is skipped by the renderer (content-visibility: hidden) but keeps its layout, so switching back and
  // forth swaps two boxes instead of re-laying out a thousand nodes.
  function layout() {
    const showPruned = model.get("show_pruned");
    if (L) L.clearHover();                        // the layout going out of view keeps no hover highlight
    if (!built.has(showPruned)) built.set(showPruned, buildLayout(showPruned));
    for (const [key, b] of built) b.box.classList.toggle("sv-off", key !== showPruned);
    L = built.get(showPruned);
  }

  // Lay the tree out in columns, one per step: a step's nodes top to bottom in drawing order (pruned ones left out
  // unless shown). A step change moves the clip; the score switch makes the other score layer opaque.
  function buildLayout(showPruned) {
    let chars = 1;
    for (let n = 1; n < S.N; n++) chars = Math.max(chars, Math.min(visible(S.labels[n]).length, MAX_CHARS));
    const nodeW = chars * CHAR_PX + SCORE_PX + 12;
    const rootW = Math.min(visible(S.labels[0]).length, 24) * CHAR_PX + 12;
    const colX = (s) => (s === 0 ? 0 : rootW + GAP + (s - 1) * (nodeW + GAP));
    const width = (n) => (n === 0 ? rootW : nodeW);
    const pos = new Float64Array(S.N).fill(-1);
    let rows = 1;
    for (let s = 0; s <= S.nSteps; s++) {
      let r = 0;
      for (let n = S.starts[s]; n < S.starts[s + 1]; n++) {
        if (!showPruned && S.status[n] === PRUNED) continue;
        pos[n] = r++;
      }
      rows = Math.max(rows, r);
    }
    const y = (n) => HEAD + pos[n] * ROW;
    const W = colX(S.nSteps) + nodeW + 30, H = HEAD + rows * ROW + 4;
    const svg = svgEl("svg", "sv-beam-svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, "aria-hidden": "true" });
    // Columns after the current step are clipped away: a step change moves one rectangle (the clip's edge and the
    // current step's band) instead of restyling hundreds of nodes.
    const clipId = `sv-beam-clip-${++clipCount}-${Math.random().toString(36).slice(2, 8)}`;
    const clipRect = svgEl("rect", "", { x: -10, y: 0, width: W + 10, height: H });
    const clip = svgEl("clipPath", "", { id: clipId });
    clip.appendChild(clipRect);
    const defs = svgEl("defs");
    defs.appendChild(clip);
    const band = svgEl("rect", "sv-band sv-current-band", { x: 0, y: 0, width: 0, height: H, rx: 4 });
    const tree = svgEl("g", "sv-cols", { "clip-path": `url(#${clipId})` });
    svg.append(defs, band, tree);
    // The node scores in two layers over the tree, log P and log P / N^alpha: the score switch changes which layer
    // is opaque (two elements restyled) instead of rewriting or restyling a thousand labels.
    const sumLayer = svgEl("g", "sv-scores sv-scores-sum"), normLayer = svgEl("g", "sv-scores sv-scores-norm");
    const onGreedy = new Set(S.greedy);
    const resultRank = new Map(S.result.map((n, r) => [n, r + 1]));
    const cols = [], counts = [], nodes = new Array(S.N).fill(null), scores = new Array(S.N).fill(null);
    for (let s = 0; s <= S.nSteps; s++) {
      const g = svgEl("g", "sv-col", { "data-step": s });
      const head = svgEl("text", "sv-col-head", { x: colX(s) + 2, y: 14 });
      head.textContent = s === 0 ? "prompt" : `step ${s}`;
      if (s > 0) head.addEventListener("click", () => save(model, "step", s));
      g.appendChild(head);
      const edges = svgEl("g", "sv-edges");
      g.appendChild(edges);
      for (let n = S.starts[s]; n < S.starts[s + 1]; n++) {
        if (pos[n] < 0) continue;
        const p = S.parent[n];
        if (p >= 0) {
          const x1 = colX(s - 1) + width(p), y1 = y(p) + NODE_H / 2, x2 = colX(s), y2 = y(n) + NODE_H / 2;
          const d = `M${x1},${y1} C${x1 + GAP / 2},${y1} ${x2 - GAP / 2},${y2} ${x2},${y2}`;
          edges.appendChild(svgEl("path", `sv-edge ${STATUS_CLASS[S.status[n]]}`, { d }));
          if (onGreedy.has(n)) g.appendChild(svgEl("path", "sv-greedy-edge", { d }));
        }
        const cls = ["sv-node", STATUS_CLASS[S.status[n]]];
        if (onGreedy.has(n)) cls.push("sv-on-greedy");
        if (resultRank.has(n)) cls.push("sv-result");
        const node = svgEl("g", cls.join(" "), { transform: `translate(${colX(s)},${y(n)})`, "data-node": n });
        node.appendChild(svgEl("rect", "", { width: width(n), height: NODE_H, rx: 4 }));
        const label = svgEl("text", "sv-node-label", { x: 5, y: 13 });
        label.textContent = n === 0 ? visible(S.labels[0]).slice(0, 24) : short(S.labels[n]);
        node.appendChild(label);
        const tip = svgEl("title");
        tip.textContent = S.labels[n];
        node.appendChild(tip);
        if (n > 0) {  // the node's score, log P and log P / N^alpha, one label in each score layer
          const at = { x: colX(s) + nodeW - 5, y: y(n) + 13, "text-anchor": "end", "data-node": n };
          const cls = `sv-node-score ${STATUS_CLASS[S.status[n]]}`;
          const sum = svgEl("text", cls, at), norm = svgEl("text", cls, at);
          sum.textContent = fmt(S.logprob[n]);
          sumLayer.appendChild(sum);
          normLayer.appendChild(norm);
          scores[n] = [sum, norm, norm.appendChild(document.createTextNode(""))];  // an alpha change edits its data
        }
        if (resultRank.has(n)) {
          const badge = svgEl("text", "sv-rank", { x: width(n) + 3, y: 13 });
          badge.textContent = `#${resultRank.get(n)}`;
          node.appendChild(badge);
        }
        g.appendChild(node);
        nodes[n] = node;
      }
      tree.appendChild(g);
      cols.push(g);
      counts.push(g.querySelectorAll("g.sv-node").length);
    }
    tree.append(sumLayer, normLayer);
    let path = [];
    const point = (node) => { // highlight a node's path from the prompt and read it out (mouse or keyboard)
      path.forEach((e) => e.classList.remove("sv-path"));
      path = [];
      for (let n = node; n >= 0; n = S.parent[n]) if (nodes[n]) path.push(nodes[n]);
      path.forEach((e) => e.classList.add("sv-path"));
      readout.textContent = describe(node);
      root.dataset.cursor = String(node);
    };
    svg.addEventListener("mouseover", (ev) => {
      const g = ev.target.closest && ev.target.closest("g.sv-node");
      if (g) point(parseInt(g.dataset.node, 10));
    });
    const clearHover = () => {
      path.forEach((e) => e.classList.remove("sv-path"));
      path = [];
      readout.textContent = "\u00a0";
      root.dataset.cursor = "";
    };
    svg.addEventListener("mouseleave", clearHover);
    const box = h("div", "sv-beam-layout");
    box.appendChild(svg);
    treeBox.appendChild(box);
    // the clip's right edge for step t: the end of its nodes (the next step's edges start there), or everything
    const clipEnd = (t) => (t >= S.nSteps ? W : colX(t) + (t ? nodeW : rootW) + 1);
    // the nodes drawn in each column, top to bottom (what the keyboard cursor walks)
    const shownIn = Array.from({ length: S.nSteps + 1 }, (_, s) => {
      const out = [];
      for (let n = S.starts[s]; n < S.starts[s + 1]; n++) if (pos[n] >= 0) out.push(n);
      return out;
    });
    return { box, svg, cols, counts, nodes, scores, scored: null, norm: null, clipRect, band, clipEnd, colX,
      current: -1, colW: (s) => (s ? nodeW : rootW), clearHover, sumLayer, normLayer, point, shownIn,
      at: (n) => [colX(S.step[n]), y(n)] };
  }

  // The beam at step t, best first by the chosen score: its live hypotheses, those finished by then, and greedy.
  function fillTable(t) {
    const a = model.get("alpha");
    const rows = [];
    for (let n = S.starts[t]; n < S.starts[t + 1]; n++) if (S.status[n] === KEPT) rows.push([n, "live"]);
    for (let s = 1; s <= t; s++) {
      for (let n = S.starts[s]; n < S.starts[s + 1]; n++) {
        if (S.status[n] === FINISHED) rows.push([n, `finished at step ${s}`]);
      }
    }
    rows.sort((x, y) => scoreOf(y[0]) - scoreOf(x[0]));
    if (t === S.nSteps) {
      rows.forEach((r) => { const k = S.result.indexOf(r[0]); if (k >= 0) r[1] += `, returned #${k + 1}`; });
    }
    if (S.greedy.length) rows.push([S.greedy[Math.min(t, S.greedy.length) - 1], "greedy"]);
    const head = h("tr");
    for (const c of ["rank", "hypothesis", "log P", `log P / N^${a}`, "state"]) head.appendChild(h("th", "", c));
    const cap = h("caption", "sv-beam-caption", `The beam after step ${t} of ${S.nSteps}, best first by ` +
      `${model.get("normalise") ? `log P / N^${a}` : "log P"}${S.greedy.length ? "; greedy's hypothesis last" : ""}`);
    const out = [cap, head];
    rows.forEach(([n, what], i) => {
      const tr = h("tr", what.startsWith("greedy") ? "sv-greedy-row" : "");
      tr.dataset.node = String(n);
      const norm = normalised(S.logprob[n], S.step[n], a);
      tr.append(h("td", "sv-beam-rank", what.startsWith("greedy") ? "" : String(i + 1)),
        h("td", "sv-beam-hyp", hypothesis(S, n)), h("td", "sv-beam-num sv-beam-sum", S.logprob[n].toFixed(3)),
        h("td", "sv-beam-num sv-beam-norm", norm.toFixed(3)), h("td", "sv-beam-what", what));
      tr.children[2].dataset.value = String(S.logprob[n]);
      tr.children[3].dataset.value = String(norm);
      out.push(tr);
    });
    table.replaceChildren(...out);
  }

  // What a step, score or alpha change touches: which columns show, which kept nodes lead nowhere any more, the
  // node scores (only when the score or alpha changed), the table.
  function draw() {
    const t = Math.min(Math.max(model.get("step"), 1), S.nSteps);
    stepS.input.value = String(t);
    setValueText(stepS, `${t} / ${S.nSteps}`);
    pruned.checked = model.get("show_pruned");
    scoreSel.value = model.get("normalise") ? "norm" : "sum";
    // the columns after t are clipped away, the current one has the band behind it
    let shown = 0;
    for (let s = 0; s <= t; s++) shown += L.counts[s];
    if (L.current !== t) {
      // clipped columns are hidden from screen readers and find-in-page too (an attribute no style rule reads)
      L.cols.forEach((g, s) => {
        if ((s > t) !== (s > L.current) || L.current < 0) g.setAttribute("aria-hidden", String(s > t));
      });
      L.clipRect.setAttribute("width", String(L.clipEnd(t) + 10));
      L.band.setAttribute("x", String(L.colX(t) - 6));
      L.band.setAttribute("width", String(L.colW(t) + 12));
      L.current = t;
    }
    // a kept node none of whose descendants is live at t (or finished by t) is a dead end: dimmed
    const alive = new Uint8Array(S.N);
    for (let n = S.starts[1]; n < S.starts[t + 1]; n++) {
      if ((S.status[n] === KEPT && S.step[n] === t) || S.status[n] === FINISHED) {
        for (let m = n; m >= 0 && !alive[m]; m = S.parent[m]) alive[m] = 1;
      }
    }
    for (let n = 1; n < S.starts[t + 1]; n++) {
      if (L.nodes[n] && S.status[n] === KEPT && L.nodes[n].classList.contains("sv-dropped") !== !alive[n]) {
        L.nodes[n].classList.toggle("sv-dropped", !alive[n]);
        L.scores[n][0].classList.toggle("sv-dropped", !alive[n]);
        L.scores[n][1].classList.toggle("sv-dropped", !alive[n]);
      }
    }
    const alpha = model.get("alpha");
    if (L.scored !== alpha) {
      for (let n = 1; n < S.N; n++) {
        if (L.scores[n]) L.scores[n][2].data = fmt(normalised(S.logprob[n], S.step[n], alpha));
      }
      L.scored = alpha;
    }
    if (L.norm !== model.get("normalise")) {
      L.norm = model.get("normalise");
      L.svg.classList.toggle("sv-show-norm", L.norm);
      L.sumLayer.setAttribute("aria-hidden", String(L.norm));       // the transparent layer is not read out
      L.normLayer.setAttribute("aria-hidden", String(!L.norm));
    }
    root.classList.toggle("sv-at-end", t === S.nSteps);
    fillTable(t);
    root.dataset.step = String(t);
    root.dataset.shown = String(shown);
    root.dataset.showPruned = String(model.get("show_pruned"));
    root.dataset.score = model.get("normalise") ? "norm" : "sum";
  }

  function rebuild() {
    S = readSearch(model);
    showTitle(title, model, "beam search tree");
    stepS.input.max = String(S.nSteps);
    legendItems[LEGEND.length - 1].hidden = !S.status.includes(GREEDY_ONLY);
    const lp = S.lengthPenalty;
    const by = lp ? `log P / N^${lp}` : "log P, the sum of log-probabilities";
    note.textContent = `A beam of ${S.beamSize} ranked by ${by}` +
      (S.greedy.length ? "; the dashed line is greedy decoding's path." : ".");
    treeBox.replaceChildren();
    built = new Map();
    layout();
    draw();
    noteFonts(root, [SCORE_FONT]);
  }

  // The keyboard cursor in the tree: a node of the layout shown.
  let kcur = null;
  const moveTo = (n) => {
    kcur = n;
    L.point(n);
    const [x, yy] = L.at(n);
    if (x < treeBox.scrollLeft || x + L.colW(S.step[n]) > treeBox.scrollLeft + treeBox.clientWidth) {
      treeBox.scrollLeft = Math.max(0, x - 20);
    }
    if (yy < treeBox.scrollTop || yy + ROW > treeBox.scrollTop + treeBox.clientHeight) {
      treeBox.scrollTop = Math.max(0, yy - 2 * ROW);
    }
  };
  treeBox.addEventListener("keydown", (ev) => {
    if (!["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "Enter", " "].includes(ev.key)) return;
    ev.preventDefault();
    const t = Math.min(Math.max(model.get("step"), 1), S.nSteps);
    if (kcur === null || !L.nodes[kcur]) { moveTo(L.shownIn[t][0] ?? 0); return; }
    const s = S.step[kcur], col = L.shownIn[s], i = col.indexOf(kcur);
    if (ev.key === "ArrowUp" && i > 0) moveTo(col[i - 1]);
    else if (ev.key === "ArrowDown" && i < col.length - 1) moveTo(col[i + 1]);
    else if (ev.key === "Home") moveTo(col[0]);
    else if (ev.key === "End") moveTo(col[col.length - 1]);
    else if (ev.key === "ArrowLeft" && s > 0) moveTo(S.parent[kcur]);
    else if (ev.key === "ArrowRight" && s < t) {
      const next = L.shownIn[s + 1].find((n) => S.parent[n] === kcur) ?? L.shownIn[s + 1][0];
      if (next !== undefined) moveTo(next);
    } else if ((ev.key === "Enter" || ev.key === " ") && s > 0) save(model, "step", s);
  });
  treeBox.addEventListener("blur", () => { kcur = null; if (L) L.clearHover(); });

  rebuild();
  // New search data rebuilds; the pruned switch shows the other layout (built on first use); step and scoring redraw;
  // a new live_spec makes a new bar.
  const stop = onChanges(model, {
    data: ["parent", "status", "logprob", "token", "vocab", "step_start", "greedy", "result", "beam_size",
      "length_penalty", "joiner", "title"],
    layout: ["show_pruned"],
    view: ["step", "normalise", "alpha"],
    live: ["live_spec"],
  }, (kinds) => {
    if (kinds.has("live")) live.reset();
    if (kinds.has("data")) rebuild();
    else if (kinds.has("layout")) { layout(); draw(); } else draw();
  });
  return () => { stop(); live.stop(); };
}

export default { render };
