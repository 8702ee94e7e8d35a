"""The ONNX "light" model zoo that ships inside the onnx wheel (tests and benchmarks use it)."""

from __future__ import annotations

import os

import onnx

BACKEND_DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")

LIGHT_MODELS = [
    "resnet50",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "bvlc_alexnet",
    "zfnet512",
]


def light_model_path(name: str) -> str:
    """``onnx/backend/test/data/light/light_<name>.onnx``."""
    return os.path.join(BACKEND_DATA, "light", f"light_{name}.onnx")
