"""The shipped translator's data (dictionary phrase pairs, Debian's DDTP) and its recipe, save and load (issue 22)."""
from __future__ import annotations

import pytest
import torch

from seqviz.data import Corpus, CorpusUnavailableError, SentencePair
from seqviz.data.parallel import ddtp_pairs, dictionary_phrase_pairs, held_out_sources, load_ddtp_de_en

LINES = [
    "# a comment :: ignored\n",
    "Leidenschaft {f} | Leidenschaften {pl} | eine Leidenschaft für etw. haben :: passion | passions | "
    "to have a passion for sth.\n",
    "blank; pur {adj} | die reine Wahrheit | Das ist blanker Unsinn. :: sheer; pure | the plain truth | "
    "That is sheer nonsense.\n",
    "Lüftungsgerät {n} :: air handling unit /AHU/\n",
    "sehr gut | gut :: very well\n",                                     # segment counts differ: skipped
]


def test_dictionary_phrase_pairs_pair_segments_and_alternatives_without_annotations():
    pairs = {(p.source, p.target) for p in dictionary_phrase_pairs(LINES)}
    assert ("eine Leidenschaft für etw. haben", "to have a passion for sth.") in pairs
    assert ("die reine Wahrheit", "the plain truth") in pairs
    assert ("Lüftungsgerät", "air handling unit") in pairs               # {n} and /AHU/ removed
    assert ("Leidenschaft", "passion") not in pairs                      # one English word: below min_words
    assert not any("sehr" in d for d, _ in pairs)
    assert all("{" not in d + e and "/" not in d + e for d, e in pairs)


def test_a_line_that_holds_a_held_out_sentence_is_left_out_whole():
    pairs = dictionary_phrase_pairs(LINES, held_out=["Das ist blanker Unsinn."])
    assert not any(p.target == "the plain truth" for p in pairs)          # the whole line, not just the sentence
    assert any(p.target == "to have a passion for sth." for p in pairs)
    corpus = Corpus("t", (), (SentencePair("A b c.", "A b c."),), (SentencePair("D e f.", "D e f."),), "", "")
    assert held_out_sources(corpus) == {"A b c.", "D e f."}


DE = """Package: foo
Description-md5: 1
Description-de: Ein Werkzeug für Dateien
 Foo liest Dateien schnell. Es schreibt sie auch.
 .
 Dieses Paket enthält das Programm.

Package: bar
Description-md5: 2
Description-de: Nur deutsch vorhanden hier
"""
EN = """Package: foo
Description-md5: 1
Description-en: A tool for files
 Foo reads files quickly. It writes them too.
 .
 This package contains the program.

Package: foo
Description-md5: 9
Description-en: another version of foo here
"""


def test_ddtp_pairs_match_descriptions_paragraphs_and_sentences():
    pairs = {(p.source, p.target) for p in ddtp_pairs(DE, EN)}
    assert pairs == {("Ein Werkzeug für Dateien", "A tool for files"),
                     ("Foo liest Dateien schnell.", "Foo reads files quickly."),
                     ("Es schreibt sie auch.", "It writes them too."),
                     ("Dieses Paket enthält das Programm.", "This package contains the program.")}


def test_missing_ddtp_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_DATA_DIR", str(tmp_path))
    load_ddtp_de_en.cache_clear()
    try:
        with pytest.raises(CorpusUnavailableError, match="make ddtp"):
            load_ddtp_de_en()
    finally:
        load_ddtp_de_en.cache_clear()


SENTENCES = [("Ich habe keine Zeit.", "I have no time."), ("Das ist gut.", "That is good."),
             ("Wir essen zu Abend.", "We have dinner."), ("Er kommt morgen.", "He is coming tomorrow."),
             ("Sie liest ein Buch.", "She is reading a book."), ("Das Wetter ist schön.", "The weather is nice.")]


def _tiny_corpus():
    train = tuple(SentencePair(d, e) for d, e in SENTENCES)
    return Corpus("tiny", train, train[:2], train[2:4], "", "")


def test_a_translator_round_trips_and_refuses_a_wrong_hash(tmp_path):
    from seqviz.transformer.pretrained import _round_trip, save_checkpoint
    from seqviz.transformer.translator import (NAME, TranslationRecipe, _vocab_record, load_translator,
                                               train_translator, translation_data)

    recipe = TranslationRecipe(num_layers=1, d_model=16, num_heads=2, d_ff=32, merges=20, phrases=False, ddtp=False,
                               epochs=30, sentence_repeats=1, batch_size=4, warmup=5, lr=1e-2, dropout=0.0)
    data = translation_data(recipe, _tiny_corpus())
    model, task, bpe, info = train_translator(recipe, data, progress=False)
    assert [e["epoch"] for e in info["epochs"]] == list(range(1, 31)) and info["data"]["test_pairs"] == 2
    # the time is recorded, not judged: a fast machine fine-tunes this in under 0.05 s, which rounds to 0.0
    assert info["device"] == "cpu" and info["wall_seconds"] == info["epochs"][-1]["wall_seconds"]
    assert all(isinstance(e[k], float) and e[k] >= 0 for e in info["epochs"] for k in ("cpu_seconds", "wall_seconds"))
    assert info["epochs"][-1]["valid_loss"] < info["epochs"][0]["valid_loss"]
    path = tmp_path / f"{NAME}.pt"
    digest = save_checkpoint(model, NAME, _vocab_record(task, bpe), info, path)
    loaded = load_translator(path, sha256=digest)
    again = _round_trip(model, NAME, _vocab_record(task, bpe), info)
    x = torch.tensor([task.test_src[0]])
    assert loaded.model.greedy(x) == again.greedy(x)
    b = next(iter(task.valid))                                    # the slice the build records: the first batch
    with torch.no_grad():
        want = float(torch.nn.functional.cross_entropy(again(b.x, b.y, mask=b.mask)[0].flatten(0, 1), b.y.flatten(),
                                                       ignore_index=-100))
    assert loaded.slice_loss(_tiny_corpus()) == pytest.approx(want, abs=1e-5)
    assert [p.source for p in loaded.held_out("test", _tiny_corpus())] == [d for d, _ in SENTENCES[2:4]]
    out = loaded.translate(["Ich habe keine Zeit.", "Das ist gut."], beam_size=2)
    assert len(out) == 2 and all(isinstance(o, str) for o in out)
    assert loaded.translate("Das ist gut.", beam_size=1) == loaded.translate(["Das ist gut."], beam_size=1)[0]
    from seqviz.transformer.translator import FinetuneRecipe, finetune_translator
    before = loaded.slice_loss(_tiny_corpus())
    with pytest.raises(ValueError, match="device must be a torch device"):       # before any work is done
        finetune_translator(loaded, corpus=_tiny_corpus(), progress=False, device="nowhere")
    record = finetune_translator(loaded, FinetuneRecipe(epochs=3, batch_size=2, warmup=1, lr=1e-3),
                                 corpus=_tiny_corpus(), progress=False, device="cpu")
    assert record["device"] == "cpu" and isinstance(record["wall_seconds"], float) and record["wall_seconds"] >= 0
    assert [e["epoch"] for e in record["epochs"]] == [1, 2, 3] and record["sentences"] == len(SENTENCES)
    assert not loaded.model.training
    kept = min([record["valid_loss_before"]] + [e["valid_loss"] for e in record["epochs"]])
    assert loaded.slice_loss(_tiny_corpus()) == pytest.approx(kept, abs=1e-4)       # the best pass is the one kept
    assert kept <= before + 1e-4
    with pytest.raises(ValueError, match="SHA-256"):
        load_translator(path, sha256="0" * 64)
    with pytest.raises(ValueError, match="non-empty text"):
        loaded.translate(["  "])
    with pytest.raises(ValueError, match="split it into shorter sentences"):
        loaded.translate("Das ist gut. " * 40)


def test_the_device_argument_trains_the_same_model_there(capsys):
    """``device`` moves the model and every batch (a GPU build is the same code); on the CPU, device="cpu" is the
    default run to the bit, and the CLI refuses --device for the checkpoints it builds on the CPU."""
    from seqviz.transformer.__main__ import main
    from seqviz.transformer.translator import TranslationRecipe, train_translator, translation_data

    recipe = TranslationRecipe(num_layers=1, d_model=16, num_heads=2, d_ff=32, merges=20, phrases=False, ddtp=False,
                               epochs=2, sentence_repeats=1, batch_size=4, warmup=2, lr=1e-2, dropout=0.0)
    data = translation_data(recipe, _tiny_corpus())
    a = train_translator(recipe, data, progress=False)
    b = train_translator(recipe, data, progress=False, device=torch.device("cpu"))
    assert [e["valid_loss"] for e in a[3]["epochs"]] == [e["valid_loss"] for e in b[3]["epochs"]]
    assert all(torch.equal(x, y) for x, y in zip(a[0].state_dict().values(), b[0].state_dict().values()))
    with pytest.raises(ValueError, match="device must be a torch device such as 'cpu'"):
        train_translator(recipe, data, progress=False, device="nowhere")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"sees no CUDA GPU .*: train on 'cpu'"):
            train_translator(recipe, data, progress=False, device="cuda")
    with pytest.raises(SystemExit):
        main(["make", "char", "--device", "cuda"])
    assert "--device is for the translator; char is built on the CPU" in capsys.readouterr().err
