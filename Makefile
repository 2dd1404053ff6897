# Two entry points do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build lies on this machine's disk; an unpinned torch pulls a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
# The fused bf16 CPU kernels (passport_kit/model/lowp_kernels.cpp, lowp_ffn.cpp), built in place after the install.
KERNELS := passport_kit/model/_lowp_kernels.so
KERNEL_SOURCES := passport_kit/model/lowp_kernels.cpp passport_kit/model/lowp_ffn.cpp passport_kit/model/lowp_kernels.py passport_kit/model/lowp_kernels_build.py

.PHONY: install demo test test-slow bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e ".[dev]"
	-$(BIN)/pip install --quiet --no-deps --no-warn-conflicts braindecode==1.8.1 && $(BIN)/pip install --quiet --no-warn-conflicts "$(TORCH_SPEC)" einops h5py skorch joblib torchinfo pandas wfdb linear_attention_transformer docstring_inheritance  # test-only: braindecode without its torchaudio (CUDA-linked, breaks on CPU torch; tests stub it), so pip's "requires torchaudio" ERROR line is expected and silenced; '-' = tests skip if this fails
	touch $(STAMP)

# '-': without a compiler (or ninja) the build says so in one line and the eager bf16 path runs.
# The target is the stamp (torch version, sources' digest) the build writes after the library.
$(KERNELS).torch: $(KERNEL_SOURCES) $(STAMP)
	-$(BIN)/python -m passport_kit.model.lowp_kernels_build

install: $(STAMP) $(KERNELS).torch

demo: install
	$(BIN)/passport-kit demo

test: install
	$(BIN)/python -m pytest -q

test-slow: install
	$(BIN)/python -m pytest -q -m slow

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache $(KERNELS) $(KERNELS).torch
