// seqviz live mode, the view's half (issue 34). Python (`esm` in seqviz/widgets/_common.py) puts this file after
// _prelude.js in the modules of the widgets that can run one of the book's trained models on the reader's input
// (NextTokenDistribution, AttentionHeatmap, AttentionSteps, LSTMGates, BeamTree); the Python half is
// seqviz/widgets/_live.py.
//
// A widget made with `.live(model, text)` has a `live_spec` trait ({model, text, group, input, multiline, and the
// widget's options}); an empty one means no live mode and nothing here is drawn. The widget shows its recorded example
// as before, with one button under its title, "Run live on your own input". Nothing loads until the reader presses
// it. Then a field holding the recorded input opens, and every edit (debounced) runs the model where the widget is:
//   - "page": in a built book or slide deck (found by the vendor/seqviz-offline.js script every page loads), the
//     book's own onnxruntime-web and exported models (vendor/live/live.js), loaded once per page and shared by every
//     widget; the widget's `page` hook computes what it draws and the bar sets the traits, so the view redraws as it
//     does when Python sets them;
//   - "kernel": anywhere else (JupyterLab, Notebook, VS Code, Colab), the bar sends the input to the kernel as a custom
//     message; the widget's Python object runs the package's own model and sets the traits itself, and replies with
//     the notes to show.
// Widgets of one `group` in one notebook share their input: running one runs the others on the same text (in
// JupyterLab several notebooks share one page; a page of the built book is one notebook).
// Input problems (an empty input, characters outside the vocabulary, with a button that drops them) are shown under the
// field and the drawing keeps the last input that ran, which the status under the message names ("Still drawn: …");
// notes (cropped text, a date in no training form) beside it. Opening the bar selects the field's text, so typing
// replaces the example. Generated text ends the field (scrolled to it) and an output line under the controls shows the
// prompt's end and, marked, what the model wrote, until the reader's text is something else.
// The root's data-live ("off", "loading", "ready", "running", "error"), data-live-engine, data-live-text (the input
// drawn) and data-live-runs (runs finished) say where the bar is (the tests read them); root.svLive holds the last
// result the page's runtime computed (the floats the traits were made from).

const LIVE_GROUPS = globalThis.__seqvizLiveGroups2 || (globalThis.__seqvizLiveGroups2 = new Map());
// The element a live group is kept within: a JupyterLab / Notebook 7 notebook, else the page.
const LIVE_SCOPE = ".jp-Notebook";
const LIVE_DEBOUNCE_MS = 150;
const KERNEL_TIMEOUT_MS = 120000;
let liveCount = 0;

// The book's vendor/ folder (scripts/vendor_js.py), or null where the page is not a built book page.
function liveVendor() {
  const s = document.querySelector('script[src*="vendor/seqviz-offline.js"]');
  if (!s) return null;
  const u = new URL(s.src, document.baseURI);
  u.search = "";
  u.hash = "";
  return u.href.slice(0, u.href.lastIndexOf("/") + 1);
}

// The page's runtime module and the model `name`, loaded once per page (live.js keeps them on globalThis).
async function pageModel(name) {
  const vendor = liveVendor();
  const live = await import(`${vendor}live/live.js`);
  live.configureLive({ ort: `${vendor}onnxruntime-web/`, models: `${vendor}live/models/` });
  return { live, model: await live.loadModel(name) };
}

// A problem with the reader's input (or with running the model), as the bar shows it.
class LiveProblem extends Error {
  constructor(message, details) {
    super(message);
    this.details = details || {};
  }
}

// One request to the kernel's half (seqviz.widgets._live.LiveMode) and its reply.
function kernelRequest(model, request) {
  return new Promise((resolve, reject) => {
    const id = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    const done = () => { clearTimeout(timer); model.off("msg:custom", onReply); };
    const timer = setTimeout(() => {
      done();
      reject(new LiveProblem("no answer from the kernel in two minutes: run the notebook's cells (here the model " +
        "runs in the kernel) and try again"));
    }, KERNEL_TIMEOUT_MS);
    function onReply(msg) {
      if (!msg || msg.type !== "seqviz-live-reply" || msg.id !== id) return;
      done();
      if (msg.error) reject(new LiveProblem(msg.error, msg.details));
      else resolve(msg);
    }
    model.on("msg:custom", onReply);
    model.send({ type: "seqviz-live", id, ...request });
  });
}

// Float32 values as little-endian bytes (what the widgets' byte traits hold).
function f32Bytes(a) {
  const dv = new DataView(new ArrayBuffer(4 * a.length));
  for (let i = 0; i < a.length; i++) dv.setFloat32(4 * i, a[i], true);
  return dv;
}

// The nearest integer, ties to the even one (numpy's rint, which quantize_uint8 uses; Math.round takes ties up).
function roundHalfEven(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// Values in [lo, hi] as bytes 0..255 by seqviz.widgets._common.quantize_uint8's rule, step for step in float64:
// rint((clip(v, lo, hi) - lo) / (hi - lo) * 255), ties to even. The same values give the same bytes on both sides.
function quantized(a, lo, hi, out = new Uint8Array(a.length), at = 0) {
  for (let i = 0; i < a.length; i++) {
    out[at + i] = roundHalfEven((Math.min(hi, Math.max(lo, a[i])) - lo) / (hi - lo) * 255);
  }
  return out;
}

// A typed whole number brought into [lo, hi] (a live spec's `limits`, seqviz.live.limits: what the kernel and the
// page's runtime accept); what is not a number becomes lo.
function withinLimit(value, [lo, hi]) {
  const v = Math.floor(Number(value));
  return Number.isFinite(v) ? Math.max(lo, Math.min(hi, v)) : lo;
}

// The notebook a widget's element is in (LIVE_SCOPE), or the page; null while the element is not in the page yet.
function liveScope(el) {
  return (el.closest && el.closest(LIVE_SCOPE)) || (el.isConnected ? el.ownerDocument : null);
}

// Join the live group `name` (see LIVE_GROUPS): {peers() -> the other members in this widget's notebook, leave()}.
// `follow(text, delay)` is how the others make this widget run their text.
function joinGroup(name, el, follow) {
  const members = LIVE_GROUPS.get(name) || LIVE_GROUPS.set(name, new Set()).get(name);
  let scope = null;
  const member = {
    follow,
    scope: () => scope || (scope = liveScope(el)), // found once the view is in the page
    peers: () => {
      const mine = member.scope();
      return mine === null ? [] : [...members].filter((m) => m !== member && m.scope() === mine);
    },
    leave: () => { members.delete(member); if (!members.size) LIVE_GROUPS.delete(name); },
  };
  members.add(member);
  return member;
}

const quoted = (chars) => chars.map((c) => `\u201c${visible(c)}\u201d`).join(", ");

// The reader's text without the characters `unknown` (the bar's "Drop" button), joined as the reader would have typed
// it: a dropped character between two spaces leaves one space ("is \u2014 dark" -> "is dark", not "is  dark"), one at
// the start or end of a line leaves no space there, and a dropped space-like character (a no-break space, a tab)
// between two words keeps them apart with a space. The button is the view's, so the page and the kernel read the same
// text (the kernel only reads what the field sends).
function dropCharacters(text, unknown) {
  const chars = Array.from(text), out = [], gap = (c) => c === null || /\s/.test(c);
  for (let i = 0; i < chars.length;) {
    if (!unknown.includes(chars[i])) { out.push(chars[i++]); continue; }
    let j = i;
    while (j < chars.length && unknown.includes(chars[j])) j++;
    const before = out.length ? out[out.length - 1] : null, after = j < chars.length ? chars[j] : null;
    if (gap(before) && gap(after)) {
      if (after === " ") j++; // the space after it would double the one before (or start the line)
      else if (before === " ") out.pop(); // the space before it would end the line
    } else if (!gap(before) && !gap(after) && chars.slice(i, j).some((c) => /\s/.test(c))) {
      out.push(" ");
    }
    i = j;
  }
  return out.join("");
}

// A reader's input as a status line names it: newlines as \u23ce, at most `most` characters (its start and end).
function shortInput(text, most = 40) {
  const chars = Array.from(text.replace(/\n/g, "\u23ce"));
  if (chars.length <= most) return chars.join("");
  const head = Math.ceil((most - 1) / 2);
  return `${chars.slice(0, head).join("")}\u2026${chars.slice(chars.length - (most - 1 - head)).join("")}`;
}

// The bar under a widget's title. hooks: {page(live, m, text, request) -> {traits, view, notes, status, raw}: what the
// widget draws for `text`, computed in the page; request(): the view's choices a run sends (e.g. a layer);
// generate(live, m, text, options) -> new text (optional); controls(bar, row): the widget's own live controls;
// opened(): the panel has just opened}.
// Returns null without a live_spec, else {el, panel, field, isOpen(), run(), setText(text), generate(options),
// stop()}.
function liveBar(model, root, hooks) {
  const spec = model.get("live_spec") || {};
  if (!spec.model) return null;
  const n = ++liveCount;
  const el = h("div", "sv-live");
  const open = h("button", "sv-live-open", "Run live on your own input");
  open.type = "button";
  open.setAttribute("aria-expanded", "false");
  const panel = h("div", "sv-live-panel");
  panel.id = `sv-live-${n}-${Math.random().toString(36).slice(2, 8)}`;
  panel.hidden = true;
  open.setAttribute("aria-controls", panel.id);
  const field = h(spec.multiline ? "textarea" : "input", "sv-live-input");
  if (spec.multiline) field.rows = 2; else field.type = "text";
  field.spellcheck = false;
  field.autocomplete = "off";
  field.value = spec.text;
  const fieldLabel = h("label", "sv-live-field", `Your ${spec.input}`);
  fieldLabel.appendChild(field);
  const row = h("div", "sv-controls sv-live-controls");
  const runButton = h("button", "sv-live-run", "Run");
  runButton.type = "button";
  const reset = h("button", "sv-live-reset", "Recorded example");
  reset.type = "button";
  row.append(runButton, reset);
  const status = h("div", "sv-live-status");
  status.setAttribute("role", "status");
  const problem = h("div", "sv-live-problem");
  problem.setAttribute("role", "alert");
  problem.hidden = true;
  // what the model wrote (generate): the end of the reader's prompt, then the new text, marked as the model's
  const output = h("div", "sv-live-output");
  output.hidden = true;
  output.style.cssText = "margin: 0.3em 0; max-width: 40em;";
  panel.append(fieldLabel, row, problem, output, status);
  // the fields keep off the widget's right edge as the bar's rule keeps off its left
  panel.style.paddingRight = "0.6em";
  el.append(open, panel);

  const engine = liveVendor() ? "page" : "kernel";
  root.dataset.live = "off";
  root.dataset.liveEngine = engine;
  let loaded = null, timer = null, running = false, again = false, runs = 0;
  // the last run that drew: {text (null: the recorded example), lines (its status)}; what the model last wrote
  let drawn = { text: null, lines: [] }, wrote = null;
  const member = spec.group ? joinGroup(spec.group, root, (text, delay) => { show(); setText(text, false, delay); })
    : null;

  const setState = (state) => { root.dataset.live = state; };
  const say = (lines) => { status.textContent = lines.filter(Boolean).join("\n"); };

  function showProblem(err) {
    problem.replaceChildren(h("span", "", err.message));
    const unknown = (err.details && err.details.unknown) || [];
    if (unknown.length) {
      const drop = h("button", "sv-live-drop", `Drop ${quoted(unknown)}`);
      drop.type = "button";
      drop.addEventListener("click", () => {
        setText(dropCharacters(field.value, unknown), true);
        field.focus();
      });
      problem.appendChild(drop);
    }
    problem.hidden = false;
    // the drawing keeps the last input that ran: its status says whose it is
    say([`Still drawn: ${drawn.text === null ? "the recorded example"
      : `the last input that ran, \u201c${shortInput(drawn.text)}\u201d`}`, ...drawn.lines]);
  }

  // Show what the model wrote after `prompt` (`added`; how: "greedy" or "sampled"), or nothing (null).
  function showOutput(prompt, added, how) {
    wrote = added === null ? null : prompt + added;
    output.hidden = wrote === null;
    if (wrote === null) { output.replaceChildren(); return; }
    const tail = Array.from(prompt);
    const label = h("div", "sv-live-output-label",
      `The model wrote ${Array.from(added).length} characters (${how}):`);
    const text = h("div", "sv-live-output-text");
    text.style.cssText = "white-space: pre-wrap; overflow-wrap: anywhere; font-size: 13px; font-family: " +
      "var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace);";
    const before = h("span", "sv-live-output-prompt", (tail.length > 40 ? "\u2026" : "") + tail.slice(-40).join(""));
    before.style.color = "var(--sv-muted)";
    const mark = h("mark", "sv-live-new", added);
    // the model's characters on a tint of the bar's blue, in the text's own colour (readable light and dark)
    mark.style.cssText = "color: inherit; background: color-mix(in srgb, #3b528b 22%, transparent); " +
      "border-radius: 2px; box-decoration-break: clone; -webkit-box-decoration-break: clone;";
    text.append(before, mark);
    output.replaceChildren(label, text);
  }

  // What the page's runtime needs loaded: once per bar (the module and the model are shared by the whole page).
  function load() {
    if (!loaded) {
      setState("loading");
      say(["Loading the runtime (onnxruntime-web) and the model: once for this page\u2026"]);
      loaded = pageModel(spec.model).catch((err) => { loaded = null; throw err; });
    }
    return loaded;
  }

  async function runOnce(text) {
    if (engine === "kernel") {
      if (root.dataset.live === "off") say(["Asking the kernel to run the model\u2026"]);
      return kernelRequest(model, { action: "run", text, ...(hooks.request ? hooks.request() : {}) });
    }
    const { live, model: m } = await load();
    let out;
    try {
      out = await hooks.page(live, m, text, hooks.request ? hooks.request() : {});
    } catch (err) {
      if (err && err.name === "LiveInputError") throw new LiveProblem(err.message, err.details);
      throw err;
    }
    for (const [k, v] of Object.entries(out.traits)) model.set(k, v);
    for (const [k, v] of Object.entries(out.view || {})) model.set(k, v);
    root.svLive = out.raw;
    return out;
  }

  // Run the model on the field's text (one run at a time; edits made meanwhile run next).
  async function run() {
    clearTimeout(timer);
    if (running) { again = true; return; }
    running = true;
    const text = field.value;
    if (root.dataset.live !== "loading") setState("running");
    try {
      const out = await runOnce(text);
      problem.hidden = true;
      drawn = { text, lines: [out.status, ...(out.notes || [])] };
      say(drawn.lines);
      root.dataset.liveText = text;
      setState("ready");
    } catch (err) {
      showProblem(err instanceof LiveProblem ? err : new LiveProblem(`the model could not run: ${err.message}`));
      setState("error");
    } finally {
      running = false;
      root.dataset.liveRuns = String(++runs);
      if (again) { again = false; run(); }
    }
  }

  // Put `text` in the field and run it after `delay` ms (typing waits for a pause; a button runs at once); `share`:
  // the other widgets of the group follow.
  function setText(text, share, delay = 0) {
    if (field.value !== text) field.value = text;
    if (wrote !== null && text !== wrote) showOutput("", null); // the reader's text now, not the model's
    if (share && member) member.peers().forEach((m) => m.follow(text, delay));
    clearTimeout(timer);
    timer = setTimeout(run, delay);
  }

  function show() {
    if (!panel.hidden) return;
    panel.hidden = false;
    open.setAttribute("aria-expanded", "true");
    open.textContent = "Hide the live input";
    if (hooks.opened) hooks.opened();
  }

  // The button opens the bar (and runs the field's text, in every widget of the group) or folds it away again (the
  // drawing keeps what ran last).
  open.addEventListener("click", () => {
    if (!panel.hidden) {
      panel.hidden = true;
      open.setAttribute("aria-expanded", "false");
      open.textContent = "Run live on your own input";
      return;
    }
    show();
    field.focus();
    field.select(); // typing replaces the recorded example (the caret after it would append to it)
    setText(field.value, true);
  });
  field.addEventListener("input", () => setText(field.value, true, LIVE_DEBOUNCE_MS));
  field.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (!spec.multiline || ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      setText(field.value, true);
    }
  });
  runButton.addEventListener("click", () => setText(field.value, true));
  reset.addEventListener("click", () => setText(spec.text, true));

  const bar = {
    el, panel, field,
    isOpen: () => !panel.hidden,
    run: () => setText(field.value, true),
    setText: (text) => setText(text, true),
    // Generate from the field's text (hooks.generate in the page, the kernel's _live_generate), then run on it.
    async generate(options) {
      const prompt = field.value;
      try {
        let text;
        if (engine === "kernel") {
          text = (await kernelRequest(model, { action: "generate", text: prompt, ...options })).text;
        } else {
          const { live, model: m } = await load();
          text = await hooks.generate(live, m, prompt, options);
        }
        // the text is the prompt as read, then the model's characters
        const read = text.startsWith(prompt) ? prompt : "";
        setText(text, true);
        showOutput(read, text.slice(read.length), options.greedy ? "greedy" : "sampled");
        field.scrollTop = field.scrollHeight; // the box shows its end, where the new text is
      } catch (err) {
        showProblem(err instanceof LiveProblem ? err
          : err && err.name === "LiveInputError" ? new LiveProblem(err.message, err.details)
            : new LiveProblem(`the model could not run: ${err.message}`));
        setState("error");
      }
    },
    stop: () => { clearTimeout(timer); if (member) member.leave(); el.remove(); },
  };
  if (hooks.controls) hooks.controls(bar, row);
  return bar;
}

// The live bar of a widget, put after `anchor` (the title line), made again when Python changes live_spec:
// {current() -> the bar or null, reset(), stop()}.
function liveHost(model, root, anchor, hooks) {
  let bar = null;
  const reset = () => {
    if (bar) bar.stop();
    bar = liveBar(model, root, hooks);
    if (bar) anchor.after(bar.el);
    else delete root.dataset.live;
  };
  reset();
  return { current: () => bar, reset, stop: () => { if (bar) bar.stop(); } };
}
