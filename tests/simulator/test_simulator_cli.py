"""``passport-kit simulate``: exit codes, files written, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app


def test_simulate_writes_a_dataset_and_says_where(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["simulate", "--montage", "eesm23-ear", "--subjects", "2",
                                      "--hours", "0.05", "--seed", "3", "--out", str(tmp_path / "sim"),
                                      "--bad-channels", "s02:LB:drift"])
    assert result.exit_code == 0, result.output
    assert "simulated 2 subject(s)" in result.output and "dataset.yaml" in result.output
    assert sorted(p.name for p in (tmp_path / "sim").glob("*.edf")) == ["s01.edf", "s02.edf"]


@pytest.mark.parametrize(("args", "message"), [
    (["--montage", "no-such-montage"], "no-such-montage"),
    (["--montage", "muse", "--bad-channels", "s01:TP9:melted"], "noise, drift, flat"),
    (["--montage", "muse", "--hours", "-1"], "hours"),
])
def test_user_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["simulate", *args, "--subjects", "1", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "dataset.yaml").exists()
