#!/usr/bin/env bash
# Create .venv (once) and install Tessera with its test extra into it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import te, tune, tessera, llvmlite, sympy, pytest, hypothesis, pytest_benchmark, onnxruntime, torch, distributed, xgboost, matplotlib, ml_dtypes" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
fi
