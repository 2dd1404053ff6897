"""Resuming an interrupted adapt: said with the progress display off, never silently discarded (issue 28, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from passport_kit.errors import ConfigError


def test_the_resume_line_is_printed_without_the_progress_display(capsys: pytest.CaptureFixture[str]) -> None:
    from passport_kit.cli.onboard import _step_bar

    with _step_bar(False, "adapt") as bar:
        bar(5, 8, {"loss": 0.5})
        bar(6, 8, {"loss": 0.4})
    assert capsys.readouterr().err == "adapt: resuming from step 4 of 8\n"
    with _step_bar(False, "adapt") as bar:
        bar(1, 8, {"loss": 0.5})  # a fresh run says nothing
    assert capsys.readouterr().err == ""


def test_resuming_with_another_learning_rate_is_refused(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                       checkpoint: str) -> None:
    from passport_kit.onboard.adapt import STATE_FILE, adapt

    out = tmp_path / "run"
    options = dict(montage=str(montage_yaml), data=dataset, out=out, checkpoint=checkpoint, batch_size=8,
                   max_steps=6, eval_every=2, recipe="finetune")

    def interrupt(step: int, total: int, info: dict) -> None:
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        adapt(progress=interrupt, **options)
    assert (out / STATE_FILE).is_file()
    with pytest.raises(ConfigError, match=r"interrupted adapt run with other settings \(lr 0.0001 there, 0.001 now\)"):
        adapt(**options, lr=1e-3)
    assert (out / STATE_FILE).is_file()  # kept: the interrupted command still continues it
    assert adapt(**options).metrics.steps == 6
