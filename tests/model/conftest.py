"""Fixtures for model tests: a seeded torch for every test (the fast path's fixtures: tests/model/lowp/conftest.py)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _seeded() -> None:
    torch.manual_seed(0)
