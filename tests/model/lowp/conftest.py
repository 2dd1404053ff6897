"""Fixtures for the fast path's tests: the compiled bf16 kernels, or a skip that says what is missing."""

from __future__ import annotations

import os

import pytest

from passport_kit.model.lowp import build, loader


@pytest.fixture
def kernels():  # noqa: ANN201
    """Return ``torch.ops.passport_kit``; fail where this CPU runs it but it is not built, skip where it cannot run.

    A loaded library always has every op: it is built from the sources beside it (loader.library_key).
    Nothing here compiles it (``python -m passport_kit.model.lowp.build``, run by ``make install``).
    """
    ops = loader.ops()
    if ops is None and build.runs_here() and os.environ.get(loader.SWITCH) != "0":
        # where the library runs, its tests must run: a missing or broken build fails here, never skips
        pytest.fail("this CPU runs the lowp kernels (AVX-512 BF16) but they are not built or do not load: "
                    "run `make install` (python -m passport_kit.model.lowp.build --verbose says why)")
    if ops is None:
        pytest.skip("lowp kernels cannot run here (no AVX-512 BF16, or PASSPORT_KIT_LOWP_KERNELS=0)")
    return ops


@pytest.fixture
def amx(kernels):  # noqa: ANN001, ANN201
    """Return the kernels where their AMX ops can run, or skip saying so."""
    if not kernels.amx_available():
        pytest.skip("needs AMX (CPU flags amx_tile and amx_bf16 and the kernel's permission): the AVX-512 BF16 "
                    "path's tests run here instead")
    return kernels
