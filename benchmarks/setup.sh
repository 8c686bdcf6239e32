#!/usr/bin/env bash
# Installs the converters the benchmarks compare against (run by `make bench`).
# - onnx2torch goes into .venv without dependencies: its only extra one, torchvision, has no CPU
#   build here; tests/shims stands in for the two functions it imports, on PYTHONPATH for the
#   onnx2torch process only.
# - tf2onnx goes into .venv, held to the project's stack by constraints.txt.
# - onnx2tf pins an older TensorFlow/onnx/numpy stack, so it gets its own venv (.venv-onnx2tf),
#   installed with the pins its authors ship ("onnx2tf[pinned]"); benchmarks call it as a process.
# - TVM (apache-tvm, Relax) likewise gets .venv-tvm, for its ConvertLayout pass.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q -c constraints.txt onnxscript transformers tf2onnx==1.17.0
.venv/bin/pip install -q -c constraints.txt --no-deps onnx2torch==1.5.15
if [ ! -x .venv-onnx2tf/bin/onnx2tf ]; then
  python3 -m venv .venv-onnx2tf
  .venv-onnx2tf/bin/pip install -q --upgrade pip
  echo "torch==2.13.0" > .venv-onnx2tf/constraints.txt   # nothing may pull a CUDA torch
  .venv-onnx2tf/bin/pip install -q -c .venv-onnx2tf/constraints.txt "onnx2tf[pinned]==1.29.24"
fi
if [ ! -x .venv-tvm/bin/python ]; then
  # TVM (Relax) for its ConvertLayout pass, in its own venv: it pins its own onnx/numpy stack
  python3 -m venv .venv-tvm
  .venv-tvm/bin/pip install -q --upgrade pip
  echo "torch==2.13.0" > .venv-tvm/constraints.txt
  .venv-tvm/bin/pip install -q -c .venv-tvm/constraints.txt apache-tvm==0.27.0.post1 onnx==1.19.1
fi
