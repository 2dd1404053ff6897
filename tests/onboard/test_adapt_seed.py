"""Out-of-range seeds are one line, not a numpy ValueError (issue 35, item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_adapt_refuses_a_seed_out_of_range_with_one_line(seed: str, tmp_path: Path, montage_yaml: Path,
                                                         dataset: Path) -> None:
    result = CliRunner().invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset),
                                      "--checkpoint", "tiny-mlp", "--seed", seed, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "option --seed" in result.output and "Traceback" not in result.output  # named as typed (issue 45)
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_an_unknown_prior_is_refused_before_any_data_is_read(montage_yaml: Path, dataset: Path, tmp_path: Path,
                                                             reads) -> None:  # noqa: ANN001 - the reads fixture
    # Issue 46: `adapt --prior os` was refused only after loading all the data.
    result = CliRunner().invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--prior", "os",
                                      "--out", str(tmp_path / "a")])
    assert result.exit_code == 2 and "unknown sleep prior 'os'" in result.output, result.output
    assert not reads
