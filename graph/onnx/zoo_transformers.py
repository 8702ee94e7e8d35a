"""Transformer models for tests, tutorials and benchmarks, exported from ``torch.nn`` modules.

Run ``python -m graph.onnx.zoo_transformers [NAME ...] [--out DIR]``
to write the ONNX files (default: all of :data:`SPECS` into
:func:`cache_dir`).  Nothing here is committed as a model file: the weights
are seeded random numbers, so a model is regenerated identically wherever
torch (``pip install torch==2.13.0``) is installed.

Three families:

* ``encoder``: ``torch.nn.TransformerEncoder`` (post-norm, ReLU feed-forward,
  batch-first), the BERT-style encoder of the issue;
* ``bert``: the same module at BERT-base size (12 layers, d_model 768,
  12 heads, feed-forward 3072) with GELU;
* ``gpt``: a GPT-2-style causal decoder written as an ``nn.Module``: token
  embedding (``Gather``), positions from ``torch.arange`` (``Range``), a
  causal mask from ``torch.tril`` (``Trilu``) applied with ``masked_fill``
  (``Where``, ``Expand``), pre-norm blocks with tanh GELU, a tied LM head.

The export uses torch's TorchScript exporter (``dynamo=False``: it needs no
onnxscript) at opset 17; the sequence axis is exported as dynamic, so the
graph layer sets it at import with ``shape=`` as for any symbolic dim.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Spec:
    family: str  # "encoder", "bert" or "gpt"
    layers: int
    d_model: int
    heads: int
    ffn: int
    seq: int = 128
    vocab: int = 1000

    @property
    def input_name(self) -> str:
        return "tokens" if self.family == "gpt" else "x"

    def input_shape(self) -> tuple:
        return (1, self.seq) if self.family == "gpt" else (1, self.seq, self.d_model)


SPECS = {
    "encoder4": Spec("encoder", 4, 256, 4, 1024),
    "bert_base": Spec("bert", 12, 768, 12, 3072),
    "gpt6": Spec("gpt", 6, 512, 8, 2048),
    # small versions for the tests
    "tiny_encoder": Spec("encoder", 2, 64, 4, 128, seq=16),
    "tiny_bert": Spec("bert", 1, 64, 2, 256, seq=16),
    "tiny_gpt": Spec("gpt", 2, 64, 4, 256, seq=16, vocab=97),
}


def cache_dir() -> str:
    """``$TESSERA_MODEL_DIR``, default ``~/.cache/tessera/models`` (never inside the repository)."""
    return os.environ.get(
        "TESSERA_MODEL_DIR", os.path.join(os.path.expanduser("~"), ".cache", "tessera", "models")
    )


def _gpt_module(spec: Spec):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(spec.d_model)
            self.qkv = nn.Linear(spec.d_model, 3 * spec.d_model)
            self.proj = nn.Linear(spec.d_model, spec.d_model)
            self.ln2 = nn.LayerNorm(spec.d_model)
            self.fc = nn.Linear(spec.d_model, spec.ffn)
            self.out = nn.Linear(spec.ffn, spec.d_model)

        def forward(self, x, mask):
            b, t, c = x.shape
            h, d = spec.heads, spec.d_model // spec.heads
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q = q.view(b, t, h, d).transpose(1, 2)
            k = k.view(b, t, h, d).transpose(1, 2)
            v = v.view(b, t, h, d).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            att = att.masked_fill(mask[:, :, :t, :t] == 0, float("-inf"))
            y = torch.softmax(att, dim=-1) @ v
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(spec.vocab, spec.d_model)
            self.wpe = nn.Embedding(1024, spec.d_model)
            self.blocks = nn.ModuleList(Block() for _ in range(spec.layers))
            self.ln_f = nn.LayerNorm(spec.d_model)

        def forward(self, tokens):
            t = tokens.shape[1]
            pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
            mask = torch.tril(torch.ones(t, t)).view(1, 1, t, t).expand(tokens.shape[0], 1, t, t)
            x = self.wte(tokens) + self.wpe(pos)
            for block in self.blocks:
                x = block(x, mask)
            return self.ln_f(x) @ self.wte.weight.t()

    return GPT()


def module(spec: Spec):
    """The seeded ``torch.nn`` module of ``spec`` in eval mode."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    if spec.family == "gpt":
        m = _gpt_module(spec)
    else:
        act = "gelu" if spec.family == "bert" else "relu"
        layer = nn.TransformerEncoderLayer(
            spec.d_model, spec.heads, spec.ffn, dropout=0.0, activation=act, batch_first=True
        )
        m = nn.TransformerEncoder(layer, spec.layers, enable_nested_tensor=False)
        for sub in m.modules():  # the layers are deep copies of one: give each its own weights
            for reset in ("reset_parameters", "_reset_parameters"):
                if hasattr(sub, reset):
                    getattr(sub, reset)()
    with torch.no_grad():  # biases and norm scales away from 0 and 1, so no pass can drop them
        for p in m.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return m.eval()


def sample_input(spec: Spec):
    import torch

    g = torch.Generator().manual_seed(1)
    if spec.family == "gpt":
        return torch.randint(0, spec.vocab, spec.input_shape(), generator=g)
    return torch.randn(spec.input_shape(), generator=g)


def export(spec: Spec, path: str) -> str:
    """Write ``spec``'s model to ``path`` (ONNX, opset 17, dynamic sequence axis)."""
    import torch

    m = module(spec)
    x = sample_input(spec)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".part"
    torch.backends.mha.set_fastpath_enabled(False)  # the fused fast path has no ONNX export
    with torch.no_grad():
        torch.onnx.export(
            m,
            (x,),
            tmp,
            input_names=[spec.input_name],
            output_names=["y"],
            dynamic_axes={spec.input_name: {1: "seq"}},
            opset_version=17,
            dynamo=False,
        )
    os.replace(tmp, path)
    return path


def model_path(name: str, directory: str | None = None) -> str:
    """The ONNX file of ``name`` in ``directory`` (default :func:`cache_dir`), exported on first use."""
    if name not in SPECS:
        raise ValueError(f"zoo_transformers: unknown model {name!r}; models: {', '.join(SPECS)}")
    path = os.path.join(directory or cache_dir(), f"{name}.onnx")
    if not os.path.exists(path):
        export(SPECS[name], path)
    return path


def main(argv: list | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(SPECS)})")
    parser.add_argument(
        "--out", default=None, help="directory (default: $TESSERA_MODEL_DIR or ~/.cache/tessera/models)"
    )
    args = parser.parse_args(argv)
    for name in args.names or list(SPECS):
        path = model_path(name, args.out)
        print(f"{name}: {path} ({os.path.getsize(path) / 2**20:.1f} MiB)", file=sys.stderr)


if __name__ == "__main__":
    main()
