"""--prior-channels is checked against the montage before any recording is read, and refused with --prior none
(issue 57, item 4)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


@pytest.mark.parametrize(("value", "extra", "message"), [
    ("EL1-EL1", (), "subtracts channel 'EL1' from itself"),
    ("EL1,EL1", (), "the same channel as EEG and as EOG"),
    ("C3-A2", (), "is neither a channel of this montage"),
    ("EL1-ER1", ("--prior", "none"), "--prior none reads none"),
])
def test_prior_channels_refused_before_a_recording_is_read(montage_yaml: Path, dataset: Path, tmp_path: Path,
                                                           reads: Counter, value: str, extra: tuple[str, ...],
                                                           message: str) -> None:
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--out",
                              str(tmp_path / "out"), "--prior-channels", value, *extra, "--no-progress"])
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not reads, f"recordings were read before the refusal: {dict(reads)}"
