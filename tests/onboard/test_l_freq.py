"""The band-pass bottom: ``l_freq`` in dataset.yaml and ``--l-freq`` (issue 34, finding 8)."""

from __future__ import annotations

from pathlib import Path

import edfio
import numpy as np
import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import ConfigError
from passport_kit.signals import PreprocessConfig
from passport_kit.signals.recording import with_high_pass
from tests.onboard.edf_helpers import prefilter_dataset

RUN = CliRunner()


def _dataset(folder: Path, *, l_freq: float | None = None) -> Path:
    """Rest and task recordings of 3 subjects; subject s01's task recording has another high-pass."""
    return prefilter_dataset(folder, odd="HP:1Hz LP:45Hz", usual="HP:0.1Hz LP:45Hz", l_freq=l_freq)


def test_check_advises_l_freq_for_a_high_pass_confound(tmp_path: Path, montage_yaml: Path, checkpoint: str) -> None:
    data = _dataset(tmp_path)
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint", checkpoint,
                              "--h-freq", "45"])
    assert "[WARN] recording metadata: high-pass differs between classes within 1 subject(s)" in result.output
    assert "'l_freq: 1' in dataset.yaml or --l-freq 1" in result.output
    assert "h_freq" not in result.output.split("recording metadata")[1].splitlines()[0]  # the low-pass agrees
    # The advice works: with the band's bottom at 1 Hz the difference is filtered away.
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint", checkpoint,
                              "--h-freq", "45", "--l-freq", "1"])
    assert "[ok  ] recording metadata: sampling rate, prefilters and units agree" in result.output, result.output
    assert "band-pass 1-45 Hz" in result.output


def test_dataset_yaml_l_freq_is_the_band_bottom(tmp_path: Path, montage_yaml: Path, checkpoint: str) -> None:
    data = _dataset(tmp_path, l_freq=1.0)
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint", checkpoint,
                              "--h-freq", "45"])
    assert "band-pass 1-45 Hz" in result.output, result.output
    assert "[ok  ] recording metadata" in result.output


def test_adapt_records_l_freq_in_the_bundle(tmp_path: Path, montage_yaml: Path, checkpoint: str) -> None:
    import json

    data = _dataset(tmp_path / "data")
    out = tmp_path / "bundle"
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint", checkpoint,
                              "--recipe", "probe", "--l-freq", "1", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "adapter.json").read_text())["preprocessing"]["l_freq"] == 1.0


def test_l_freq_at_or_above_the_top_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"l_freq .* 80 Hz; it must lie between 0 and the band's top, 75 Hz"):
        with_high_pass(PreprocessConfig(), 80.0)


def test_check_lists_no_notch_above_the_band_top(tmp_path: Path, montage_yaml: Path, checkpoint: str) -> None:
    data = _dataset(tmp_path)
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint", checkpoint,
                              "--h-freq", "22"])
    assert "notch 50" not in result.output
    assert "no notch needed (50 Hz mains lies above the band's top)" in result.output
