"""What the reports say is what happened (issue 27 item 6): subject counts, seeds, windows, metric names, plots."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.cli.onboard import print_table
from passport_kit.reports import confusion_figure, history_figure
from passport_kit.onboard.evaluate import EvaluationReport, evaluate

from conftest import make_dataset

RUN = CliRunner()


def test_evaluate_counts_every_subject_the_probe_was_fitted_on(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                               checkpoint: str) -> None:
    report = evaluate(montage=str(montage_yaml), data=dataset, out=tmp_path / "ev", checkpoints=(checkpoint,),
                      test_subjects=("s01",))
    # LOSO over 4 subjects: the probe fits the other 3 (none is set aside for validation); the zero-shot stager's rows
    # (issue 56) were fitted on none.
    assert {r["n_train_subjects"] for r in report.rows if not r["method"].startswith("zero-shot")} == {3}
    assert {r["n_train_subjects"] for r in report.rows if r["method"].startswith("zero-shot")} == {0}


@pytest.mark.parametrize(("seeds", "title"), [(1, "kappa per held-out subject (one seed)"),
                                              (3, "kappa per held-out subject (mean ± SD over 3 seeds)")])
def test_evaluate_table_names_the_seeds_it_averaged(capsys: pytest.CaptureFixture, seeds: int, title: str) -> None:
    report = EvaluationReport(
        rows=[{"seed": s, "test_subject": "s01"} for s in range(seeds)],
        per_subject=[{"subject": "s01", "m": 0.5, "m_sd": 0.1 if seeds > 1 else 0.0}],
        summary={"m": {"kappa": {"mean": 0.5, "sd": 0.0}}}, files={}, metric="kappa")
    print_table(report)
    out = " ".join(capsys.readouterr().out.split())  # rich wraps the title to the table's width
    assert title in out and ("over seeds" in out) is False


def test_data_quality_scores_the_dataset_window_length(tmp_path: Path, montage_yaml: Path) -> None:
    data = make_dataset(tmp_path / "d", n_subjects=1, n_epochs=2)
    yaml = data / "dataset.yaml"
    yaml.write_text(yaml.read_text().replace("window_seconds: 30", "window_seconds: 5"))
    result = RUN.invoke(app, ["data", "quality", str(data), "--montage", str(montage_yaml)])
    assert result.exit_code == 0, result.output
    assert "12 windows of 5 s" in result.output
    result = RUN.invoke(app, ["data", "quality", str(data), "--montage", str(montage_yaml), "--window-seconds", "20"])
    assert "3 windows of 20 s" in result.output


@pytest.mark.parametrize(("options", "shown"), [([], "adapt: ladder done  cross-validated kappa "),
                                                (["--max-steps", "2"], "val kappa ")])
def test_adapt_progress_names_its_metric(tmp_path: Path, montage_yaml: Path, dataset: Path, checkpoint: str,
                                         options: list[str], shown: str) -> None:
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--out", str(tmp_path / "b"), "--batch-size", "8", *options])
    assert result.exit_code == 0, result.output
    assert shown in result.output
    assert " val 0." not in result.output


def _boxes(fig):  # noqa: ANN001, ANN202 - matplotlib objects
    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def test_confusion_axis_labels_clear_the_tick_labels() -> None:
    fig = confusion_figure([[30, 5], [8, 20]], ["rest", "arithmetic"], title="passport-small-mlp")
    renderer = _boxes(fig)
    for ax in fig.axes:
        label = ax.yaxis.label.get_window_extent(renderer)
        for other in fig.axes:  # neither its own ticks nor the other panel's
            ticks = [t.get_window_extent(renderer) for t in other.get_yticklabels() if t.get_text()]
            assert not any(label.overlaps(t) for t in ticks)


def test_history_draws_each_curve_in_its_own_panel() -> None:
    history = [{"step": s, "train_loss": 1.0 - 0.01 * s, "val_kappa": 0.5} for s in range(1, 30, 5)]
    fig = history_figure(history)
    renderer = _boxes(fig)
    assert [len(ax.get_lines()) for ax in fig.axes] == [1, 1]
    top, bottom = (ax.get_window_extent(renderer) for ax in fig.axes)
    assert not top.overlaps(bottom)
    assert len(history_figure([{"step": 1, "train_loss": 1.0}]).axes) == 1


def test_quiet_adapt_prints_results_without_progress_or_notes(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                             checkpoint: str) -> None:
    args = ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint", checkpoint]
    loud = RUN.invoke(app, [*args, "--out", str(tmp_path / "a")])
    quiet = RUN.invoke(app, [*args, "--out", str(tmp_path / "b"), "--quiet"])
    assert loud.exit_code == quiet.exit_code == 0, quiet.output
    for line in ("adapt: ladder done", "channel quality:"):
        assert line in loud.output and line not in quiet.output
    assert "adapter bundle written to" in quiet.output and "expected on new subjects: kappa" in quiet.output
