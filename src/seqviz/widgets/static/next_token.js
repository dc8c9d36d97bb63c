// NextTokenDistribution view: its ES module is _prelude.js (h, bytesOf, visible, slider, onChanges, …) and _live.js
// (the live bar) followed by this file. Temperature is applied here, in the browser:
//   p_i = softmax(z / T)_i = exp((z_i - z_max) / T) / sum_j exp((z_j - z_max) / T)
// State: logits = float32 little-endian bytes sorted from highest to lowest (-inf allowed), tokens in the same order,
// temperature, top_k, k_max, t_min, t_max, sample_top_k, seed, title; live_spec (NextTokenDistribution.live).
// Live (the shipped character transformer): the bars are the next character after the reader's prompt; once the bar
// is open each bar is a button (click, Enter or Space) that appends its character, and the bar's "greedy" and
// "sample" buttons append n generated characters (sampled at the widget's temperature, from its top k when "only
// from the top k" is ticked, with its seed: the same prompt and seed give the same text).

function floats32(v) {
  const b = bytesOf(v);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out = new Float64Array(b.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = dv.getFloat32(4 * i, true);
  return out;
}

// softmax(z / T) for z sorted descending (z[0] is the finite maximum); exported for tests.
export function softmaxT(z, T) {
  const p = new Float64Array(z.length);
  let total = 0;
  for (let i = 0; i < z.length; i++) { p[i] = Math.exp((z[i] - z[0]) / T); total += p[i]; }
  for (let i = 0; i < z.length; i++) p[i] /= total;
  return p;
}

function render({ model, el }) {
  const { root, title, controls } = frame(el, "sv-next");
  // log-scale temperature slider: position x in [0, 1] <-> T = t_min * (t_max / t_min)^x
  const tS = slider("temperature T", "sv-temperature", 0, 1, 0.005);
  const kS = slider("top k", "sv-top-k", 1, model.get("k_max"), 1);
  const [tIn, kIn] = [tS.input, kS.input];
  controls.append(tS.label, kS.label);
  const stats = h("div", "sv-readout sv-stats");
  stats.setAttribute("aria-live", "polite");
  const bars = h("div", "sv-bars");
  bars.setAttribute("role", "list");
  const sampleRow = h("div", "sv-controls");
  const button = h("button", "sv-sample", "sample 20 tokens");
  button.type = "button";
  const only = h("input", "sv-only-top-k");
  only.type = "checkbox";
  sampleRow.append(button, labelled("", only, " only from the top k"));
  const samples = h("div", "sv-samples");
  samples.setAttribute("aria-live", "polite");
  root.append(title, controls, stats, bars, sampleRow, samples);
  const live = liveHost(model, root, title, {
    page: async (_, m, text) => {
      const e = m.encode(text);
      const f = await m.forward(e.ids);
      // highest first; ties keep vocabulary order (np.argsort(-z, kind="stable"))
      const order = Array.from(f.next.keys()).sort((a, b) => f.next[b] - f.next[a] || a - b);
      // the vocabulary is the recorded example's (the same model), so k_max and top_k stay
      return { traits: { logits: f32Bytes(order.map((i) => f.next[i])), tokens: order.map((i) => m.itos[i]) },
        notes: e.notes, status: `read ${e.ids.length} characters`, raw: { ids: e.ids, next: f.next } };
    },
    generate: async (_, m, text, o) => {
      const e = m.encode(text, { max: null }); // the model reads its last `context` characters as it steps
      const ids = await m.generate(e.ids, o.n, o.greedy ? { greedy: true }
        : { temperature: o.temperature, topK: o.top_k, seed: o.seed });
      return e.chars.join("") + m.text(ids);
    },
    controls: (bar, row) => {
      // the characters one press generates and the seed, within the limits the kernel and the runtime accept
      const limits = model.get("live_spec").limits;
      const n = h("input", "sv-live-n");
      n.type = "number"; n.min = String(limits.n[0]); n.max = String(limits.n[1]);
      n.value = String(withinLimit(model.get("live_spec").n || 40, limits.n));
      const seed = h("input", "sv-live-seed");
      seed.type = "number"; seed.min = String(limits.seed[0]); seed.max = String(limits.seed[1]); seed.step = "1";
      seed.value = String(model.get("seed"));
      seed.addEventListener("change", () => {
        const v = withinLimit(seed.value, limits.seed);
        seed.value = String(v);
        save(model, "seed", v);
      });
      const go = (greedy) => {
        const count = withinLimit(n.value, limits.n);
        n.value = String(count);
        bar.generate({ n: count, greedy, temperature: model.get("temperature"), seed: model.get("seed"),
          top_k: model.get("sample_top_k") ? model.get("top_k") : null });
      };
      const greedyB = h("button", "sv-live-greedy", "greedy");
      greedyB.type = "button";
      greedyB.addEventListener("click", () => go(true));
      const sampleB = h("button", "sv-live-sample", "sample");
      sampleB.type = "button";
      sampleB.addEventListener("click", () => go(false));
      row.append(labelled("append ", n, " characters:"), greedyB, sampleB, labelled("seed ", seed));
    },
    opened: () => draw(),
  });

  let z = null, tokens = null, p = null, clicks = 0;
  const toX = (T) => Math.log(T / model.get("t_min")) / Math.log(model.get("t_max") / model.get("t_min"));
  const toT = (x) => model.get("t_min") * Math.pow(model.get("t_max") / model.get("t_min"), x);

  tIn.addEventListener("input", () => save(model, "temperature", Math.round(toT(parseFloat(tIn.value)) * 1000) / 1000));
  kIn.addEventListener("input", () => save(model, "top_k", parseInt(kIn.value, 10)));
  only.addEventListener("change", () => save(model, "sample_top_k", only.checked));
  button.addEventListener("click", () => { clicks += 1; drawSamples(); });

  function readData() {
    z = floats32(model.get("logits"));
    tokens = model.get("tokens");
    kIn.max = String(model.get("k_max"));
    samples.replaceChildren();
    clicks = 0;
  }

  function drawSamples() {
    if (clicks === 0) { samples.replaceChildren(); return; }
    const k = model.get("top_k");
    const n = model.get("sample_top_k") ? k : p.length;
    let mass = 0;
    for (let i = 0; i < n; i++) mass += p[i];
    const next = seededRandom(model.get("seed") * 1000003 + clicks); // _random.js
    const chips = [];
    for (let s = 0; s < 20; s++) {
      let u = next() * mass, i = 0;
      while (i < n - 1 && u >= p[i]) { u -= p[i]; i++; }
      const chip = h("span", "sv-sample sv-tok-inline", visible(tokens[i]));
      chip.title = `rank ${i + 1}, p = ${p[i].toFixed(4)}`;
      chips.push(chip);
    }
    samples.replaceChildren(...chips);
  }

  function draw() {
    const T = model.get("temperature");
    const k = Math.min(model.get("top_k"), tokens.length);
    p = softmaxT(z, T);
    tIn.value = String(toX(T));
    setValueText(tS, T.toFixed(T < 1 ? 3 : 2));
    kIn.value = String(k);
    setValueText(kS, String(k));
    only.checked = model.get("sample_top_k");
    showTitle(title, model, "next-token distribution");
    let H = 0, topMass = 0;
    for (let i = 0; i < p.length; i++) if (p[i] > 0) H -= p[i] * Math.log2(p[i]);
    for (let i = 0; i < k; i++) topMass += p[i];
    stats.textContent = `V = ${p.length}; entropy ${H.toFixed(3)} bits (perplexity ${Math.pow(2, H).toFixed(2)}); ` +
      `the top ${k} hold ${(100 * topMass).toFixed(1)}% of the probability`;
    const rows = [];
    const bar0 = live.current(), picking = Boolean(bar0 && bar0.isOpen()); // live: a bar appends its token
    for (let i = 0; i < k; i++) {
      const row = h("div", "sv-bar-row");
      row.setAttribute("role", "listitem");
      const label = h(picking ? "button" : "span", "sv-tok sv-bar-label", visible(tokens[i]));
      label.title = tokens[i];
      const track = h("div", "sv-bar-track");
      track.setAttribute("aria-hidden", "true");
      const bar = h("div", "sv-bar");
      bar.style.width = `${(100 * p[i]) / p[0]}%`;
      track.appendChild(bar);
      row.append(label, track, h("span", "sv-bar-value", p[i].toFixed(4)));
      if (picking) { // the token is a button (Enter, Space); a click anywhere on its row does the same
        const tok = tokens[i];
        label.type = "button";
        label.classList.add("sv-bar-pick");
        label.setAttribute("aria-label", `append \u201c${visible(tok)}\u201d (p = ${p[i].toFixed(4)})`);
        row.classList.add("sv-bar-picking");
        row.addEventListener("click", () => bar0.setText(bar0.field.value + tok));
      }
      rows.push(row);
    }
    bars.setAttribute("aria-label", `the ${k} most probable next tokens at temperature ${T.toFixed(T < 1 ? 3 : 2)}`);
    bars.replaceChildren(...rows);
    noteFonts(root, []);
    root.dataset.temperature = String(T);
    root.dataset.topK = String(k);
    drawSamples();
  }

  readData();
  draw();
  // New scores (set_data from Python, or the live bar) are decoded again; a new live_spec makes a new bar; everything
  // else only redraws.
  const stop = onChanges(model, {
    data: ["logits", "tokens", "k_max"],
    view: ["temperature", "top_k", "sample_top_k", "seed", "title", "t_min", "t_max"],
    live: ["live_spec"],
  }, (kinds) => {
    if (kinds.has("live")) live.reset();
    if (kinds.has("data")) readData();
    draw();
  });
  return () => { stop(); live.stop(); };
}

export default { render };
