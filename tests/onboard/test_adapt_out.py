"""adapt's output folder: a finished bundle is never replaced silently (issue 19, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

RUN = CliRunner()


def _adapt(montage_yaml: Path, dataset: Path, out: Path, checkpoint: str, *extra: str):
    return RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                            checkpoint, "--batch-size", "8", "--out", str(out), "--no-progress", *extra])


@pytest.fixture
def finished(tmp_path: Path, montage_yaml: Path, dataset: Path, checkpoint: str) -> tuple[Path, bytes]:
    """A finished 3-step bundle in tmp_path/run and the bytes of its weights."""
    result = _adapt(montage_yaml, dataset, tmp_path / "run", checkpoint, "--max-steps", "3")
    assert result.exit_code == 0, result.output
    return tmp_path / "run", (tmp_path / "run" / "adapter.safetensors").read_bytes()


def test_rerun_of_the_same_command_leaves_a_finished_bundle_as_it_is(finished, montage_yaml: Path, dataset: Path,
                                                                     checkpoint: str) -> None:
    out, weights = finished
    # --device/--threads do not change what is trained: still the same run.
    result = _adapt(montage_yaml, dataset, out, checkpoint, "--max-steps", "3", "--threads", "1")
    assert result.exit_code == 0, result.output
    assert "already holds an adapter bundle finished with these settings" in result.output
    assert f"adapter bundle left as it was in {out}" in result.output
    assert (out / "adapter.safetensors").read_bytes() == weights


def test_other_settings_into_a_finished_bundle_exit_2_and_keep_it(finished, montage_yaml: Path, dataset: Path,
                                                                  checkpoint: str) -> None:
    out, weights = finished
    result = _adapt(montage_yaml, dataset, out, checkpoint, "--max-steps", "2")
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1
    assert "max_steps 3 there, 2 now" in result.output and "--overwrite" in result.output
    assert (out / "adapter.safetensors").read_bytes() == weights


def test_overwrite_replaces_a_finished_bundle(finished, montage_yaml: Path, dataset: Path, checkpoint: str) -> None:
    import json

    out, _ = finished
    result = _adapt(montage_yaml, dataset, out, checkpoint, "--max-steps", "2", "--overwrite")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "adapter.json").read_text())["training"]["max_steps"] == 2


def test_python_api_rerun_returns_the_finished_bundle(finished, montage_yaml: Path, dataset: Path,
                                                      checkpoint: str) -> None:
    import passport_kit as pk
    from passport_kit.errors import ConfigError

    out, weights = finished
    same = dict(montage=str(montage_yaml), data=dataset, checkpoint=checkpoint, batch_size=8, out=out)
    result = pk.adapt(max_steps=3, **same)
    assert result.reused and result.trainable and result.bundle == out
    with pytest.raises(ConfigError, match="already holds a finished adapter bundle"):
        pk.adapt(max_steps=4, **same)
    assert (out / "adapter.safetensors").read_bytes() == weights
