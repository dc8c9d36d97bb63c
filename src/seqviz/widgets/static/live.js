// seqviz live models: the book's own checkpoints, exported by `python -m seqviz.live export` (make live-models), run
// in the page by onnxruntime-web (WebAssembly, one thread: a static page is not cross-origin isolated), offline.
// This file follows _random.js and live_decode.js in the runtime's one ES module (scripts/vendor_js.py writes it as
// vendor/live/live.js); it uses live_decode.js's generate and beamSearch.
//
//   configureLive({ort, models})   where onnxruntime-web's files and the export (manifest.json, *.onnx) are served
//                                  (or {files: {name: URL}}, one URL per file, e.g. blob: URLs)
//   loadModel(name)                "char_lm", "char_lstm" or "dates": fetched, checked and started once per page and
//                                  shared by every caller (the cache lives on globalThis, so two copies of this
//                                  module share it too); nothing loads before the first call
//
// CharLM, CharLSTM and EncoderDecoder run the graphs of seqviz.live.graphs (tested equal to PyTorch) and decode with
// live_decode.js (tested to choose the tokens seqviz.decode chooses). Input is checked before any graph runs: a
// LiveInputError says what was wrong (an empty prompt, characters outside the model's vocabulary, which it names and
// can drop; text longer than the model reads is cropped by the model's rule in the manifest, `crop`, and `notes` says
// so; a number of characters or a seed outside the manifest's `limits`). Both rules are seqviz.live.limits', which the
// kernel applies too. Every file is checked against the manifest's size and SHA-256 before it runs. Arrays are flat,
// row-major Float32Arrays with their shape beside them, as the widgets' buffers are.
// Top-level names: LiveInputError, configureLive, loadRuntime, loadManifest, loadModel, encodeText, checkLimit,
// checkFile, CharModel, CharLM, CharLSTM, EncoderDecoder (and the helpers liveConfig, liveUrl, fetchChecked,
// sha256Hex, cropOf, LiveGraph, shown, checkIds, vocabulary, rowsAt, LIVE, LIVE_FORMAT, ORT_FILES).

const LIVE_FORMAT = 2; // the manifest format this runtime reads (seqviz.live.export.FORMAT)
const LIVE = globalThis.__seqvizLive1 || (globalThis.__seqvizLive1 = {
  config: null, runtime: null, manifest: null, models: new Map(),
});

class LiveInputError extends Error {
  constructor(message, details = {}) {
    super(message);
    this.name = "LiveInputError";
    this.details = details;
  }
}

// Where the runtime and the models are: `ort` the folder of onnxruntime-web's files (ORT_FILES), `models` the folder
// of the export (manifest.json and the .onnx files it names), as URLs or paths relative to the page; `files` gives
// any of those files a URL of its own instead (e.g. blob: URLs where no folder is served). The first configuration
// holds for the page; another one after loading began is refused, since every widget shares what was loaded.
const ORT_FILES = ["ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"];

function configureLive({ ort = null, models = null, files = {}, threads = 1 } = {}) {
  const folder = (u) => {
    if (u === null) return null;
    const url = new URL(u, document.baseURI);
    if (!url.pathname.endsWith("/")) url.pathname += "/";
    return url.href;
  };
  const missing = [...ORT_FILES.filter((f) => !ort && !files[f]), ...(!models && !files["manifest.json"]
    ? ["manifest.json"] : [])];
  if (missing.length) {
    throw new TypeError(`configureLive needs the folders {ort, models} of onnxruntime-web and of the export, or ` +
      `files: {name: URL}; nothing says where ${missing.join(", ")} is`);
  }
  const config = { ort: folder(ort), models: folder(models), files: { ...files }, threads };
  if (LIVE.config && JSON.stringify(LIVE.config) !== JSON.stringify(config) && (LIVE.runtime || LIVE.manifest)) {
    throw new Error(`the live models already load from ${LIVE.config.models || "the files given"}; one page uses ` +
      "one copy");
  }
  LIVE.config = config;
  return config;
}

function liveConfig() {
  if (!LIVE.config) throw new Error("the live runtime is not configured: call configureLive({ort, models}) first");
  return LIVE.config;
}

// The URL of one file of the runtime (kind "ort") or of the export ("models").
function liveUrl(kind, name) {
  const cfg = liveConfig();
  if (cfg.files[name]) return cfg.files[name];
  if (!cfg[kind]) throw new Error(`no URL for ${name}: configureLive was given neither the ${kind} folder nor it`);
  return cfg[kind] + name;
}

// onnxruntime-web's WebAssembly build, imported once from the book's own copy (its loader and .wasm are fetched when
// the first model starts).
function loadRuntime() {
  const cfg = liveConfig();
  if (!LIVE.runtime) {
    const url = liveUrl("ort", ORT_FILES[0]);
    LIVE.runtime = import(url).then((ort) => {
      ort.env.wasm.wasmPaths = { mjs: liveUrl("ort", ORT_FILES[1]), wasm: liveUrl("ort", ORT_FILES[2]) };
      ort.env.wasm.numThreads = cfg.threads; // more threads need cross-origin isolation; two gave no speed-up here
      ort.env.wasm.proxy = false;
      ort.env.logLevel = "error";
      return ort;
    }, (err) => {
      LIVE.runtime = null;
      throw new Error(`could not load onnxruntime-web from ${url}: ${err.message}`);
    });
  }
  return LIVE.runtime;
}

async function fetchChecked(url, what) {
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new Error(`could not fetch ${what} from ${url}: ${err.message}`);
  }
  if (!response.ok) throw new Error(`could not fetch ${what} from ${url}: HTTP ${response.status}`);
  return response;
}

// The export's manifest.json: per model its files, vocabularies and sizes.
function loadManifest() {
  if (!LIVE.manifest) {
    LIVE.manifest = fetchChecked(liveUrl("models", "manifest.json"), "the live-model manifest")
      .then((r) => r.json())
      .then((m) => {
        if (m.format !== LIVE_FORMAT) {
          throw new Error(`the live-model export has format ${m.format}; this page reads format ${LIVE_FORMAT} ` +
            "(rebuild the book with make live-models)");
        }
        return m;
      })
      .catch((err) => { LIVE.manifest = null; throw err; });
  }
  return LIVE.manifest;
}

// The SHA-256 of `bytes` in hex (SubtleCrypto: pages served over https or from localhost, and node).
async function sha256Hex(bytes) {
  const subtle = globalThis.crypto && globalThis.crypto.subtle;
  if (!subtle) {
    throw new Error("this page cannot check the model files (no SubtleCrypto: serve the book over https or from " +
      "localhost)");
  }
  return Array.from(new Uint8Array(await subtle.digest("SHA-256", bytes)), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

// The bytes fetched from `url` if they are the file the manifest lists ({bytes, sha256}), else an error saying so.
async function checkFile(bytes, f, url) {
  if (bytes.length !== f.bytes) {
    throw new Error(`${url} has ${bytes.length} bytes, the manifest says ${f.bytes}: the export is damaged or stale ` +
      "(rebuild the book with make live-models)");
  }
  const got = await sha256Hex(bytes);
  if (got !== f.sha256) {
    throw new Error(`${url} has SHA-256 ${got}, the manifest says ${f.sha256}: the export is damaged or stale ` +
      "(rebuild the book with make live-models)");
  }
  return bytes;
}

// One exported graph: onnxruntime runs one call of a session at a time, so calls queue.
class LiveGraph {
  constructor(ort, session) {
    this.ort = ort;
    this.session = session;
    this.queue = Promise.resolve();
  }

  ids(rows) { // B equal-length rows of token ids -> an int64 tensor (B, T)
    const B = rows.length, T = rows[0].length;
    const data = new BigInt64Array(B * T);
    rows.forEach((row, b) => {
      if (row.length !== T) throw new Error("every row of a batch must have the same length");
      row.forEach((id, t) => { data[b * T + t] = BigInt(id); });
    });
    return new this.ort.Tensor("int64", data, [B, T]);
  }

  floats(data, dims) { return new this.ort.Tensor("float32", data, dims); }

  run(feeds, fetches = undefined) { // fetches: the output names to copy out (default: all)
    const result = this.queue.then(() => this.session.run(feeds, fetches));
    this.queue = result.catch(() => {});
    return result.then((out) => Object.fromEntries(Object.entries(out).map(([k, t]) => [k, t.data])));
  }
}

// Every model of the export is loaded at most once per page; a failed load may be retried.
function loadModel(name) {
  if (!LIVE.models.has(name)) {
    const loading = (async () => {
      const [ort, manifest] = await Promise.all([loadRuntime(), loadManifest()]);
      const entry = manifest.models[name];
      if (!entry) {
        throw new Error(`the export has no model called ${name}; it has ${Object.keys(manifest.models).join(", ")}`);
      }
      const graphs = {};
      for (const [role, f] of Object.entries(entry.files)) {
        const url = liveUrl("models", f.file);
        const bytes = await checkFile(new Uint8Array(await (await fetchChecked(url, `the ${name} model`))
          .arrayBuffer()), f, url);
        const session = await ort.InferenceSession.create(bytes, { executionProviders: ["wasm"],
          graphOptimizationLevel: "all" });
        graphs[role] = new LiveGraph(ort, session);
      }
      const Kind = { transformer_lm: CharLM, lstm_lm: CharLSTM, encoder_decoder: EncoderDecoder }[entry.kind];
      if (!Kind) throw new Error(`this runtime cannot run a model of kind ${entry.kind}`);
      return new Kind(entry, graphs, manifest.limits);
    })();
    LIVE.models.set(name, loading);
    loading.catch(() => LIVE.models.delete(name));
  }
  return LIVE.models.get(name);
}

// ---- input ----------------------------------------------------------------------------------------------------
function shown(chars) { return chars.map((c) => JSON.stringify(c)).join(", "); }

// Text -> ids of a character vocabulary. Characters outside it are an error naming them, or with drop: true are left
// out (and named in `dropped`); an empty result is an error; text longer than `max` is cropped to its last
// (keep: "end") or first (keep: "start") max characters, and `notes` says so, with `why` (default: the model reads at
// most max). seqviz.live.kernel.encode_text checks text the same way, with the same messages.
function encodeText(text, stoi, { what = "the text", drop = false, max = null, keep = "end", why = null } = {}) {
  if (typeof text !== "string") throw new LiveInputError(`${what} must be text, got ${typeof text}`);
  let chars = Array.from(text);
  if (chars.length === 0) throw new LiveInputError(`${what} is empty: type at least one character`, { empty: true });
  const unknown = [...new Set(chars.filter((c) => !stoi.has(c)))];
  if (unknown.length && !drop) {
    throw new LiveInputError(`the model does not know ${unknown.length === 1 ? "the character" : "the characters"} ` +
      `${shown(unknown)} (not in its vocabulary): drop ${unknown.length === 1 ? "it" : "them"} or replace ` +
      `${unknown.length === 1 ? "it" : "them"}`, { unknown });
  }
  const notes = [];
  if (unknown.length) {
    chars = chars.filter((c) => stoi.has(c));
    notes.push(`left out ${shown(unknown)}: not in the model's vocabulary`);
    if (chars.length === 0) {
      throw new LiveInputError(`${what} has no character the model knows`, { unknown, empty: true });
    }
  }
  let cropped = 0;
  if (max !== null && chars.length > max) {
    cropped = chars.length - max;
    chars = keep === "end" ? chars.slice(-max) : chars.slice(0, max);
    notes.push(`cropped to its ${keep === "end" ? "last" : "first"} ${max} characters (${why ||
      `the model reads at most ${max}`}); ${cropped} left out`);
  }
  return { ids: chars.map((c) => stoi.get(c)), chars, dropped: unknown, cropped, notes };
}

// A whole number a request gives (a number of characters, a seed), within [lo, hi] of the manifest's limits; the
// kernel says the same (seqviz.widgets._live.count).
function checkLimit(value, name, [lo, hi]) {
  if (!Number.isInteger(value) || value < lo || value > hi) {
    throw new LiveInputError(`${name} must be a whole number from ${lo} to ${hi}, got ${value}`);
  }
  return value;
}

// A model's cropping rule from its manifest entry: {keep: "end" | "start", max, why} (seqviz.live.limits.crop_rule).
function cropOf(entry) {
  const c = entry.crop;
  if (!c || !["end", "start"].includes(c.keep) || !Number.isInteger(c.max) || c.max < 1) {
    throw new Error("the export's manifest has no cropping rule for this model (rebuild the book with make " +
      "live-models)");
  }
  return { max: c.max, keep: c.keep, why: c.why };
}

function checkIds(ids, V, max, what) {
  if (!Array.isArray(ids) || ids.length === 0) {
    throw new LiveInputError(`${what} is empty: give at least one token`, { empty: true });
  }
  if (max !== null && ids.length > max) {
    throw new LiveInputError(`${what} has ${ids.length} tokens, more than the model reads (${max}): crop it`,
      { tooLong: true });
  }
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= V) throw new LiveInputError(`token id ${id} is not in [0, ${V})`);
  }
}

function vocabulary(itos) { return new Map(itos.map((s, i) => [s, i])); }

// Rows of a flat (B, T, V) array at position t of each row.
function rowsAt(data, B, T, V, t) {
  return Array.from({ length: B }, (_, b) => data.subarray((b * T + t) * V, (b * T + t + 1) * V));
}

// ---- character language models: what the transformer and the LSTM share -----------------------------------------
class CharModel {
  constructor(entry, what, context = null, limits = null) {
    this.entry = entry;
    this.what = what; // how errors name the input
    this.itos = entry.itos;
    this.stoi = vocabulary(entry.itos);
    this.V = entry.vocab_size;
    this.context = context; // the most characters the model reads (null: no limit)
    this.crop = cropOf(entry); // how a long input is cropped before it is read
    this.limits = limits; // the manifest's limits of a request
  }

  // Text -> ids, cropped by the model's rule (options override: {max: null} reads it all).
  encode(text, options = {}) {
    return encodeText(text, this.stoi, { what: this.what, ...this.crop, ...options });
  }

  text(ids) { return ids.map((i) => this.itos[i]).join(""); }

  // seqviz.decode.generate through the model's stepper: the new ids only (a request past the limits is refused).
  async generate(ids, maxNew, options = {}) {
    checkIds(ids, this.V, null, this.what);
    if (this.limits) {
      checkLimit(maxNew, "n", this.limits.n);
      if (!options.greedy && options.seed !== undefined && options.seed !== null) {
        checkLimit(options.seed, "seed", this.limits.seed);
      }
    }
    return generate(this.stepper(), ids, maxNew, options);
  }

  // seqviz.decode.beam_search through the model's stepper: {hypotheses, trace}.
  beam(ids, beamSize, maxNew, options = {}) {
    checkIds(ids, this.V, null, this.what);
    return beamSearch(this.stepper(), ids, beamSize, maxNew, options);
  }
}

// ---- the character transformer LM ------------------------------------------------------------------------------
class CharLM extends CharModel {
  constructor(entry, graphs, limits = null) {
    super(entry, "the prompt", entry.context, limits);
    this.graph = graphs.lm;
    this.L = entry.layers;
    this.H = entry.heads;
    this.dk = entry.d_k;
  }

  // B rows of ids read after `past` ({k, v (B, L, H, P, d_k), P}; null: nothing read before) -> the graph's outputs.
  run(rows, past = null, fetches = undefined) {
    const g = this.graph, dims = [rows.length, this.L, this.H, past ? past.P : 0, this.dk];
    const none = new Float32Array(0);
    return g.run({ ids: g.ids(rows), past_k: g.floats(past ? past.k : none, dims),
      past_v: g.floats(past ? past.v : none, dims) }, fetches);
  }

  // One sequence of at most `context` ids -> logits (T, V), attention (L, H, T, T), q, k, v (L, H, T, d_k), and the
  // last position's logits, `next`.
  async forward(ids) {
    checkIds(ids, this.V, this.context, "the prompt");
    const T = ids.length;
    const out = await this.run([ids]);
    return { T, V: this.V, L: this.L, H: this.H, dk: this.dk, logits: out.logits, attention: out.attention, q: out.q,
      k: out.k, v: out.v, next: out.logits.subarray((T - 1) * this.V, T * this.V) };
  }

  // The decode.py stepper, as TransformerLM.step: the state holds each row's ids read so far and the keys and values
  // of every layer (the cache), so a new token costs one position; once the ids would pass `context`, the last
  // `context` ids are re-read from no cache (the positions shift).
  stepper() {
    const lm = this, per = lm.L * lm.H * lm.dk; // numbers per row and cached position
    return {
      async step(rows, state) {
        const all = rows.map((r, b) => (state ? state.rows[b] : []).concat(r));
        const cached = state !== null && all[0].length <= lm.context;
        const read = cached ? rows : all.map((r) => r.slice(-lm.context));
        const kept = cached ? all : read;
        // a full window is re-read at the next step, so its cache is not copied out of the runtime
        const full = kept[0].length >= lm.context;
        const out = await lm.run(read, cached ? state : null, full ? ["logits"] : ["logits", "k", "v"]);
        const T = read[0].length;
        return { logits: rowsAt(out.logits, rows.length, T, lm.V, T - 1),
          state: { rows: kept, k: full ? null : out.k, v: full ? null : out.v, P: kept[0].length } };
      },
      reorderState(state, index) {
        const n = per * state.P; // one row's cache, contiguous (B first)
        const pick = (a) => {
          if (a === null) return null;
          const out = new Float32Array(index.length * n);
          index.forEach((i, b) => out.set(a.subarray(i * n, (i + 1) * n), b * n));
          return out;
        };
        return { rows: index.map((i) => state.rows[i]), k: pick(state.k), v: pick(state.v), P: state.P };
      },
    };
  }
}

// ---- the character LSTM ----------------------------------------------------------------------------------------
class CharLSTM extends CharModel {
  constructor(entry, graphs, limits = null) {
    super(entry, "the text", null, limits);
    this.graph = graphs.step;
    this.L = entry.layers;
    this.dh = entry.d_h;
    this.specials = entry.specials;
  }

  zeroState(B) { return { B, h: new Float32Array(this.L * B * this.dh), c: new Float32Array(this.L * B * this.dh) }; }

  // One step for B rows: x (B ids), state {B, h, c (L, B, d_h)} -> {logits: B rows, state, gates {f, g, i, o}}
  // (gates: false leaves them in the runtime).
  async step(x, state, { gates = true } = {}) {
    const { B, h, c } = state;
    const g = this.graph, dims = [this.L, B, this.dh];
    const out = await g.run({ x: new g.ort.Tensor("int64", BigInt64Array.from(x, BigInt), [B]),
      h_prev: g.floats(h, dims), c_prev: g.floats(c, dims) }, gates ? undefined : ["logits", "h", "c"]);
    return { logits: rowsAt(out.logits, B, 1, this.V, 0), state: { B, h: out.h, c: out.c },
      gates: { f: out.f, g: out.g, i: out.i, o: out.o } };
  }

  // The gates and states of every layer over one sequence, from the zero state: {T, logits (T, V), and f, g, i, o,
  // c, h each (L, T, d_h)}, what LSTMGates draws.
  async trace(ids) {
    checkIds(ids, this.V, null, "the text");
    const T = ids.length, L = this.L, dh = this.dh;
    const out = { T, L, dh, V: this.V, logits: new Float32Array(T * this.V) };
    for (const n of ["f", "g", "i", "o", "c", "h"]) out[n] = new Float32Array(L * T * dh);
    let state = this.zeroState(1);
    for (let t = 0; t < T; t++) {
      const s = await this.step([ids[t]], state);
      state = s.state;
      out.logits.set(s.logits[0], t * this.V);
      const parts = { ...s.gates, c: state.c, h: state.h };
      for (const [n, data] of Object.entries(parts)) {
        for (let l = 0; l < L; l++) out[n].set(data.subarray(l * dh, (l + 1) * dh), (l * T + t) * dh);
      }
    }
    return out;
  }

  // The decode.py stepper: the state is h and c of every row; a step reads each row's new ids one at a time.
  stepper() {
    const lstm = this;
    return {
      async step(rows, state) {
        let s = state || lstm.zeroState(rows.length), logits = null;
        for (let t = 0; t < rows[0].length; t++) {
          ({ logits, state: s } = await lstm.step(rows.map((r) => r[t]), s, { gates: false }));
        }
        return { logits, state: s };
      },
      reorderState(state, index) {
        const pick = (a) => {
          const out = new Float32Array(lstm.L * index.length * lstm.dh);
          for (let l = 0; l < lstm.L; l++) {
            index.forEach((i, b) => out.set(a.subarray((l * state.B + i) * lstm.dh, (l * state.B + i + 1) * lstm.dh),
              (l * index.length + b) * lstm.dh));
          }
          return out;
        };
        return { B: index.length, h: pick(state.h), c: pick(state.c) };
      },
    };
  }
}

// ---- the encoder-decoder (chapter 7's dates) -------------------------------------------------------------------
class EncoderDecoder {
  constructor(entry, graphs) {
    this.entry = entry;
    this.encoder = graphs.encoder;
    this.decoder = graphs.decoder;
    this.srcItos = entry.src_itos;
    this.tgtItos = entry.tgt_itos;
    this.srcStoi = vocabulary(entry.src_itos); // a typed character never matches a special such as <unk>
    this.V = entry.tgt_itos.length;
    this.maxLen = entry.max_len;
    this.L = entry.layers;
    this.H = entry.heads;
    this.d = entry.d_model;
    this.bos = entry.bos_id;
    this.eos = entry.eos_id;
    this.formats = Object.entries(entry.formats || {}).map(([name, re]) => [name, new RegExp(re)]);
    this.crop = cropOf(entry);
  }

  // A typed date -> source ids, cropped by the model's rule.
  encode(text, options = {}) {
    return encodeText(text, this.srcStoi, { what: "the date", ...this.crop, ...options });
  }

  // The name of the training format `text` has (seqviz.data.tasks.DATE_FORMATS), or null: a date written another
  // way still gets an answer, from a model that never saw that form.
  format(text) {
    const hit = this.formats.find(([, re]) => re.test(text));
    return hit ? hit[0] : null;
  }

  // What a widget says about a date in none of the training forms (null: it is in one); the kernel says the same
  // (seqviz.live.kernel.outside_formats_note).
  formatNote(text) {
    if (this.format(text) !== null) return null;
    return `\u201c${text}\u201d is in none of the ${this.formats.length} forms the model was trained on (such as ` +
      "\u201c3rd of March 1999\u201d or \u201c03-MAR-99\u201d): it still answers, but it never learnt this one";
  }

  text(ids) { return ids.filter((i) => i !== this.eos).map((i) => this.tgtItos[i]).join(""); }

  // src ids (S) -> {S, memory (S, d_model), attention (L, H, S, S)}
  async encodeSource(src) {
    checkIds(src, this.srcItos.length, this.maxLen, "the date");
    const out = await this.encoder.run({ src: this.encoder.ids([src]) });
    return { S: src.length, memory: out.memory, attention: out.attention };
  }

  // The decoder over B prefixes of equal length T (each starting with <s>) -> {T, logits (B, T, V), cross (B, L, H,
  // T, S), self (B, L, H, T, T)} (attention: false leaves the weights in the runtime).
  async decodePrefix(rows, enc, { attention = true } = {}) {
    const B = rows.length, T = rows[0].length, n = enc.S * this.d;
    if (T > this.maxLen) {
      throw new LiveInputError(`the decoder would read ${T} target tokens but its position table has ${this.maxLen}`);
    }
    const memory = new Float32Array(B * n);
    for (let b = 0; b < B; b++) memory.set(enc.memory, b * n);
    const out = await this.decoder.run({ tgt_in: this.decoder.ids(rows),
      memory: this.decoder.floats(memory, [B, enc.S, this.d]) }, attention ? undefined : ["logits"]);
    return { T, logits: out.logits, cross: out.cross_attention, self: out.self_attention };
  }

  // The decode.py stepper of one source (EncoderDecoderBinding): encoded on the first step; each step re-reads the
  // rows' prefixes.
  stepper(src) {
    const model = this;
    return {
      async step(rows, state) {
        const enc = state ? state.enc : await model.encodeSource(src);
        const prefixes = rows.map((r, b) => (state ? state.rows[b] : []).concat(r));
        const out = await model.decodePrefix(prefixes, enc, { attention: false });
        return { logits: rowsAt(out.logits, prefixes.length, out.T, model.V, out.T - 1),
          state: { enc, rows: prefixes } };
      },
      reorderState(state, index) { return { enc: state.enc, rows: index.map((i) => state.rows[i]) }; },
    };
  }

  // Greedy decoding (EncoderDecoderTransformer.greedy): {ids (ending with </s> where reached), text, cross (L, H,
  // T_out, S) of the output, T, S}.
  async greedy(src, { maxNew = this.maxLen } = {}) {
    const ids = await generate(this.stepper(src), [this.bos], maxNew, { greedy: true, stopId: this.eos });
    const enc = await this.encodeSource(src);
    const read = [this.bos].concat(ids.slice(0, -1));
    const out = await this.decodePrefix([read], enc);
    return { ids, text: this.text(ids), cross: out.cross, T: read.length, S: enc.S };
  }

  // Beam search with length normalisation (decode.beam_search on the model's binding): {hypotheses, trace}.
  beam(src, beamSize, { maxNew = this.maxLen, lengthPenalty = 0, trace = false, withGreedy = false } = {}) {
    checkIds(src, this.srcItos.length, this.maxLen, "the date");
    return beamSearch(this.stepper(src), [this.bos], beamSize, maxNew,
      { stopId: this.eos, lengthPenalty, trace, withGreedy });
  }
}

export { LiveInputError, configureLive, loadRuntime, loadManifest, loadModel, encodeText, checkLimit, checkFile,
  CharModel, CharLM, CharLSTM, EncoderDecoder, LIVE_FORMAT };
