// AttentionHeatmap view. The widget's ES module is _prelude.js (palettes, h, bytesOf, legend, onChanges, …) followed
// by this file; it imports nothing, so it also runs from the widget state of the static book.
// State (see attention.py): weights = uint8 bytes (L, H, Tq, Tk) C order, value = q / 255 * vmax; mask = uint8 0/1
// bytes (Lm, Hm, Tq, Tk) or empty; query_tokens / key_tokens; layer, head, view ("head" | "grid"); title.

const MASKED = [0xbd, 0xbd, 0xbd];
const SINGLE_PX = 480; // target side of the one-head heatmap
const GRID_PX = 150; // target side of each small multiple in the all-heads grid

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
  return {
    L, H, Tq, Tk,
    w: bytesOf(model.get("weights")),
    vmax: model.get("vmax"),
    mask: mask.length ? mask : null,
    Lm: ms.length ? ms[0] : 1,
    Hm: ms.length ? ms[1] : 1,
    q: model.get("query_tokens"),
    k: model.get("key_tokens"),
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
  const box = legend(LUT_VIRIDIS, "0", s.vmax.toFixed(3), "attention weight");
  if (s.mask) {
    const sw = h("span", "sv-legend-masked");
    const m = document.createElement("canvas");
    m.width = 12; m.height = 10;
    const mg = m.getContext("2d");
    mg.fillStyle = hatchPattern(mg);
    mg.fillRect(0, 0, 12, 10);
    sw.append(m, h("span", "", "masked"));
    box.appendChild(sw);
  }
  return box;
}

function render({ model, el }) {
  const { root, title, controls } = frame(el, "sv-att");
  let s = null;

  const layerSel = h("select", "sv-layer");
  const layerLabel = labelled("layer ", layerSel);
  const headSel = h("select", "sv-head");
  const headLabel = labelled("head ", headSel);
  controls.append(layerLabel, headLabel);
  const body = h("div", "sv-body");
  const readout = readoutLine();
  const legendBox = h("div", "sv-legend-wrap");
  root.append(title, controls, body, readout, legendBox);

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

  function fillSelect(sel, n, prefix, withAll) {
    sel.replaceChildren();
    for (let i = 0; i < n; i++) {
      const o = h("option", "", `${prefix} ${i}`);
      o.value = String(i);
      sel.appendChild(o);
    }
    if (withAll) {
      const o = h("option", "", "all heads");
      o.value = "all";
      sel.appendChild(o);
    }
  }

  function describe(l, hd, i, j) {
    const where = `layer ${l}, head ${hd}: query \u201c${s.q[i]}\u201d (${i}) \u2192 key \u201c${s.k[j]}\u201d (${j})`;
    const masked = isMasked(s, l, hd, i * s.Tk + j);
    return masked ? `${where}: masked` : `${where}: ${weightAt(s, l, hd, i, j).toFixed(3)}`;
  }

  function cellFromEvent(ev, canvas, cs) {
    const r = canvas.getBoundingClientRect();
    const sx = canvas.width / r.width, sy = canvas.height / r.height;
    const j = Math.floor(((ev.clientX - r.left) * sx) / cs);
    const i = Math.floor(((ev.clientY - r.top) * sy) / cs);
    if (i < 0 || j < 0 || i >= s.Tq || j >= s.Tk) return null;
    return [i, j];
  }

  // The one-head view and the all-heads grid are built once per data change; a layer/head selection only repaints
  // their canvases (cur holds the selection the hover handlers read).
  const cur = { l: 0, hd: 0 };
  let single = null, grid = null;

  function buildSingle() {
    const cs = Math.max(3, Math.min(32, Math.floor(SINGLE_PX / Math.max(s.Tq, s.Tk))));
    const font = `${Math.min(13, cs - 2)}px`;
    const m = h("div", "sv-att-matrix");
    const keys = h("div", "sv-keys");
    const queries = h("div", "sv-queries");
    const keySpans = s.k.map((t) => {
      const e = h("span", "sv-tok sv-key", t);
      e.style.width = `${cs}px`;
      e.style.fontSize = font;
      e.title = t;
      keys.appendChild(e);
      return e;
    });
    const querySpans = s.q.map((t) => {
      const e = h("span", "sv-tok sv-query", t);
      e.style.height = e.style.lineHeight = `${cs}px`;
      e.style.fontSize = font;
      e.title = t;
      queries.appendChild(e);
      return e;
    });
    if (cs < 10) { keys.classList.add("sv-hidden-labels"); queries.classList.add("sv-hidden-labels"); }
    const wrap = h("div", "sv-canvas-wrap");
    const heat = h("canvas", "sv-heat");
    const over = h("canvas", "sv-overlay");
    over.width = heat.width = s.Tk * cs;
    over.height = heat.height = s.Tq * cs;
    wrap.append(heat, over);
    m.append(h("div", "sv-corner"), keys, queries, wrap);
    const og = over.getContext("2d");
    let hl = null;
    const clear = () => {
      og.clearRect(0, 0, over.width, over.height);
      if (hl) { querySpans[hl[0]].classList.remove("sv-hl"); keySpans[hl[1]].classList.remove("sv-hl"); }
      hl = null;
    };
    heat.addEventListener("mousemove", (ev) => {
      const ij = cellFromEvent(ev, heat, cs);
      clear();
      if (!ij) return;
      const [i, j] = ij;
      hl = ij;
      querySpans[i].classList.add("sv-hl");
      keySpans[j].classList.add("sv-hl");
      og.strokeStyle = "rgba(255,255,255,0.9)";
      og.lineWidth = 1;
      og.strokeRect(0.5, i * cs + 0.5, over.width - 1, cs - 1);
      og.strokeRect(j * cs + 0.5, 0.5, cs - 1, over.height - 1);
      og.strokeStyle = ACCENT;
      og.lineWidth = 2;
      og.strokeRect(j * cs + 1, i * cs + 1, cs - 2, cs - 2);
      readout.textContent = describe(cur.l, cur.hd, i, j);
    });
    heat.addEventListener("mouseleave", () => { clear(); readout.textContent = "\u00a0"; });
    return { node: m, paint: () => { clear(); paint(heat, s, cur.l, cur.hd, cs); } };
  }

  function buildGrid() {
    const cs = Math.max(1, Math.min(16, Math.floor(GRID_PX / Math.max(s.Tq, s.Tk))));
    const node = h("div", "sv-att-grid");
    const canvases = [];
    for (let hd = 0; hd < s.H; hd++) {
      const cell = h("div", "sv-att-cell");
      cell.appendChild(h("div", "sv-att-cell-label", `head ${hd}`));
      const c = h("canvas", "sv-heat");
      c.title = `head ${hd}: click to open`;
      c.addEventListener("mousemove", (ev) => {
        const ij = cellFromEvent(ev, c, cs);
        if (ij) readout.textContent = describe(cur.l, hd, ij[0], ij[1]);
      });
      c.addEventListener("click", () => {
        model.set("head", hd);
        model.set("view", "head");
        model.save_changes();
      });
      cell.appendChild(c);
      node.appendChild(cell);
      canvases.push(c);
    }
    return { node, paint: () => canvases.forEach((c, hd) => paint(c, s, cur.l, hd, cs)) };
  }

  // Redraw what a selection touches: repaint the shown canvases, swap one-head view and grid when asked.
  function draw() {
    cur.l = Math.min(model.get("layer"), s.L - 1);
    cur.hd = Math.min(model.get("head"), s.H - 1);
    const showGrid = model.get("view") === "grid";
    layerSel.value = String(cur.l);
    headSel.value = showGrid ? "all" : String(cur.hd);
    const v = showGrid ? (grid = grid || buildGrid()) : (single = single || buildSingle());
    if (body.firstChild !== v.node) body.replaceChildren(v.node);
    v.paint();
    root.dataset.layer = String(cur.l);
    root.dataset.head = showGrid ? "all" : String(cur.hd);
  }

  function rebuild() {
    s = readState(model);
    single = grid = null;
    showTitle(title, model);
    fillSelect(layerSel, s.L, "layer", false);
    fillSelect(headSel, s.H, "head", s.H > 1);
    layerLabel.hidden = s.L < 2;
    headLabel.hidden = s.H < 2;
    legendBox.replaceChildren(attentionLegend(s));
    root.dataset.shape = `${s.L}x${s.H}x${s.Tq}x${s.Tk}`;
    draw();
  }

  rebuild();
  // A selection repaints; new data (set_data from Python) rebuilds.
  return onChanges(model, {
    data: ["weights", "shape", "vmax", "mask", "mask_shape", "query_tokens", "key_tokens", "title"],
    view: ["layer", "head", "view"],
  }, (kinds) => (kinds.has("data") ? rebuild() : draw()));
}

export default { render };
