"""Progress where users wait (issue 34, finding 4): bars with elapsed time and an estimate, on a terminal only."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from passport_kit.cli import verbosity
from passport_kit.cli.app import app
from passport_kit.cli.progress import progress_display

RUN = CliRunner()


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=160, color_system=None), out


def test_a_bar_shows_elapsed_time_and_an_estimate() -> None:
    console, out = _terminal()
    verbosity.set_level(verbosity.NORMAL)
    with progress_display(console=console) as display:
        assert display.drawn
        steps = display.steps("adapt")
        for step in range(1, 4):
            steps(step, 3, {"val": 0.7, "metric": "kappa"})
        display._progress.refresh()
        text = out.getvalue()
    assert "adapt" in text and "3/3" in text and "cross-validated kappa 0.700" in text
    assert "elapsed" in text and "left" in text and "0:00:0" in text


def test_a_new_stage_restarts_the_count_and_the_estimate() -> None:
    console, _ = _terminal()
    verbosity.set_level(verbosity.NORMAL)
    with progress_display(console=console) as display:
        steps = display.steps("adapt")
        steps(5, 5, {"stage": "read-out, inner folds"})
        steps(1, 8, {"stage": "LP-FT, inner folds"})
        tasks = display._progress.tasks
        assert [(t.description, t.completed, t.total) for t in tasks] == [("adapt: LP-FT, inner folds", 1, 8)]


def test_nothing_is_drawn_under_quiet_or_off_a_terminal() -> None:
    console, out = _terminal()
    verbosity.set_level(verbosity.QUIET)
    try:
        with progress_display(console=console) as display:
            display.steps("adapt")(1, 2, {})
        assert not display.drawn and out.getvalue() == ""
    finally:
        verbosity.set_level(verbosity.NORMAL)
    plain = io.StringIO()
    with progress_display(console=Console(file=plain, force_terminal=False)) as display:
        display.bar("recordings")(0, 2, "s01.edf")
    assert not display.drawn and plain.getvalue() == ""


def test_predict_over_a_folder_draws_no_bar_into_a_log(tmp_path: Path, bundle: Path, dataset: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), str(dataset / "s02.edf"),
                              "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert "elapsed" not in result.output and "━" not in result.output


def test_a_log_gets_one_line_per_news_not_per_call(capsys: pytest.CaptureFixture[str]) -> None:
    from passport_kit.cli.onboard import _step_bar

    verbosity.set_level(verbosity.NORMAL)
    with _step_bar(True, "adapt") as bar:  # pytest's stderr is no terminal: plain lines
        for _ in range(3):
            bar(0, 1, {"rung": "band power"})
        bar(0, 1, {"rung": "backbone features"})
        bar(1, 1, {"val": 0.8, "metric": "kappa"})
    assert capsys.readouterr().err.splitlines() == [
        "adapt: trying band power (rung 1 of 1)", "adapt: trying backbone features (rung 1 of 1)",
        "adapt: ladder done  cross-validated kappa 0.800"]


def test_a_ladder_in_a_log_names_rungs_not_steps_that_jump(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 58: 'step 0/7 -> 4/7 -> 7/7' (the ladder reports only the rungs it scores)."""
    from passport_kit.cli.onboard import _step_bar

    verbosity.set_level(verbosity.NORMAL)
    with _step_bar(True, "adapt") as bar:
        bar(0, 7, {"rung": "bandpower"})
        bar(4, 7, {"rung": "backbone"})
        bar(7, 7, {"val": 0.5, "metric": "kappa"})
        bar(3, 3, {"stage": "LP-FT", "loss": 0.25})
    assert capsys.readouterr().err.splitlines() == [
        "adapt: trying bandpower (rung 1 of 7)", "adapt: trying backbone (rung 5 of 7)",
        "adapt: ladder done  cross-validated kappa 0.500", "adapt (LP-FT): step 3/3  loss 0.250"]
