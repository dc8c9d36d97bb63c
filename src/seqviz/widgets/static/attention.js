// AttentionHeatmap view. The widget's ES module is _prelude.js (palettes, h, bytesOf, legend, onChanges, …) and
// _live.js (the live bar) followed by this file; it imports nothing, so it also runs from the widget state of the
// static book.
// State (see attention.py): weights = uint8 bytes (L, H, Tq, Tk) C order, value = q / 255 * vmax; mask = uint8 0/1
// bytes (Lm, Hm, Tq, Tk) or empty; query_tokens / key_tokens; layer, head, view ("head" | "grid"); title;
// query_label / key_label / value_label (what a row, a column and a weight are: "query", "key", "attention weight"
// by default; chapter 8's copy trace reads "headline word", "article word", "copy attention"); layer_names /
// head_names (the selectors' entries; empty: "layer 0", "head 0", …); live_spec (AttentionHeatmap.live): the
// shipped character transformer's self-attention over the reader's text (every layer and head, causal mask), or the
// shipped date model's cross-attention of its greedy output over the reader's date.
// The heatmap fits its container: cells as large as the width allows (at most 32 px); where that leaves no room for
// labels of at least MIN_LABEL_PX, the matrix keeps 14 px cells and scrolls sideways in a box the keyboard can
// reach; a matrix too large even for that fits the width without labels (the cursor's read-out names each cell).
// A page may cap the cells smaller: a slide deck sets --sv-slide-cell (px), so a heatmap fits a slide's height; the
// book's pages set nothing and keep MAX_CELL.

const MASKED = [0xbd, 0xbd, 0xbd];
const MAX_CELL = 32;
const MAX_SCROLL_PX = 6000; // wider than this at labelled size, a matrix fits the width unlabelled instead
const MAX_KEY_PX = 320; // the tallest the column labels' strip grows (a 40-character label at 13 px)
const THUMB_MIN = 150, THUMB_MAX = 260, GAP = 12; // the all-heads grid's small multiples

function hatchPattern(ctx) {
  const c = document.createElement("canvas");
  c.width = c.height = 6;
  const g = c.getContext("2d");
  g.fillStyle = "rgb(189,189,189)";
  g.fillRect(0, 0, 6, 6);
  g.strokeStyle = "rgb(110,110,110)";
  g.lineWidth = 1;
  g.beginPath();
  g.moveTo(0, 6); g.lineTo(6, 0);
  g.moveTo(-1, 1); g.lineTo(1, -1);
  g.moveTo(5, 7); g.lineTo(7, 5);
  g.stroke();
  return ctx.createPattern(c, "repeat");
}

// Decoded, read-only view of the model state.
function readState(model) {
  const [L, H, Tq, Tk] = model.get("shape");
  const mask = bytesOf(model.get("mask"));
  const ms = model.get("mask_shape");
  const names = (list, n, prefix) => Array.from({ length: n }, (_, i) => (list || [])[i] || `${prefix} ${i}`);
  return {
    L, H, Tq, Tk,
    w: bytesOf(model.get("weights")),
    vmax: model.get("vmax"),
    mask: mask.length ? mask : null,
    Lm: ms.length ? ms[0] : 1,
    Hm: ms.length ? ms[1] : 1,
    q: model.get("query_tokens"),
    k: model.get("key_tokens"),
    qLabel: model.get("query_label") || "query",
    kLabel: model.get("key_label") || "key",
    vLabel: model.get("value_label") || "attention weight",
    layerNames: names(model.get("layer_names"), L, "layer"),
    headNames: names(model.get("head_names"), H, "head"),
  };
}

function isMasked(s, l, hd, cell) {
  if (!s.mask) return false;
  const base = ((s.Lm === 1 ? 0 : l) * s.Hm + (s.Hm === 1 ? 0 : hd)) * s.Tq * s.Tk;
  return s.mask[base + cell] === 0;
}

function weightAt(s, l, hd, i, j) {
  return (s.w[((l * s.H + hd) * s.Tq + i) * s.Tk + j] / 255) * s.vmax;
}

// Paint head (l, hd) into canvas at cs pixels per cell: one ImageData pixel per cell, scaled up without smoothing,
// then one hatched path over the masked cells.
function paint(canvas, s, l, hd, cs) {
  const img = new ImageData(s.Tk, s.Tq);
  const px = img.data;
  const n = s.Tq * s.Tk;
  const base = (l * s.H + hd) * n;
  const masked = [];
  for (let c = 0; c < n; c++) {
    let r, g, b;
    if (isMasked(s, l, hd, c)) {
      [r, g, b] = MASKED;
      masked.push(c);
    } else {
      const q = s.w[base + c] * 3;
      r = LUT_VIRIDIS[q]; g = LUT_VIRIDIS[q + 1]; b = LUT_VIRIDIS[q + 2];
    }
    px[4 * c] = r; px[4 * c + 1] = g; px[4 * c + 2] = b; px[4 * c + 3] = 255;
  }
  const ctx = blit(canvas, img, s.Tk * cs, s.Tq * cs);
  if (masked.length && cs >= 4) {
    const path = new Path2D();
    for (const c of masked) path.rect((c % s.Tk) * cs, Math.floor(c / s.Tk) * cs, cs, cs);
    ctx.fillStyle = canvas.svHatch || (canvas.svHatch = hatchPattern(ctx));
    ctx.fill(path);
  }
}

// The colour legend, with a hatched "masked" swatch when the attention has a mask.
function attentionLegend(s) {
  const box = legend(LUT_VIRIDIS, "0", s.vmax.toFixed(3), s.vLabel);
  if (s.mask) {
    const sw = h("span", "sv-legend-masked");
    const m = document.createElement("canvas");
    m.width = 12; m.height = 10;
    m.setAttribute("aria-hidden", "true");
    const mg = m.getContext("2d");
    mg.fillStyle = hatchPattern(mg);
    mg.fillRect(0, 0, 12, 10);
    sw.append(m, h("span", "", "masked (hatched grey)"));
    box.appendChild(sw);
  }
  return box;
}

// What the heatmap draws for the reader's input, computed in the page (the traits AttentionHeatmap.set_data sets):
// weights (L, H, Tq, Tk) quantised to bytes of vmax, the causal mask of the character LM, the tokens.
async function liveAttention(model, m, text) {
  const e = m.encode(text);
  let w, L, H, Tq, Tk, queries, notes = e.notes, status, raw, mask = null;
  if (model.get("live_spec").model === "dates") {
    const g = await m.greedy(e.ids);
    ({ L, H } = m);
    [Tq, Tk, w] = [g.T, g.S, g.cross];
    queries = g.ids.map((i) => m.tgtItos[i]);
    const note = m.formatNote(e.chars.join(""));
    if (note) notes = notes.concat([note]);
    status = `greedy decoding: \u201c${g.text}\u201d`;
    raw = { src: e.ids, ids: g.ids, cross: g.cross };
  } else {
    const f = await m.forward(e.ids);
    ({ L, H } = f);
    [Tq, Tk, w] = [f.T, f.T, f.attention];
    queries = e.chars;
    mask = new Uint8Array(Tq * Tk);
    for (let i = 0; i < Tq; i++) mask.fill(1, i * Tk, i * Tk + i + 1);
    status = `read ${e.ids.length} characters`;
    raw = { ids: e.ids, attention: f.attention };
  }
  let vmax = 0;
  for (const x of w) if (x > vmax) vmax = x;
  vmax = vmax > 0 ? vmax : 1;
  return {
    traits: { shape: [L, H, Tq, Tk], vmax, weights: new DataView(quantized(w, 0, vmax).buffer),
      mask: new DataView((mask || new Uint8Array(0)).buffer), mask_shape: mask ? [1, 1, Tq, Tk] : [],
      query_tokens: queries, key_tokens: e.chars },
    notes, status, raw,
  };
}

// The room the labels need at `px`: the widest row label's width (qw) and the longest column label's length (keyH,
// drawn vertically), padding included. Measured on copies of the labels in the widget itself, so in the fonts and
// size the page draws them with (sized for 12 px and drawn at 13, chapter 8's rows read "airways p_gen=0…" and the
// date model's "</…"); before the widget is in the page, the canvas measure with a pixel to spare per character.
function labelRoom(root, s, px) {
  const probe = (texts, box, cls) => {
    const p = h("div", box);
    p.style.cssText = "position: absolute; left: 0; top: 0; visibility: hidden; width: max-content; " +
      "height: max-content; overflow: visible; pointer-events: none";
    for (const t of texts) {
      const e = h("span", `sv-tok ${cls}`, visible(t));
      e.style.fontSize = `${px}px`;
      e.style.maxWidth = e.style.maxHeight = "none";
      p.appendChild(e);
    }
    return p;
  };
  const qp = probe(s.q, "sv-queries", "sv-query"), kp = probe(s.k, "sv-keys", "sv-key");
  root.append(qp, kp);
  const qw = qp.offsetWidth, keyH = kp.offsetHeight; // layout sizes (whole px), not scaled by a slide's transform
  qp.remove();
  kp.remove();
  if (qw > 0 && keyH > 0) return { qw: qw + 1, keyH: keyH + 1 };
  const most = (texts) => Math.max(0, ...texts.map((t) => visible(t).length));
  return { qw: textWidth(s.q.map(visible), px, true) + most(s.q) + 10,
    keyH: textWidth(s.k.map(visible), px, true) + most(s.k) + 6 };
}

// How to draw one head at width W: cell size, whether labels are drawn, whether the matrix scrolls sideways, and the
// room of the row labels (qw) and of the column labels (keyH). A label is never cut: the row column is as wide as its
// widest label; where that would leave the cells less than 40 % of the width, the row labels scroll sideways with
// the matrix (rowsInside). Column labels are cut only beyond MAX_KEY_PX (the read-out names every cell).
function maxCell(root) {
  const px = parseFloat(getComputedStyle(root).getPropertyValue("--sv-slide-cell"));
  return px >= LABEL_CELL_PX ? Math.min(MAX_CELL, px) : MAX_CELL;
}

function fitSingle(root, s, W) {
  const maxCs = maxCell(root);
  let room = labelRoom(root, s, labelFont(maxCs));
  const cap = Math.floor(W * 0.6);
  const fit = Math.min(maxCs, Math.floor((W - room.qw - 4) / s.Tk));
  const keyH = (r) => Math.min(MAX_KEY_PX, r.keyH);
  if (room.qw <= cap && fit >= LABEL_CELL_PX - 2) {
    if (labelFont(fit) < labelFont(maxCs)) room = labelRoom(root, s, labelFont(fit));
    return { cs: fit, labels: true, scroll: false, qw: room.qw, keyH: keyH(room), rowsInside: false };
  }
  if (s.Tk * LABEL_CELL_PX <= MAX_SCROLL_PX) {
    room = labelRoom(root, s, labelFont(LABEL_CELL_PX));
    return { cs: LABEL_CELL_PX, labels: true, scroll: true, qw: room.qw, keyH: keyH(room), rowsInside: room.qw > cap };
  }
  return { cs: Math.max(1, Math.min(maxCs, Math.floor((W - 4) / s.Tk))), labels: false, scroll: false, qw: 0,
    keyH: 0, rowsInside: false };
}

function render({ model, el }) {
  const { root, title, controls } = frame(el, "sv-att");
  let s = null;

  const layerSel = h("select", "sv-layer");
  const layerLabel = labelled("layer ", layerSel);
  const headSel = h("select", "sv-head");
  const headLabel = labelled("head ", headSel);
  controls.append(layerLabel, headLabel);
  const axes = h("div", "sv-axes");
  const body = h("div", "sv-body");
  const readout = readoutLine();
  const legendBox = h("div", "sv-legend-wrap");
  const summary = srOnly("div", "sv-summary");
  root.append(title, controls, axes, body, readout, legendBox, summary);
  const live = liveHost(model, root, title, { page: (_, m, text) => liveAttention(model, m, text) });

  layerSel.addEventListener("change", () => save(model, "layer", parseInt(layerSel.value, 10)));
  headSel.addEventListener("change", () => {
    if (headSel.value === "all") {
      model.set("view", "grid");
    } else {
      model.set("head", parseInt(headSel.value, 10));
      model.set("view", "head");
    }
    model.save_changes();
  });

  function fillSelect(sel, names, withAll) {
    sel.replaceChildren();
    names.forEach((name, i) => {
      const o = h("option", "", name);
      o.value = String(i);
      sel.appendChild(o);
    });
    if (withAll) {
      const o = h("option", "", "all heads");
      o.value = "all";
      sel.appendChild(o);
    }
  }

  // "layer 1, head 2: " when there is more than one distribution to tell apart, else nothing
  const which = (l, hd) => (s.L * s.H > 1
    ? `${s.L > 1 ? s.layerNames[l] + ", " : ""}${s.H > 1 ? s.headNames[hd] : ""}`.replace(/, $/, "") + ": " : "");

  function describe(l, hd, i, j) {
    const where = `${which(l, hd)}${s.qLabel} \u201c${s.q[i]}\u201d (${i}) \u2192 ${s.kLabel} \u201c${s.k[j]}\u201d (${j})`;
    const masked = isMasked(s, l, hd, i * s.Tk + j);
    return masked ? `${where}: masked` : `${where}: ${weightAt(s, l, hd, i, j).toFixed(3)}`;
  }

  // The text alternative: for each row, the column it weights most, as a table only screen readers see.
  function summarize(l, hd, grid) {
    const table = h("table");
    const cap = grid
      ? `${s.layerNames[l]}, all ${s.H} heads: ${s.Tq} rows (${s.qLabel}) by ${s.Tk} columns (${s.kLabel}) each; ` +
        "open one head (Enter on its heatmap) for its table."
      : `${which(l, hd)}${s.vLabel}, ${s.Tq} rows (${s.qLabel}) by ${s.Tk} columns (${s.kLabel}); for each ` +
        `${s.qLabel}, the ${s.kLabel} it weights most.`;
    table.appendChild(h("caption", "", cap));
    if (!grid) {
      const head = h("tr");
      head.append(h("th", "", s.qLabel), h("th", "", `${s.kLabel} weighted most`), h("th", "", s.vLabel));
      table.appendChild(head);
      for (let i = 0; i < s.Tq; i++) {
        let best = -1, bw = -1;
        for (let j = 0; j < s.Tk; j++) {
          if (isMasked(s, l, hd, i * s.Tk + j)) continue;
          const w = weightAt(s, l, hd, i, j);
          if (w > bw) { bw = w; best = j; }
        }
        const tr = h("tr");
        tr.append(h("th", "", s.q[i]), h("td", "", best < 0 ? "(all masked)" : s.k[best]),
          h("td", "", best < 0 ? "" : bw.toFixed(3)));
        table.appendChild(tr);
      }
    }
    summary.replaceChildren(table);
  }

  // The one-head view and the all-heads grid are built once per data change and width; a layer/head selection only
  // repaints their canvases (cur holds the selection the read-outs use).
  const cur = { l: 0, hd: 0 };
  let single = null, grid = null, width = widthOf(root);

  function buildSingle() {
    const f = fitSingle(root, s, width);
    const cs = f.cs, font = f.labels ? labelFont(cs) : 0, keyH = f.keyH;
    const scrollLabel = `${s.vLabel}: ${s.Tq} rows (${s.qLabel}) by ${s.Tk} columns (${s.kLabel}), scrolls sideways`;
    // the box that scrolls sideways: the cells (the row labels stay beside them) or, rowsInside, the whole matrix
    const m = f.rowsInside ? scroller(scrollLabel, "sv-att-matrix sv-att-scroll") : h("div", "sv-att-matrix");
    const qCol = h("div", "sv-queries");
    qCol.style.paddingTop = `${keyH}px`;
    qCol.style.width = `${f.qw}px`;
    const area = f.scroll && !f.rowsInside ? scroller(scrollLabel, "sv-att-scroll") : h("div", "sv-att-area");
    const scrollBox = f.rowsInside ? m : area, x0 = f.rowsInside ? f.qw : 0;
    const keys = h("div", "sv-keys");
    keys.style.height = `${keyH}px`;
    const keySpans = s.k.map((t, j) => {
      const e = h("span", "sv-tok sv-key", visible(t));
      e.style.width = `${cs}px`;
      e.style.fontSize = `${font}px`;
      e.title = `${s.kLabel} ${j}: ${t}`;
      keys.appendChild(e);
      return e;
    });
    const querySpans = s.q.map((t, i) => {
      const e = h("span", "sv-tok sv-query", visible(t));
      e.style.height = e.style.lineHeight = `${cs}px`;
      e.style.fontSize = `${font}px`;
      e.title = `${s.qLabel} ${i}: ${t}`;
      qCol.appendChild(e);
      return e;
    });
    if (!f.labels) { keys.hidden = true; qCol.hidden = true; }
    const wrap = h("div", "sv-canvas-wrap");
    const heat = h("canvas", "sv-heat");
    const over = h("canvas", "sv-overlay");
    over.setAttribute("aria-hidden", "true");
    over.width = heat.width = s.Tk * cs;
    over.height = heat.height = s.Tq * cs;
    wrap.append(heat, over);
    area.append(keys, wrap);
    m.append(qCol, area);
    const og = over.getContext("2d");
    let hl = null;
    const unmark = () => {
      og.clearRect(0, 0, over.width, over.height);
      if (hl) { querySpans[hl[0]].classList.remove("sv-hl"); keySpans[hl[1]].classList.remove("sv-hl"); }
      hl = null;
    };
    const cursor = cellCursor(heat, {
      rows: () => s.Tq, cols: () => s.Tk,
      cellAt: (ev) => cellUnder(ev, heat, cs, cs, s.Tq, s.Tk),
      label: `${s.vLabel} heatmap, ${s.Tq} rows (${s.qLabel}) by ${s.Tk} columns (${s.kLabel}): arrow keys move ` +
        "from cell to cell",
      show: (i, j) => {
        unmark();
        root.dataset.cursor = i === null ? "" : `${i},${j}`;
        if (i === null) { readout.textContent = "\u00a0"; return; }
        hl = [i, j];
        querySpans[i].classList.add("sv-hl");
        keySpans[j].classList.add("sv-hl");
        og.strokeStyle = "rgba(255,255,255,0.9)";
        og.lineWidth = 1;
        og.strokeRect(0.5, i * cs + 0.5, over.width - 1, cs - 1);
        og.strokeRect(j * cs + 0.5, 0.5, cs - 1, over.height - 1);
        og.strokeStyle = ACCENT;
        og.lineWidth = 2;
        og.strokeRect(j * cs + 1, i * cs + 1, Math.max(1, cs - 2), Math.max(1, cs - 2));
        readout.textContent = describe(cur.l, cur.hd, i, j);
        if (f.scroll) { // keep the cursor's cell in the scrolling box's view
          const x = x0 + j * cs;
          if (x < scrollBox.scrollLeft + x0) scrollBox.scrollLeft = x - x0;
          else if (x + cs > scrollBox.scrollLeft + scrollBox.clientWidth) {
            scrollBox.scrollLeft = x + cs - scrollBox.clientWidth;
          }
        }
      },
    });
    root.dataset.cell = String(cs);
    root.dataset.labels = f.labels ? "shown" : "hidden";
    root.dataset.scroll = String(f.scroll);
    return {
      node: m, fonts: [font],
      paint: () => {
        const c = cursor.get();
        unmark();
        paint(heat, s, cur.l, cur.hd, cs);
        if (c) cursor.set(c[0], c[1]);
      },
    };
  }

  function buildGrid() {
    const perRow = Math.max(1, Math.min(s.H, Math.floor((width + GAP) / (THUMB_MIN + GAP))));
    const side = Math.min(THUMB_MAX, Math.floor((width - GAP * (perRow - 1)) / perRow));
    const cs = Math.max(1, Math.floor(side / Math.max(s.Tq, s.Tk)));
    const node = h("div", "sv-att-grid");
    const canvases = [];
    for (let hd = 0; hd < s.H; hd++) {
      const cell = h("div", "sv-att-cell");
      cell.appendChild(h("div", "sv-att-cell-label", s.headNames[hd]));
      const c = h("canvas", "sv-heat");
      c.title = `${s.headNames[hd]}: click (or Enter) to open`;
      cellCursor(c, {
        rows: () => s.Tq, cols: () => s.Tk,
        cellAt: (ev) => cellUnder(ev, c, cs, cs, s.Tq, s.Tk),
        label: `${s.headNames[hd]}: ${s.vLabel}, ${s.Tq} rows (${s.qLabel}) by ${s.Tk} columns (${s.kLabel}); ` +
          "arrow keys read the cells, Enter opens this head",
        show: (i, j) => { readout.textContent = i === null ? "\u00a0" : describe(cur.l, hd, i, j); },
        activate: () => {
          model.set("head", hd);
          model.set("view", "head");
          model.save_changes();
        },
      });
      cell.appendChild(c);
      node.appendChild(cell);
      canvases.push(c);
    }
    return { node, fonts: [], paint: () => canvases.forEach((c, hd) => paint(c, s, cur.l, hd, cs)) };
  }

  // Redraw what a selection touches: repaint the shown canvases, swap one-head view and grid when asked.
  function draw() {
    cur.l = Math.min(model.get("layer"), s.L - 1);
    cur.hd = Math.min(model.get("head"), s.H - 1);
    const showGrid = model.get("view") === "grid";
    layerSel.value = String(cur.l);
    headSel.value = showGrid ? "all" : String(cur.hd);
    const v = showGrid ? (grid = grid || buildGrid()) : (single = single || buildSingle());
    const refocus = body.contains(document.activeElement) && body.firstChild !== v.node;
    if (body.firstChild !== v.node) body.replaceChildren(v.node);
    v.paint();
    if (refocus) v.node.querySelector("canvas.sv-heat").focus();
    noteFonts(root, v.fonts);
    summarize(cur.l, cur.hd, showGrid);
    root.dataset.layer = String(cur.l);
    root.dataset.head = showGrid ? "all" : String(cur.hd);
  }

  function rebuild() {
    s = readState(model);
    single = grid = null;
    showTitle(title, model, "attention heatmap");
    fillSelect(layerSel, s.layerNames, false);
    fillSelect(headSel, s.headNames, s.H > 1);
    layerLabel.hidden = s.L < 2;
    headLabel.hidden = s.H < 2;
    axes.textContent = `rows: ${s.qLabel} \u00b7 columns: ${s.kLabel} \u00b7 colour: ${s.vLabel}`;
    legendBox.replaceChildren(attentionLegend(s));
    root.dataset.shape = `${s.L}x${s.H}x${s.Tq}x${s.Tk}`;
    draw();
  }

  rebuild();
  const stopResize = onResize(root, (w) => { width = w; single = grid = null; draw(); });
  // A selection repaints; new data (set_data from Python, or the live bar) rebuilds; a new live_spec, a new bar.
  const stop = onChanges(model, {
    data: ["weights", "shape", "vmax", "mask", "mask_shape", "query_tokens", "key_tokens", "title", "query_label",
      "key_label", "value_label", "layer_names", "head_names"],
    view: ["layer", "head", "view"],
    live: ["live_spec"],
  }, (kinds) => {
    if (kinds.has("live")) live.reset();
    if (kinds.has("data")) rebuild(); else draw();
  });
  return () => { stop(); stopResize(); live.stop(); };
}

export default { render };
