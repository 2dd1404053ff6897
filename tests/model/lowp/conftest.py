"""Fixtures for the fast path's tests: the compiled bf16 kernels, or a skip that says what is missing."""

from __future__ import annotations

import os

import pytest

from passport_kit.model.lowp import loader, probe


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
