"""The CUDA path: every model family, the shared trainer and decoder, the translator and the widgets' inputs give on a
GPU what they give on the CPU. Skipped where torch sees no CUDA GPU (CI and the book's machines have none: the CPU
path is what every other test file checks); on a GPU machine, ``python -m pytest tests/test_cuda.py``.

Tolerances: TF32 is switched off, so a GPU's float32 sums differ from the CPU's only in their order (about 1e-6
relative); a few optimizer steps let that grow, so trained losses are compared to 1e-3.
"""
import copy

import pytest
import torch

from seqviz import set_seed
from seqviz.data import lm_batches, pad_batch
from seqviz.decode import beam_search, generate
from seqviz.lstm import GRULM, LSTMLM, LSTMLMConfig
from seqviz.rnn import RNNLM, RNNLMConfig
from seqviz.seq2seq import Seq2Seq, Seq2SeqConfig, translate
from seqviz.train import TrainConfig, Trainer
from seqviz.transformer import EncoderDecoderConfig, EncoderDecoderTransformer, TransformerConfig, TransformerLM
from seqviz.window import WindowConfig, WindowLM

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA GPU (every other test file checks the CPU path)")

CUDA = torch.device("cuda")
V = 23


@pytest.fixture(autouse=True)
def _no_tf32():
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _lm(kind: str):
    set_seed(0)
    return {"window": lambda: WindowLM(WindowConfig(V, context=3, d_emb=5, d_h=7)),
            "elman-scratch": lambda: RNNLM(RNNLMConfig.tiny(V, impl="scratch")),
            "elman-fused": lambda: RNNLM(RNNLMConfig.tiny(V, impl="fused")),
            "lstm-scratch": lambda: LSTMLM(LSTMLMConfig(V, d_emb=16, d_h=16, num_layers=2, impl="scratch")),
            "lstm-fused": lambda: LSTMLM(LSTMLMConfig(V, d_emb=16, d_h=16, num_layers=2, impl="fused")),
            "gru-fused": lambda: GRULM(LSTMLMConfig(V, d_emb=16, d_h=16, impl="fused")),
            "transformer": lambda: TransformerLM(TransformerConfig.tiny(V))}[kind]()


def _inputs(kind: str):
    g = torch.Generator().manual_seed(1)
    if kind == "window":
        return torch.randint(V, (8, 3), generator=g), torch.randint(V, (8,), generator=g)
    return torch.randint(V, (4, 12), generator=g), torch.randint(V, (4, 12), generator=g)


@pytest.mark.parametrize("kind", ["window", "elman-scratch", "elman-fused", "lstm-scratch", "lstm-fused",
                                  "gru-fused", "transformer"])
def test_every_language_model_gives_the_same_logits_loss_and_gradients_on_the_gpu(kind):
    cpu = _lm(kind)
    gpu = copy.deepcopy(cpu).to(CUDA)
    x, y = _inputs(kind)
    (lc, loss_c), (lg, loss_g) = cpu(x, y)[:2], gpu(x.to(CUDA), y.to(CUDA))[:2]
    assert lg.device.type == "cuda"
    torch.testing.assert_close(lg.cpu(), lc, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(loss_g.cpu(), loss_c, atol=1e-5, rtol=1e-5)
    loss_c.backward()
    loss_g.backward()
    for (name, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters()):
        torch.testing.assert_close(pg.grad.cpu(), pc.grad, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("kind", ["elman-fused", "lstm-scratch", "transformer"])
def test_greedy_and_beam_decoding_choose_the_same_tokens_on_the_gpu(kind):
    cpu = _lm(kind).eval()
    gpu = copy.deepcopy(cpu).to(CUDA)
    prompt = [3, 5, 7]
    assert generate(gpu, prompt, 15, greedy=True) == generate(cpu, prompt, 15, greedy=True)
    (ids_c, score_c), (ids_g, score_g) = beam_search(cpu, prompt, 3, 10)[0], beam_search(gpu, prompt, 3, 10)[0]
    assert ids_g == ids_c and score_g == pytest.approx(score_c, abs=1e-4)


def test_the_trainer_trains_on_the_gpu_as_on_the_cpu():
    """``TrainConfig(device="cuda")`` trains a CPU model on the GPU (the model and every batch moved) and brings it
    back to the CPU at the end; the losses follow the CPU run's."""
    ids = (torch.arange(2_000) * 5) % V                          # a cycle: learnable, so the loss must fall
    train, valid = lm_batches(ids[:1_600], 8, 16), lm_batches(ids[1_600:], 8, 16)
    runs = {}
    for device in ("cpu", "cuda"):
        model = _lm("lstm-fused")
        hist = Trainer(model, TrainConfig(epochs=2, lr=3e-3, progress=False, device=device), train, valid).fit()
        assert next(model.parameters()).device.type == "cpu"                # back where it was
        runs[device] = hist
    assert runs["cuda"].step_loss == pytest.approx(runs["cpu"].step_loss, abs=1e-3)
    assert runs["cuda"].valid_loss == pytest.approx(runs["cpu"].valid_loss, abs=1e-3)
    assert runs["cuda"].step_loss[-1] < runs["cuda"].step_loss[0]


def test_both_encoder_decoders_train_and_translate_on_the_gpu():
    from types import SimpleNamespace

    from seqviz.data import Vocab

    src = [[5, 6, 7, 8, 9], [4, 5, 6], [7, 7], [9, 8, 7, 6]]
    x, mask = pad_batch(src, 0)
    y = torch.tensor([[4, 5, 6, 3], [7, 3, -100, -100], [8, 8, 8, 3], [5, 4, 3, -100]])
    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(4, 12)])
    task = SimpleNamespace(test_src=src, src_vocab=vocab, tgt_vocab=vocab)
    set_seed(0)
    models = [Seq2Seq(Seq2SeqConfig(12, 12, d_emb=6, d_h=8, attention="general")),
              EncoderDecoderTransformer(EncoderDecoderConfig(12, 12, bos_id=2, pad_id=0, eos_id=3, max_len=32,
                                                             d_model=16, num_heads=2, num_layers=1, d_ff=32))]
    for cpu in models:
        gpu = copy.deepcopy(cpu).to(CUDA)
        for m, dev in ((cpu, torch.device("cpu")), (gpu, CUDA)):
            opt = torch.optim.Adam(m.parameters(), lr=1e-2)
            for _ in range(20):
                loss = m(x.to(dev), y.to(dev), mask.to(dev))[1]
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            assert float(gpu(x.to(CUDA), y.to(CUDA), mask.to(CUDA))[1]) == pytest.approx(
                float(cpu(x, y, mask)[1]), abs=1e-3)
        for beam in (1, 3):
            assert translate(gpu, task, beam) == translate(cpu, task, beam), (type(cpu).__name__, beam)


def test_the_translator_builds_on_the_gpu(tmp_path):
    """The path ``make translator DEVICE=cuda`` takes: stage 1 on the GPU, the float16 round trip measured there, a
    checkpoint that loads on the CPU with the recorded loss; stage 2 on the GPU; the loaded model translates on the
    GPU as on the CPU."""
    from seqviz.data import Corpus, SentencePair
    from seqviz.transformer.translator import (FinetuneRecipe, TranslationRecipe, build_translator,
                                               finetune_translator, load_translator, translation_data)

    pairs = [("Ich habe keine Zeit.", "I have no time."), ("Das ist gut.", "That is good."),
             ("Wir gehen nach Hause.", "We are going home."), ("Er ist nicht hier.", "He is not here.")] * 3
    train = tuple(SentencePair(d, e) for d, e in pairs)
    corpus = Corpus("tiny", train, train[:2], train[2:4], "", "")
    recipe = TranslationRecipe(num_layers=1, d_model=16, num_heads=2, d_ff=32, merges=20, phrases=False, ddtp=False,
                               epochs=5, sentence_repeats=1, batch_size=4, warmup=2, lr=1e-2, dropout=0.0)
    data = translation_data(recipe, corpus)
    digest, info = build_translator(recipe, progress=False, path=tmp_path / "t.pt", device="cuda", data=data)
    assert info["device"] == "cuda" and info["epochs"][-1]["valid_loss"] < info["epochs"][0]["valid_loss"]
    tr = load_translator(tmp_path / "t.pt", sha256=digest)                # on the CPU, float16 weights back
    assert tr.slice_loss(corpus) == pytest.approx(info["slice_loss"], abs=1e-4)
    sentences = ["Ich habe keine Zeit.", "Das ist gut."]
    on_cpu = tr.translate(sentences, beam_size=2)
    tr.model.to(CUDA)
    assert tr.translate(sentences, beam_size=2) == on_cpu
    record = finetune_translator(tr, FinetuneRecipe(epochs=2, batch_size=2, warmup=1, lr=1e-3), corpus=corpus,
                                 progress=False, device="cuda")
    assert record["device"].startswith("cuda") and next(tr.model.parameters()).device.type == "cuda"


def _state(widget) -> dict:
    return {k: (bytes(v) if isinstance(v, memoryview) else v) for k, v in widget.get_state().items()
            if not k.startswith("_") and k != "layout"}


def test_widgets_take_gpu_tensors_and_show_what_they_show_for_cpu_ones():
    pytest.importorskip("anywidget", reason="the widgets' packages are not installed here")
    from seqviz.lstm import LSTM
    from seqviz.widgets import AttentionHeatmap, LSTMGates

    w = torch.softmax(torch.randn(4, 4, device=CUDA), -1)
    assert _state(AttentionHeatmap(w, list("abcd"), list("abcd"))) == _state(
        AttentionHeatmap(w.cpu(), list("abcd"), list("abcd")))
    set_seed(0)
    layer = LSTM(3, 5).to(CUDA)
    _, _, traces = layer.trace(torch.randn(1, 6, 3, device=CUDA))
    gpu_trace = traces[0][0]
    cpu_trace = type(gpu_trace)(**{k: v.cpu() for k, v in vars(gpu_trace).items()})
    assert _state(LSTMGates(gpu_trace, list("abcdef"))) == _state(LSTMGates(cpu_trace, list("abcdef")))
