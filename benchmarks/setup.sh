#!/usr/bin/env bash
# Installs the converters the benchmarks compare against into the project's .venv.
# onnx2torch is installed without dependencies: its only extra one, torchvision, has no CPU
# build here (the CUDA wheel fails to import with a CPU torch); benchmarks/shims stands in for
# the two functions it imports, on PYTHONPATH for the onnx2torch process only.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q -c constraints.txt onnxscript transformers
.venv/bin/pip install -q -c constraints.txt --no-deps onnx2torch==1.5.15
