# The two first commands of the README: `make demo` and `make test`.
# Both create .venv and install everything from scratch when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: demo test test-all bench fuzz lint docs clean runtimes

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first, pinned: the local CPU wheel; everything after is held to it by constraints.txt
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -c constraints.txt -e ".[onnx,torch,tf,jax,ray,coreml,dev]"
	# timm (the conversion matrix's PyTorch architectures) without torchvision, which has no CPU wheel here
	$(PIP) install -q -c constraints.txt --no-deps timm==1.0.31
	# keras_hub (the matrix's keras_hub models) without tensorflow-text, which it needs only for tokenizers
	$(PIP) install -q -c constraints.txt --no-deps keras-hub==0.32.0 kagglehub==1.0.3 kagglesdk==0.1.38
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(VENV)/bin/ruff check tensorbridge tests benchmarks examples
	$(PY) -m pytest -q -n 2

test-all: $(STAMP)
	$(PY) -m pytest -q -n 2 -m ""

bench: $(STAMP)
	bash benchmarks/setup.sh
	$(PY) benchmarks/run.py
	$(PY) benchmarks/torch_bench.py
	$(PY) benchmarks/tf_bench.py
	$(PY) benchmarks/codegen_bench.py
	$(PY) benchmarks/flax_bench.py
	$(PY) benchmarks/caffe_bench.py
	$(PY) benchmarks/batch_bench.py
	$(PY) benchmarks/llm_bench.py
	$(PY) -m benchmarks.transpile_bench

# framework runtimes that verification runs besides the main venv (docs/darknet.md, docs/caffe.md, docs/mxnet.md,
# docs/paddle.md, docs/cntk.md); `make test` needs none
runtimes: $(STAMP)
	PY=$(PY) bash scripts/runtimes/darknet.sh
	bash scripts/runtimes/caffe.sh
	bash scripts/runtimes/mxnet.sh
	bash scripts/runtimes/paddle.sh
	bash scripts/runtimes/cntk.sh

# the fuzzing campaign (docs/security.md): 1,000 mutants per source format through inspect and convert
fuzz: $(STAMP)
	$(PY) -m tests.fuzz.campaign --mutants $${FUZZ_MUTANTS:-1000} --doc

lint: $(STAMP)
	$(VENV)/bin/ruff check tensorbridge tests benchmarks examples

docs: $(STAMP)
	$(PY) -m tensorbridge.support
	$(PY) -m tests.onnx_corpus.corpus --write

clean:
	rm -rf $(VENV) build dist *.egg-info
