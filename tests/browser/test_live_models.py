"""The live runtime in the built book, headless Chromium: the module the live widgets load (vendor/live/live.js)
and onnxruntime-web come from the book's own vendor/ folder, offline, and on fixed inputs the page's logits,
attention, q/k/v, LSTM gates and states and cross-attention equal PyTorch's on the same checkpoint (max abs difference
<= 1e-4); its greedy and beam outputs equal seqviz.decode's on five prompts per model; seeded sampling repeats; bad
input gets a clear error. Every page makes zero requests that leave the machine and logs zero console errors.

The page is the built Visual tools page, whose "Try the models" widgets use this same module (the same URL, so the
same instance and the same loaded models); the tests call its API directly, for every model, including the LSTM's
decoding, which no widget offers. test_live_widgets.py drives the widgets themselves.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from svbrowser import ROOT, PageLog, block_external, is_loopback

_spec = importlib.util.spec_from_file_location("vendor_js", ROOT / "scripts" / "vendor_js.py")
vendor_js = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vendor_js)

TOL = 1e-4
PAGE = "book/visual_tools.html"
PROMPT = "ROMEO.\nBut, soft! what light through yonder window breaks?\nIt is the east"   # 73 characters
LM_PROMPTS = ["ROMEO.\n", "First Citizen:\nBefore we proceed", "KING HENRY:\n", "O, ", "To be, or not to be"]
DATES = ["3rd of March 1999", "March 3, 1999", "03-MAR-99", "Wednesday the 3rd of March 1999", "12/25/2031"]

@pytest.fixture(scope="module")
def live_url(site):
    return site + PAGE


def open_live(browser, url):
    """(page, log): the built page with every request leaving loopback blocked and recorded, console errors kept,
    and the live runtime imported as the widgets import it (window.live)."""
    ctx = browser.new_context(service_workers="block")
    log = PageLog()
    block_external(ctx, log.external)
    page = ctx.new_page()
    page.on("console", lambda m: log.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: log.errors.append(f"uncaught: {e}"))
    page.on("request", lambda r: log.requests.append(r.url))
    page.goto(url, wait_until="load")
    page.evaluate(vendor_js.LIVE_IMPORT_JS)
    return page, log


@pytest.fixture(scope="module")
def live(browser, live_url):
    """call(js, arg) runs an async function of (live, arg) in one shared page and checks the page stayed clean."""
    page, log = open_live(browser, live_url)

    def call(js: str, arg=None):
        out = page.evaluate(f"async (arg) => {{ const f = {js}; return await f(window.live, arg); }}", arg)
        assert not log.errors, log.errors
        assert not log.external, f"requests left the machine: {log.external}"
        return out

    call.log = log
    yield call
    page.context.close()


def close(got, want, what):
    got = np.asarray(got, dtype=np.float32)
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    got = got.reshape(want.shape)
    diff = float(np.abs(got - want).max())
    assert diff <= TOL, f"{what}: max |page - PyTorch| = {diff:.2e} > {TOL}"
    return diff


@pytest.fixture(scope="module")
def char_lm():
    from seqviz.transformer import load_char_lm

    model, itos, _ = load_char_lm()
    return model, {c: i for i, c in enumerate(itos)}


@pytest.fixture(scope="module")
def char_lstm():
    from seqviz.char_lstm import load_char_lstm

    model, vocab, _ = load_char_lstm()
    return model, vocab


@pytest.fixture(scope="module")
def dates():
    from seqviz.transformer.pretrained import load_checkpoint

    model, vocab, _ = load_checkpoint("dates_transformer")
    return model, {c: i for i, c in enumerate(vocab["src"])}, vocab["tgt"]


# -- the character transformer LM ----------------------------------------------------------------------------------
LM_FORWARD = """async (live, text) => {
  const m = await live.loadModel("char_lm");
  const e = m.encode(text);
  const f = await m.forward(e.ids);
  return { ids: e.ids, notes: e.notes, T: f.T, logits: Array.from(f.logits), attention: Array.from(f.attention),
           q: Array.from(f.q), k: Array.from(f.k), v: Array.from(f.v), next: Array.from(f.next) };
}"""


@pytest.mark.parametrize("T", [64, 9])
def test_char_lm_logits_attention_and_qkv_equal_pytorch(live, char_lm, T):
    from seqviz.transformer.inspect import queries_keys_values

    model, stoi = char_lm
    got = live(LM_FORWARD, PROMPT[-T:])
    ids = torch.tensor([[stoi[c] for c in PROMPT[-T:]]])
    assert got["ids"] == ids[0].tolist() and got["T"] == T and got["notes"] == []
    with torch.no_grad():
        logits, _, attn = model(ids, return_attention=True)                       # (1, T, V), (1, L, H, T, T)
    close(got["logits"], logits[0], "logits")
    close(got["next"], logits[0, -1], "next-character logits")
    close(got["attention"], attn[0], "attention")
    qkv = queries_keys_values(model, ids[0])
    for name in "qkv":
        close(got[name], getattr(qkv, name), name)


def test_char_lm_crops_a_long_prompt_to_its_context_and_says_so(live, char_lm):
    got = live(LM_FORWARD, PROMPT)                                                # 73 characters, context 64
    assert got["T"] == 64 and got["notes"] == ["cropped to its last 64 characters (the model reads at most 64); "
                                               "9 left out"]
    assert got["ids"] == [char_lm[1][c] for c in PROMPT[-64:]]


LM_DECODE = """async (live, {name, prompts, n, k, suppress, seed}) => {
  const m = await live.loadModel(name);
  const out = [];
  for (const p of prompts) {
    const ids = m.encode(p).ids;
    const greedy = await m.generate(ids, n, { greedy: true, suppressIds: suppress });
    const beam = (await m.beam(ids, k, 15, { suppressIds: suppress })).hypotheses;
    const s1 = await m.generate(ids, n, { temperature: 0.8, topK: 10, seed, suppressIds: suppress });
    const s2 = await m.generate(ids, n, { temperature: 0.8, topK: 10, seed, suppressIds: suppress });
    const s3 = await m.generate(ids, n, { temperature: 0.8, topK: 10, seed: seed + 1, suppressIds: suppress });
    out.push({ ids, greedy, beam, s1, s2, s3 });
  }
  return out;
}"""


def check_decoding(got, model, encode, suppress=()):
    """The page's greedy and beam outputs equal seqviz.decode's for each prompt; seeded sampling repeats."""
    from seqviz.decode import beam_search, generate

    differ = 0
    for prompt, g in got.items():
        ids = encode(prompt)
        assert g["ids"] == ids, prompt
        assert g["greedy"] == generate(model, ids, 40, greedy=True, suppress_ids=suppress), prompt
        want = beam_search(model, ids, 3, 15, suppress_ids=suppress)
        assert [h[0] for h in g["beam"]] == [h[0] for h in want], prompt
        close([h[1] for h in g["beam"]], np.array([h[1] for h in want], np.float32), f"beam log-probs of {prompt!r}")
        assert g["s1"] == g["s2"] and len(g["s1"]) == 40 and not set(g["s1"]) & set(suppress), prompt
        differ += g["s1"] != g["s3"]
    assert differ >= 3                                                            # another seed, other draws


def test_char_lm_greedy_beam_and_seeded_sampling(live, char_lm):
    model, stoi = char_lm
    got = live(LM_DECODE, {"name": "char_lm", "prompts": LM_PROMPTS, "n": 40, "k": 3, "suppress": [], "seed": 7})
    check_decoding(dict(zip(LM_PROMPTS, got)), model, lambda p: [stoi[c] for c in p])


# -- the character LSTM --------------------------------------------------------------------------------------------
def test_char_lstm_gates_states_and_logits_equal_pytorch(live, char_lstm):
    model, vocab = char_lstm
    got = live("""async (live, text) => {
      const m = await live.loadModel("char_lstm");
      const t = await m.trace(m.encode(text).ids);
      const out = { T: t.T };
      for (const n of ["logits", "f", "g", "i", "o", "c", "h"]) out[n] = Array.from(t[n]);
      return out;
    }""", PROMPT[:40])
    ids = torch.tensor([vocab.encode(list(PROMPT[:40]))])                       # (1, 40)
    with torch.no_grad():
        logits, _ = model(ids)
    traces = model.trace(ids)                                                     # L x LSTMTrace (1, T, d_h)
    close(got["logits"], logits[0], "logits")
    for g in "fgioch":
        close(got[g], torch.stack([getattr(tr, g)[0] for tr in traces]), f"{g} of every layer")   # (L, T, d_h)


def test_char_lstm_greedy_beam_and_seeded_sampling(live, char_lstm):
    model, vocab = char_lstm
    specials = [vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id]           # as chapter 4 generates
    got = live(LM_DECODE, {"name": "char_lstm", "prompts": LM_PROMPTS, "n": 40, "k": 3, "suppress": specials,
                           "seed": 7})
    check_decoding(dict(zip(LM_PROMPTS, got)), model, lambda p: vocab.encode(list(p)), specials)


# -- the dates encoder-decoder -------------------------------------------------------------------------------------
def test_dates_memory_logits_and_cross_attention_equal_pytorch(live, dates):
    model, src_stoi, _ = dates
    text = DATES[3]
    tgt_in = [model.config.bos_id] + [4 + i % 10 for i in range(9)]              # <s> then 9 digits
    got = live("""async (live, {text, tgt}) => {
      const m = await live.loadModel("dates");
      const enc = await m.encodeSource(m.encode(text).ids);
      const dec = await m.decodePrefix([tgt], enc);
      return { memory: Array.from(enc.memory), attention: Array.from(enc.attention), logits: Array.from(dec.logits),
               cross: Array.from(dec.cross), self: Array.from(dec.self) };
    }""", {"text": text, "tgt": tgt_in})
    src = torch.tensor([[src_stoi[c] for c in text]])
    with torch.no_grad():
        memory, enc_w = model.encode(src, need_weights=True)
        logits, _, w = model(src, tgt_in=torch.tensor([tgt_in]), return_attention=True)
    close(got["memory"], memory[0], "memory")
    close(got["attention"], enc_w[0], "encoder self-attention")
    close(got["logits"], logits[0], "decoder logits")
    close(got["cross"], w["cross"][0], "cross-attention")
    close(got["self"], w["decoder"][0], "decoder self-attention")


def test_dates_greedy_and_beam_equal_seqviz_decode(live, dates):
    from seqviz.decode import BeamTrace, beam_search

    model, src_stoi, tgt_itos = dates
    c = model.config
    got = live("""async (live, dates) => {
      const m = await live.loadModel("dates");
      const out = [];
      for (const text of dates) {
        const src = m.encode(text).ids;
        const g = await m.greedy(src);
        const b = await m.beam(src, 5, { lengthPenalty: 0.6, trace: true, withGreedy: true });
        out.push({ src, ids: g.ids, text: g.text, cross: Array.from(g.cross), T: g.T, S: g.S, format: m.format(text),
                   hypotheses: b.hypotheses, trace: b.trace });
      }
      return out;
    }""", DATES)
    for text, g in zip(DATES, got):
        src = torch.tensor([[src_stoi[ch] for ch in text]])
        assert g["src"] == src[0].tolist()
        ids, cross = model.greedy(src, return_attention=True)                    # cross (1, L, H, T_out, S)
        assert g["ids"] == ids[0], text
        assert g["text"] == "".join(tgt_itos[t] for t in ids[0] if t != c.eos_id)
        close(g["cross"], cross[0], f"cross-attention of the greedy output for {text!r}")
        want, trace = beam_search(model.bind(src), [c.bos_id], 5, c.max_len, stop_id=c.eos_id, length_penalty=0.6,
                                  trace=True, with_greedy=True)
        assert [h[0] for h in g["hypotheses"]] == [h[0] for h in want], text
        page_trace, want_trace = BeamTrace.from_dict(g["trace"]), trace
        assert [[(x.parent, x.token, x.status) for x in step] for step in page_trace.steps] == \
            [[(x.parent, x.token, x.status) for x in step] for step in want_trace.steps], text
        close([x.logprob for step in page_trace.steps for x in step],
              np.array([x.logprob for step in want_trace.steps for x in step], np.float32), "beam trace log-probs")
        assert [t for t, _ in page_trace.greedy] == [t for t, _ in want_trace.greedy]
    assert [g["format"] for g in got] == ["dth_of_month_y", "month_d_y", "dd_mon_yy", "weekday_the_dth_of_month_y",
                                          "us_slash"]


# -- bad input -----------------------------------------------------------------------------------------------------
def test_bad_input_gets_a_clear_error_and_the_page_keeps_working(live):
    got = live("""async (live) => {
      const lm = await live.loadModel("char_lm"), dates = await live.loadModel("dates");
      const err = (f) => { try { f(); return null; } catch (e) { return { name: e.name, message: e.message,
                                                                          details: e.details }; } };
      return {
        unknown: err(() => lm.encode("naïve — café")),
        dropped: lm.encode("naïve café", { drop: true }),
        empty: err(() => lm.encode("")),
        onlyUnknown: err(() => lm.encode("ïé", { drop: true })),
        forwardEmpty: await lm.forward([]).then(() => null, (e) => e.message),
        forwardLong: await lm.forward(new Array(65).fill(1)).then(() => null, (e) => e.message),
        dateUnknown: err(() => dates.encode("3 März 1999")),
        iso: dates.format("2031-12-25"),
        after: (await lm.forward(lm.encode("O, ").ids)).T,
      };
    }""")
    assert got["unknown"]["name"] == "LiveInputError"
    assert got["unknown"]["message"] == ('the model does not know the characters "ï", "—", "é" (not in its '
                                         'vocabulary): drop them or replace them')
    assert got["unknown"]["details"]["unknown"] == ["ï", "—", "é"]
    assert got["dropped"]["chars"] == list("nave caf") and got["dropped"]["dropped"] == ["ï", "é"]
    assert got["dropped"]["notes"] == ['left out "ï", "é": not in the model\'s vocabulary']
    assert got["empty"]["message"] == "the prompt is empty: type at least one character"
    assert got["onlyUnknown"]["message"] == "the prompt has no character the model knows"
    assert got["forwardEmpty"] == "the prompt is empty: give at least one token"
    assert got["forwardLong"] == "the prompt has 65 tokens, more than the model reads (64): crop it"
    assert got["dateUnknown"]["message"].startswith('the model does not know the characters "ä", "z" ')
    assert got["iso"] is None                                                     # not a form the model trained on
    assert got["after"] == 3                                                      # and the page still works


def test_each_model_loads_once_and_is_shared(live):
    log = live.log
    got = live("""async (live) => {
      const [a, b, c, d] = await Promise.all(["char_lm", "char_lm", "char_lstm", "dates"].map(live.loadModel));
      return [a === b && a === await live.loadModel("char_lm"), a.constructor.name, c.constructor.name,
              d.constructor.name];
    }""")
    assert got == [True, "CharLM", "CharLSTM", "EncoderDecoder"]
    fetched = [u for u in log.requests if u.endswith(".onnx") or u.endswith(".wasm")]
    assert len(fetched) == len(set(fetched)), fetched                             # nothing fetched twice
    assert all(is_loopback(u) for u in log.requests) and not log.external


def test_the_runtime_runs_from_a_url_per_file_where_no_folder_is_served(browser, live_url, live):
    """As where the page gets each file as bytes (JupyterLab): every file handed over as a blob: URL, no folder."""
    want = live("""async (live) => {
      const m = await live.loadModel("dates");
      return (await m.greedy(m.encode("03-MAR-99").ids)).ids;
    }""")
    page, log = open_live(browser, live_url)
    try:
        got = page.evaluate("""async () => {
          const blob = async (path) => URL.createObjectURL(await (await fetch(path)).blob());
          const v = window.vendorUrl;
          const manifest = await (await fetch(v + "live/models/manifest.json")).json();
          const files = { "manifest.json": await blob(v + "live/models/manifest.json") };
          for (const f of Object.values(manifest.models.dates.files)) {
            files[f.file] = await blob(v + "live/models/" + f.file);
          }
          for (const f of ["ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]) {
            files[f] = await blob(v + "onnxruntime-web/" + f);
          }
          delete globalThis.__seqvizLive1;         // a page that never configured the runtime (nothing loaded yet)
          const fresh = await import(await blob(v + "live/live.js"));
          let refused = null;
          try { fresh.configureLive({}); } catch (e) { refused = e.message; }
          fresh.configureLive({ files });
          const m = await fresh.loadModel("dates");
          return { refused, ids: (await m.greedy(m.encode("03-MAR-99").ids)).ids };
        }""")
        assert got["ids"] == want and not log.errors and not log.external
        assert got["refused"] == ("configureLive needs the folders {ort, models} of onnxruntime-web and of the "
                                  "export, or files: {name: URL}; nothing says where ort.wasm.min.mjs, "
                                  "ort-wasm-simd-threaded.mjs, ort-wasm-simd-threaded.wasm, manifest.json is")
    finally:
        page.context.close()


def test_sampling_repeats_on_a_fresh_page(browser, live_url, live):
    run = """async (live) => {
      const m = await live.loadModel("char_lm");
      return m.generate(m.encode("ROMEO.\\n").ids, 30, { temperature: 1.0, seed: 3 });
    }"""
    first = live(run)
    page, log = open_live(browser, live_url)
    try:
        again = page.evaluate(f"async () => await ({run})(window.live)")
        assert again == first and not log.errors and not log.external
    finally:
        page.context.close()
