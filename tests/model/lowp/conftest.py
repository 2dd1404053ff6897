"""Fixtures for the fast path's tests: the compiled bf16 kernels, or a skip that says what is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from passport_kit.model.lowp import loader, probe
from passport_kit.runtime import CPU_FLAGS_ENV


@pytest.fixture
def kernels():  # noqa: ANN201
    """Return ``torch.ops.passport_kit``, or skip where the library is not built or cannot run here.

    The library is an opt-in (``make fast``); ``make test-fast`` builds it and runs these tests with
    ``PASSPORT_KIT_LOWP_KERNELS=1``, where a library that does not load fails them instead of skipping.
    A loaded library always has every op: it is built from the sources beside it (loader.library_key).
    Nothing here compiles it.
    """
    ops = loader.ops()
    if ops is None and os.environ.get(loader.SWITCH) == "1":
        pytest.fail("PASSPORT_KIT_LOWP_KERNELS=1 (make test-fast) but the lowp kernels do not load: "
                    f"{probe.cpu_problem() or 'run make fast (python -m passport_kit.model.lowp.build --verbose)'}")
    if ops is None:
        pytest.skip(f"lowp kernels not loaded: {probe.cpu_problem() or 'not built (an opt-in: make fast)'}, "
                    "or PASSPORT_KIT_LOWP_KERNELS=0")
    return ops


@pytest.fixture
def amx(kernels):  # noqa: ANN001, ANN201
    """Return the kernels where their AMX ops can run, or skip saying so."""
    if not kernels.amx_available():
        pytest.skip("needs AMX (CPU flags amx_tile and amx_bf16 and the kernel's permission): the AVX-512 BF16 "
                    "path's tests run here instead")
    return kernels


@pytest.fixture
def no_library_cache():  # noqa: ANN201
    """Let :func:`~passport_kit.model.lowp.loader.ops` decide afresh in the test, and after it."""
    loader.ops.cache_clear()
    yield
    loader.ops.cache_clear()


@pytest.fixture
def stamped_library(no_library_cache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: ANN001
    """Return a file the loader takes for its built library (stamped by the build) on a CPU that runs it (simulated).

    Not a shared library: the loader's checks and its self-test's child are what the test sees.
    """
    library, stamp = tmp_path / "_loader.so", tmp_path / "_loader.so.torch"
    library.write_bytes(b"stamped as built, but not a library this CPU can run")
    stamp.write_text(f"{loader.library_key()}\n{loader.library_stamp(library)}\n")
    monkeypatch.delenv(loader.SWITCH, raising=False)  # a user's "0" would stop before the checks
    monkeypatch.setattr(loader, "LIBRARY", library)
    monkeypatch.setattr(loader, "TORCH_STAMP", stamp)
    monkeypatch.setenv(CPU_FLAGS_ENV, " ".join(sorted(probe.REQUIRED_FLAGS)))  # the same on every CPU
    return library
