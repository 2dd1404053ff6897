"""What adapt says while and after it runs: validation, interruption, progress, poor contacts, notch (issue 19, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app

from conftest import make_dataset

RUN = CliRunner()


def _adapt(montage_yaml: Path, data: Path, out: Path, *extra: str):
    return RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(data), "--checkpoint", "tiny-mlp",
                            "--batch-size", "8", "--out", str(out), *extra])


def test_finetune_without_a_validation_subject_warns(montage_yaml: Path, tmp_path: Path) -> None:
    one = make_dataset(tmp_path / "one", n_subjects=1, n_epochs=6)
    result = _adapt(montage_yaml, one, tmp_path / "run", "--recipe", "finetune", "--max-steps", "2", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "warning: no validation subject (1 training subject(s) in the data)" in result.output


def test_without_a_terminal_progress_is_printed_as_lines(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    # CliRunner's stderr is no terminal, as in a log file or a batch job.
    result = _adapt(montage_yaml, dataset, tmp_path / "run", "--recipe", "finetune", "--max-steps", "3")
    assert result.exit_code == 0, result.output
    assert "adapt: step 1/3  loss" in result.output and "adapt: step 3/3  loss" in result.output


def test_a_resumed_run_says_from_which_step(capsys: pytest.CaptureFixture[str]) -> None:
    from passport_kit.cli.onboard import _step_bar

    with _step_bar(True, "adapt") as update:
        update(41, 100, {"loss": 1.0})
    assert "adapt: resuming from step 40 of 100" in capsys.readouterr().err


@pytest.mark.parametrize(("state", "expected"), [(True, "run the same command to continue from it"),
                                                 (False, "interrupted before the first evaluation, so nothing was "
                                                         "saved")])
def test_interrupted_note_says_what_the_same_command_will_do(tmp_path: Path, state: bool, expected: str) -> None:
    from passport_kit.onboard.adapt import STATE_FILE, interrupted_note

    if state:
        (tmp_path / STATE_FILE).write_bytes(b"state")
    assert expected in interrupted_note(tmp_path, "eesm17-ear")


def test_interrupted_note_finds_the_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from passport_kit.onboard.adapt import interrupted_note

    monkeypatch.chdir(tmp_path)
    assert "nothing was saved in runs/eesm17-ear" in interrupted_note(None, "eesm17-ear")


def test_ctrl_c_before_the_first_evaluation_does_not_promise_a_resume(montage_yaml: Path, dataset: Path,
                                                                     tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import passport_kit.onboard.adapt as adapt_module

    def stopped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - adapt's signature
        raise KeyboardInterrupt

    monkeypatch.setattr(adapt_module, "adapt", stopped)
    result = _adapt(montage_yaml, dataset, tmp_path / "run", "--no-progress")
    assert result.exit_code == 130
    assert "the same command starts over" in result.output and "continue" not in result.output


@pytest.mark.parametrize(("notch", "warned"), [("55", True), ("60", False), ("none", False)])
def test_a_notch_off_the_notch_frequencies_is_warned_about(montage_yaml: Path, dataset: Path, notch: str,
                                                           warned: bool) -> None:
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              "tiny-mlp", "--notch", notch])
    assert result.exit_code == 0, result.output
    assert ("[WARN] preprocessing: notch at 55 Hz: mains power is 50 or 60 Hz" in result.output) == warned


def test_progress_of_the_probe_recipe_has_no_loss_to_show(montage_yaml: Path, dataset: Path, tmp_path: Path) -> None:
    # The ladder reports its rungs, then its expected score only; the progress line must not need a loss.
    result = _adapt(montage_yaml, dataset, tmp_path / "run")
    assert result.exit_code == 0, result.output
    # a sleep task climbs the stager-first order: its rungs (issue 43; the textbook path's model last, issue 55),
    # named by place, not counted as steps
    from passport_kit.onboard.rungs import STAGER_FIRST

    assert f"of {len(STAGER_FIRST)})" in result.output and "adapt: ladder done  cross-validated kappa" in result.output


def test_adapt_records_and_prints_the_bundles_licences(bundle: Path) -> None:
    """Issue 58: the licences of what a bundle contains (passport-kit's, its base's), in adapter.json."""
    from passport_kit.checkpoint import read_adapter_meta
    from passport_kit.cli.onboard import licence_lines

    licences = read_adapter_meta(bundle).licences
    assert licences["passport-kit (code and the adapter's own tensors)"] == "MIT"
    assert licences["base checkpoint tiny-mlp"].startswith("not stated")   # a test checkpoint states none
    assert licence_lines(bundle) == [f"licences: passport-kit (code and the adapter's own tensors): MIT; base "
                                     f"checkpoint tiny-mlp: {licences['base checkpoint tiny-mlp']}"]
