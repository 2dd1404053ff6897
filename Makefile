# Two entry points do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build lies on this machine's disk; an unpinned torch pulls a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
# The bf16 fast path's compiled kernels (passport_kit/model/lowp/: kernels.cpp, amx.cpp, lowp.h), built in place
# after the install. Deleting model/lowp/ means deleting these lines and the KERNELS target below (docs/architecture.md).
LOWP := passport_kit/model/lowp
KERNELS := $(LOWP)/_lowp_kernels.so
KERNEL_SOURCES := $(LOWP)/kernels.cpp $(LOWP)/amx.cpp $(LOWP)/lowp.h $(LOWP)/loader.py $(LOWP)/build.py

.PHONY: install demo test test-slow bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e ".[dev]"
	-$(BIN)/pip install --quiet --no-deps --no-warn-conflicts braindecode==1.8.1 && $(BIN)/pip install --quiet --no-warn-conflicts "$(TORCH_SPEC)" einops h5py skorch joblib torchinfo pandas wfdb linear_attention_transformer docstring_inheritance  # test-only: braindecode without its torchaudio (CUDA-linked, breaks on CPU torch; tests stub it), so pip's "requires torchaudio" ERROR line is expected and silenced; '-' = tests skip if this fails
	touch $(STAMP)

# On a CPU that runs the library (AVX-512 BF16) a failed build fails make (and so `make test` and CI): a broken
# build must not pass silently there. Elsewhere the build says why in one line and the eager bf16 path runs.
# The target is the stamp (torch version, sources' digest) the build writes after the library.
$(KERNELS).torch: $(KERNEL_SOURCES) $(STAMP)
	$(BIN)/python -m passport_kit.model.lowp.build --required-where-it-runs

install: $(STAMP) $(KERNELS).torch

demo: install
	$(BIN)/passport-kit demo

test: install
	$(BIN)/python -m pytest -q

test-slow: install
	$(BIN)/python -m pytest -q -m slow

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache $(KERNELS) $(KERNELS).torch
