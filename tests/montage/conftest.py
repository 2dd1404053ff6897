"""Fixtures of the montage tests: a newcomer's ear montage in mm, and a YAML writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

EAR_MM: dict[str, Any] = {
    "name": "my-ear",
    "description": "In-ear electrodes, left and right",
    "coordinate_frame": "head",
    "units": "mm",
    "reference": "ERB",
    "channels": [
        {"name": "ELA", "position": [-85.5, -8.0, 12.0], "aliases": ["EL-A", "EEG ELA-REF"]},
        {"name": "ELB", "position": [-85.5, -10.0, -2.0]},
        {"name": "ERA", "position": [85.5, -8.0, 12.0]},
        {"name": "ELA-ERA", "position": [-85.5, -8.0, 12.0], "reference_position": [85.5, -8.0, 12.0]},
    ],
}


@pytest.fixture
def ear_dict() -> dict[str, Any]:
    """Return a fresh copy of the newcomer's ear montage (positions in mm)."""
    return yaml.safe_load(yaml.safe_dump(EAR_MM))


@pytest.fixture
def write_yaml(tmp_path: Path) -> Callable[..., Path]:
    """Return a function that writes a mapping (or raw text) as a YAML file under tmp_path."""

    def write(data: Any, name: str = "montage.yaml") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False),
                        encoding="utf-8")
        return path

    return write


@pytest.fixture
def ear_yaml(ear_dict: dict[str, Any], write_yaml: Callable[..., Path]) -> Path:
    """Return the path of the newcomer's ear montage YAML (mm)."""
    return write_yaml(ear_dict, "my-ear.yaml")
