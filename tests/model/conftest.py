"""Fixtures for model tests: a seeded torch for every test; the compiled bf16 kernels, or a skip."""

from __future__ import annotations

import pytest
import torch

from passport_kit.model import lowp_kernels


@pytest.fixture(autouse=True)
def _seeded() -> None:
    torch.manual_seed(0)


@pytest.fixture
def kernels():  # noqa: ANN201
    """Return ``torch.ops.passport_kit``, or skip where the library is not built or not loadable here.

    A loaded library always has every op: it is built from the sources beside it (lowp_kernels.library_key).
    Nothing here compiles it (``python -m passport_kit.model.lowp_kernels_build``, run by ``make install``).
    """
    ops = lowp_kernels.ops()
    if ops is None:
        pytest.skip("lowp kernels not built or not loadable here (python -m passport_kit.model.lowp_kernels_build)")
    return ops


@pytest.fixture
def amx(kernels):  # noqa: ANN001, ANN201
    """Return the kernels where their AMX ops can run, or skip."""
    if not kernels.amx_available():
        pytest.skip("no AMX here (CPU flags amx_tile/amx_bf16 or the kernel's permission)")
    return kernels
