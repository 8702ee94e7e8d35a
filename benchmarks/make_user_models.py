"""Models users export: torchvision, timm and transformers definitions as ONNX files.

Run ``python benchmarks/make_user_models.py [NAME ...] [--out DIR] [--list]``
to write the ONNX files (default: every model of :data:`MODELS` into
:func:`graph.onnx.zoo_transformers.cache_dir`, ``~/.cache/tessera/models/user``
unless ``$TESSERA_MODEL_DIR`` says otherwise).  Nothing here is committed
as a model file: the weights are seeded random numbers (no hub download), so
a model is regenerated identically wherever its library is installed.

Each model is exported as a user would: the library's own definition in eval
mode, ``torch.onnx.export`` (the TorchScript exporter, opset 17) with the
batch axis dynamic (``dynamic_axes={input: {0: "batch"}}``); transformers
models keep their default attention implementation.  The graph layer pins
the batch at import (``graph.from_onnx(path, shape=...)``, see
:func:`input_shapes`).

The libraries are optional benchmark extras, never test dependencies::

    pip install --no-deps torchvision==0.28.0   # matches torch 2.13.0; keep the CPU torch
    pip install -c <(echo torch==2.13.0) timm==1.0.29 transformers==5.18.0

PyPI's torchvision wheel is built against the CUDA torch: its operator
library fails to load beside the CPU build, and ``import torchvision`` then
stops at the registration of ``torchvision::nms``.  :func:`import_torchvision`
defines the two missing schemas (``nms``, ``qnms``; no model here calls them)
before the import.

Adding a model is one line in :data:`MODELS`: a name, the library, a
constructor and an input kind.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from graph.onnx.zoo_transformers import cache_dir as models_cache_dir

IMAGE = "image"  # float32 (batch, 3, H, W)
TOKENS = "tokens"  # int64 input_ids and attention_mask (batch, seq)
IDS = "ids"  # int64 input_ids (batch, seq) alone
SEQ2SEQ = "seq2seq"  # TOKENS and int64 decoder_input_ids (batch, DECODER_LENGTH): an encoder-decoder forward
DECODER_LENGTH = 32


@dataclass(frozen=True)
class UserModel:
    """One exported definition: ``library`` (torchvision, timm or transformers), the
    constructor's name there, its keyword arguments, and the input kind and size."""

    library: str
    constructor: str
    kwargs: dict = field(default_factory=dict)
    kind: str = IMAGE
    size: int = 224  # image side, or sequence length for TOKENS

    def input_names(self) -> list:
        return list(self.input_shapes())

    def input_shapes(self, batch: int = 1) -> dict:
        if self.kind == IMAGE:
            return {"x": (batch, 3, self.size, self.size)}
        if self.kind == IDS:
            return {"input_ids": (batch, self.size)}
        shapes = {"input_ids": (batch, self.size), "attention_mask": (batch, self.size)}
        if self.kind == SEQ2SEQ:
            shapes["decoder_input_ids"] = (batch, DECODER_LENGTH)
        return shapes


def _hf(config: str, model: str, kind: str = TOKENS, **cfg) -> UserModel:
    return UserModel("transformers", model, {"config": config, **cfg}, kind, 128)


def _hf_vit(**cfg) -> UserModel:
    return UserModel("transformers", "ViTForImageClassification", {"config": "ViTConfig", **cfg})


VIT_SMALL = dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536)
T5_SMALL = dict(d_model=512, d_ff=2048, num_layers=6, num_heads=8)  # t5-small's sizes (vocabulary 32128)

MODELS = {
    # torchvision
    "resnet18": UserModel("torchvision", "resnet18"),
    "resnet50": UserModel("torchvision", "resnet50"),
    "mobilenet_v2": UserModel("torchvision", "mobilenet_v2"),
    "mobilenet_v3_small": UserModel("torchvision", "mobilenet_v3_small"),
    "mobilenet_v3_large": UserModel("torchvision", "mobilenet_v3_large"),
    "efficientnet_b0": UserModel("torchvision", "efficientnet_b0"),
    "mnasnet1_0": UserModel("torchvision", "mnasnet1_0"),
    "shufflenet_v2": UserModel("torchvision", "shufflenet_v2_x1_0"),
    "squeezenet1_1": UserModel("torchvision", "squeezenet1_1"),
    "densenet121": UserModel("torchvision", "densenet121"),
    "googlenet": UserModel("torchvision", "googlenet", {"aux_logits": False, "init_weights": True}),
    "inception_v3": UserModel("torchvision", "inception_v3", {"aux_logits": False, "init_weights": True}, size=299),
    "regnet_y_400mf": UserModel("torchvision", "regnet_y_400mf"),
    "convnext_tiny": UserModel("torchvision", "convnext_tiny"),
    "vit_b_16": UserModel("torchvision", "vit_b_16"),
    "swin_t": UserModel("torchvision", "swin_t"),
    "maxvit_t": UserModel("torchvision", "maxvit_t"),
    # timm
    "deit_tiny": UserModel("timm", "deit_tiny_patch16_224"),
    "ghostnet": UserModel("timm", "ghostnet_100"),
    "poolformer_s12": UserModel("timm", "poolformer_s12"),
    "mobilevit_xs": UserModel("timm", "mobilevit_xs", size=256),
    "efficientnet_lite0": UserModel("timm", "efficientnet_lite0"),
    "convnext_atto": UserModel("timm", "convnext_atto"),
    "levit_128s": UserModel("timm", "levit_128s"),
    # transformers (random weights from a config; default attention)
    "hf_vit_small": _hf_vit(**VIT_SMALL),
    "hf_bert_base": _hf("BertConfig", "BertModel"),
    "hf_distilbert": _hf("DistilBertConfig", "DistilBertModel"),
    "hf_gpt2": _hf("GPT2Config", "GPT2Model"),
    "hf_t5_small_encoder": _hf("T5Config", "T5EncoderModel", **T5_SMALL),
    "hf_t5_small": _hf("T5Config", "T5ForConditionalGeneration", SEQ2SEQ, **T5_SMALL),  # encoder, decoder, LM head
    # torch.nn (a model defined here)
    "lstm_lm": UserModel("torch", "LstmLanguageModel", {"vocab": 1000, "embed": 128, "hidden": 256, "layers": 2},
                         IDS, 35),
}


def cache_dir() -> str:
    """``<models cache>/user``: ``$TESSERA_MODEL_DIR/user``, default ``~/.cache/tessera/models/user``."""
    return os.path.join(models_cache_dir(), "user")


def import_torchvision():
    """``torchvision``, importable beside the CPU torch.  Where its operator library does not
    load (the CUDA-built wheel), the schemas of the two operators it would have registered
    are defined first; timm and transformers import torchvision too, so this comes before them."""
    import importlib.util

    import torch

    if "torchvision" not in sys.modules and not hasattr(import_torchvision, "library"):
        spec = importlib.util.find_spec("torchvision")
        if spec is None:
            raise ImportError("torchvision is not installed: pip install --no-deps torchvision==0.28.0")
        folder = spec.submodule_search_locations[0]
        so = [f for f in os.listdir(folder) if f.startswith("_C.") and f.endswith((".so", ".pyd"))]
        try:
            for f in so:
                torch.ops.load_library(os.path.join(folder, f))
        except OSError:  # built against another torch: define the schemas it would have
            lib = torch.library.Library("torchvision", "DEF")
            lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            import_torchvision.library = lib  # kept alive: dropping it removes the schemas
    import torchvision

    return torchvision


def construct(spec: UserModel):
    """The seeded module of ``spec`` in eval mode."""
    import torch

    tv = import_torchvision()
    torch.manual_seed(0)
    if spec.library == "torchvision":
        m = getattr(tv.models, spec.constructor)(weights=None, **spec.kwargs)
    elif spec.library == "timm":
        import timm

        m = timm.create_model(spec.constructor, pretrained=False, **spec.kwargs)
    elif spec.library == "torch":
        m = globals()[spec.constructor](**spec.kwargs)
    elif spec.library == "transformers":
        import transformers

        kwargs = dict(spec.kwargs)
        config = getattr(transformers, kwargs.pop("config"))(**kwargs)
        m = first_output(getattr(transformers, spec.constructor)(config), spec.kind)
    else:
        raise ValueError(f"make_user_models: unknown library {spec.library!r}")
    randomize_statistics(m)
    return m.eval()


def LstmLanguageModel(vocab: int, embed: int, hidden: int, layers: int):  # noqa: N802 - a constructor
    """A word-level LSTM language model (PyTorch's word_language_model example): embedding,
    stacked LSTM, linear decoder to the vocabulary."""
    import torch

    class Lm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, embed)
            self.lstm = torch.nn.LSTM(embed, hidden, layers, batch_first=True)
            self.decoder = torch.nn.Linear(hidden, vocab)

        def forward(self, ids):
            out, _ = self.lstm(self.embed(ids))
            return self.decoder(out)

    return Lm()


def first_output(model, kind: str):
    """``model`` called with keywords, returning its first output (``last_hidden_state`` or
    ``logits``): the signature a user's export wrapper gives a transformers model."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            if kind == IMAGE:
                out = self.model(pixel_values=inputs[0])
            else:
                keywords = {"input_ids": inputs[0], "attention_mask": inputs[1]}
                if kind == SEQ2SEQ:
                    keywords["decoder_input_ids"] = inputs[2]
                if getattr(self.model.config, "use_cache", None) is not None:
                    keywords["use_cache"] = False
                out = self.model(**keywords)
            return out[0]

    return Wrapped()


def randomize_statistics(m) -> None:
    """Batch-norm statistics away from 0 and 1 (seeded), so no pass can drop them and the
    activations keep a realistic scale; weight matrices a definition initialises to zeros
    (torchvision's ViT head and class token) drawn instead, or the output would be all zeros
    whatever the input and any runtime would match it."""
    import torch

    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in m.parameters():
            if p.ndim >= 2 and not p.any():
                p.copy_(0.02 * torch.randn(p.shape, generator=g))
        for sub in m.modules():
            if isinstance(sub, torch.nn.modules.batchnorm._BatchNorm) and sub.running_mean is not None:
                sub.running_mean.copy_(0.1 * torch.randn(sub.running_mean.shape, generator=g))
                sub.running_var.copy_(0.5 + torch.rand(sub.running_var.shape, generator=g))


def sample_inputs(spec: UserModel, batch: int = 1) -> dict:
    """Seeded inputs of ``spec``: name -> numpy array."""
    import numpy as np

    rng = np.random.default_rng(1)
    shapes = spec.input_shapes(batch)
    if spec.kind == IMAGE:
        return {"x": rng.standard_normal(shapes["x"]).astype("float32")}
    ids = rng.integers(0, 1000, size=shapes["input_ids"]).astype("int64")
    if spec.kind == IDS:
        return {"input_ids": ids}
    feeds = {"input_ids": ids, "attention_mask": np.ones(shapes["attention_mask"], dtype="int64")}
    if spec.kind == SEQ2SEQ:
        feeds["decoder_input_ids"] = rng.integers(0, 1000, size=shapes["decoder_input_ids"]).astype("int64")
    return feeds


def export(name: str, path: str) -> str:
    """Write model ``name`` to ``path`` (ONNX, opset 17, dynamic batch axis)."""
    import torch

    spec = MODELS[name]
    m = construct(spec)
    args = tuple(torch.from_numpy(a) for a in sample_inputs(spec).values())
    names = spec.input_names()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".part"
    torch.backends.mha.set_fastpath_enabled(False)  # the fused fast path has no ONNX export
    with torch.no_grad():
        torch.onnx.export(
            m,
            args,
            tmp,
            input_names=names,
            output_names=["y"],
            dynamic_axes={n: {0: "batch"} for n in names},
            opset_version=17,
            dynamo=False,
        )
    os.replace(tmp, path)
    return path


def model_path(name: str, directory: str | None = None) -> str:
    """The ONNX file of ``name`` in ``directory`` (default :func:`cache_dir`), exported on first use."""
    if name not in MODELS:
        raise ValueError(f"make_user_models: unknown model {name!r}; models: {', '.join(MODELS)}")
    path = os.path.join(directory or cache_dir(), f"{name}.onnx")
    if not os.path.exists(path):
        export(name, path)
    return path


def input_shapes(name: str, batch: int = 1) -> dict:
    """``shape=`` for ``graph.from_onnx`` of model ``name`` at ``batch``."""
    return MODELS[name].input_shapes(batch)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="models (default: all; --list names them)")
    parser.add_argument("--out", default=None, help="directory (default: $TESSERA_MODEL_DIR/user)")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, spec in MODELS.items():
            print(f"{name:22} {spec.library:13} {spec.constructor:28} {spec.input_shapes()}")
        return 0
    failed = 0
    for name in args.names or list(MODELS):
        try:
            path = model_path(name, args.out)
        except Exception as err:  # noqa: BLE001 - report every model's failure, go on
            failed += 1
            print(f"{name}: export failed: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        print(f"{name}: {path} ({os.path.getsize(path) / 2**20:.1f} MiB)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
