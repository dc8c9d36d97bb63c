"""The package's progress bars: in a notebook the stored plain-text copy is the finished bar, not "0%| 0/N"
(seqviz.progress; what a reader without the saved widget state sees)."""
from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient


def _run(source: str) -> list[dict]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return nb.cells[0].outputs


@pytest.mark.parametrize("how", ["the bar", "the Trainer"])
def test_the_stored_text_of_a_notebook_bar_is_the_finished_bar(how):
    if how == "the bar":
        source = ("from seqviz.progress import progress\nbar = progress(7, 'train', unit='step')\n"
                  "for _ in range(7):\n    bar.update(1)\nbar.close()")
        done = "7/7"
    else:
        source = ("import torch\nfrom torch import nn\nfrom seqviz.train import TrainConfig, Trainer\n"
                  "class M(nn.Module):\n    def __init__(self):\n        super().__init__(); self.w = nn.Linear(2, 2)\n"
                  "    def forward(self, x, targets=None):\n        z = self.w(x)\n"
                  "        return z, nn.functional.cross_entropy(z, targets)\n"
                  "data = [(torch.randn(4, 2), torch.tensor([0, 1, 0, 1]))] * 5\n"
                  "Trainer(M(), TrainConfig(epochs=2, device='cpu'), data).fit()")
        done = "10/10"
    outputs = _run(source)
    bars = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(bars) == 1, outputs                       # one display, updated in place, not a second one
    text = bars[0]["data"]["text/plain"]
    assert "100%" in text and done in text, text         # fails with tqdm.auto's own bar: "0%| 0/7"


def test_outside_a_notebook_it_is_plain_tqdm(capsys):
    from tqdm.std import tqdm as std_tqdm

    from seqviz.progress import progress

    bar = progress(3, "train", disable=False)
    assert isinstance(bar, std_tqdm)
    for _ in range(3):
        bar.update(1)
    bar.close()
    assert "3/3" in capsys.readouterr().err
