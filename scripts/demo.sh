#!/usr/bin/env bash
# Build kernels of increasing schedule quality and compare them with numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m demo "$@"
