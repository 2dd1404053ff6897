# Two entry points do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build lies on this machine's disk; an unpinned torch pulls a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
# `make demo` and `make test` compile nothing: the default install is pure Python + torch, on any x86-64 CPU.
# The bf16 fast path's compiled kernels (passport_kit/model/lowp/: kernels.cpp, amx.cpp, lowp.h) are an opt-in,
# `make fast`, for CPUs with AVX-512 BF16 (AMX too: the products on tiles). Deleting model/lowp/ means deleting
# these lines and the fast and test-fast targets below (docs/architecture.md).
LOWP := passport_kit/model/lowp
KERNELS := $(LOWP)/_lowp_kernels.so
KERNEL_SOURCES := $(LOWP)/kernels.cpp $(LOWP)/amx.cpp $(LOWP)/lowp.h $(LOWP)/loader.py $(LOWP)/build.py $(LOWP)/probe.py

.PHONY: install demo test test-slow fast test-fast clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e ".[dev]"
	-$(BIN)/pip install --quiet --no-deps --no-warn-conflicts braindecode==1.8.1 && $(BIN)/pip install --quiet --no-warn-conflicts "$(TORCH_SPEC)" einops h5py skorch joblib torchinfo pandas wfdb linear_attention_transformer docstring_inheritance  # test-only: braindecode without its torchaudio (CUDA-linked, breaks on CPU torch; tests stub it), so pip's "requires torchaudio" ERROR line is expected and silenced; '-' = tests skip if this fails
	touch $(STAMP)

install: $(STAMP)

# The build checks the CPU's flags first, compiles and tests the library in child processes, and on a CPU
# that cannot run it (or a failed compile or self-test) says why in one line and exits 2; the eager path stays.
# The target is the stamp (torch version, sources' digest) the build writes after the library.
$(KERNELS).torch: $(KERNEL_SOURCES) $(STAMP)
	$(BIN)/python -m passport_kit.model.lowp.build

fast: $(KERNELS).torch

demo: install
	$(BIN)/passport-kit demo

test: install
	$(BIN)/python -m pytest -q

test-slow: install
	$(BIN)/python -m pytest -q -m slow

# The kernels' tests where they are built (PASSPORT_KIT_LOWP_KERNELS=1: a kernel test that cannot load them fails).
test-fast: fast
	PASSPORT_KIT_LOWP_KERNELS=1 $(BIN)/python -m pytest -q tests/model/lowp tests/model/test_fast_path.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache $(KERNELS) $(KERNELS).torch $(KERNELS).probe $(KERNELS).partial
