"""End to end through the CLI on a tiny dataset with tiny checkpoints: adapt → predict, check, evaluate."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.checkpoint import load_base_checkpoint

from conftest import make_dataset, save_tiny_checkpoint

RUN = CliRunner()


def _adapt(montage_yaml: Path, dataset: Path, out: Path, checkpoint: str, *extra: str):
    return RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                            checkpoint, "--max-steps", "3", "--batch-size", "8", "--out", str(out),
                            "--no-progress", *extra])


def test_adapt_cli_writes_bundle(tmp_path: Path, montage_yaml: Path, dataset: Path, checkpoint: str) -> None:
    result = _adapt(montage_yaml, dataset, tmp_path / "adapter", checkpoint)
    assert result.exit_code == 0, result.output
    assert "adapter bundle written to" in result.output and "trainable params" in result.output
    assert {"adapter.json", "adapter.safetensors", "history.csv"} <= {p.name for p in (tmp_path / "adapter").iterdir()}


def test_bundle_records_base_classes_and_budget(bundle: Path) -> None:
    meta = json.loads((bundle / "adapter.json").read_text())
    assert meta["base_name"] == "tiny-mlp" and meta["classes"] == ["W", "N1", "N2", "N3", "REM"]
    assert meta["metrics"]["steps"] == 3 and meta["preprocessing"]["window_seconds"] == 30


def test_bundle_holds_only_adapter_and_head_tensors(bundle: Path) -> None:
    names = set(load_file(bundle / "adapter.safetensors"))
    assert names and all(n.startswith(("head.", "backbone.patch_embedding.positional_encoding.mixture."))
                         for n in names)
    assert any(n.startswith("head.") for n in names) and any(".mixture." in n for n in names)


def test_adapt_leaves_base_tensors_untouched(bundle: Path, checkpoint: str) -> None:
    from passport_kit.checkpoint import load_adapter_bundle

    before = load_base_checkpoint(checkpoint)[0].state_dict()
    model, _ = load_adapter_bundle(bundle)
    adapted = set(load_file(bundle / "adapter.safetensors"))
    for name, value in model.backbone.state_dict().items():
        if f"backbone.{name}" not in adapted:
            assert torch.equal(value, before[name]), name
    # ... and the adapted tensors did move.
    assert any(not torch.equal(model.backbone.state_dict()[n.removeprefix("backbone.")],
                               before[n.removeprefix("backbone.")]) for n in adapted if n.startswith("backbone."))


def test_predict_plot_format_pdf(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s02.edf"), "--out",
                              str(tmp_path / "pred"), "--plot-format", "pdf"])
    assert result.exit_code == 0, result.output
    plot = tmp_path / "pred" / "s02" / "s02_hypnogram.pdf"
    assert plot.read_bytes()[:4] == b"%PDF" and not plot.with_suffix(".png").exists()


def test_predict_refuses_a_plot_format_it_cannot_write(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s02.edf"), "--out",
                              str(tmp_path / "pred"), "--plot-format", "jpg"])
    assert result.exit_code == 2 and "'jpg' is not one of 'png', 'svg', 'pdf'" in result.output
    assert not (tmp_path / "pred").exists()


def test_predict_writes_every_report(bundle: Path, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred"
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s02.edf"), "--out", str(out),
                              "--edf-annotations"])
    assert result.exit_code == 0, result.output
    folder = out / "s02"
    names = {p.name for p in folder.iterdir()}
    assert names == {"s02_predictions.csv", "s02_events.tsv", "s02_summary.json", "s02_hypnogram.json",
                     "s02_hypnogram.png", "s02_annotations.edf", "s02_channel_quality.tsv"}
    rows = list(csv.DictReader((folder / "s02_predictions.csv").open()))
    assert len(rows) == 10 and {"onset_s", "class", "p_W", "p_REM", "confidence"} <= set(rows[0])
    summary = json.loads((folder / "s02_summary.json").read_text())
    # A 3-step adapter may be too unsure for statistics; then the summary and the output say why.
    withheld = summary["statistics_withheld"]
    assert (summary["sleep_statistics"] is None) == bool(withheld)
    assert ("statistics withheld" if withheld else "TST") in result.output
    assert json.loads((folder / "s02_hypnogram.json").read_text())["sleep_statistics"]["TIB"] == pytest.approx(5.0)


def test_predict_refuses_recording_missing_montage_channels(bundle: Path, tmp_path: Path) -> None:
    other = make_dataset(tmp_path / "other", n_subjects=1, n_epochs=2, names=["EL1", "XX9", "YY9"])
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(other / "s01.edf"), "--out",
                              str(tmp_path / "p")])
    assert result.exit_code == 2
    assert "ER1" in result.output and "EL2" in result.output and "not found" in result.output


def test_predict_refuses_wrong_base_checkpoint(bundle: Path, dataset: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # A home whose 'tiny-mlp' has other weights: the recorded SHA-256 no longer matches.
    monkeypatch.setenv("PASSPORT_KIT_HOME", str(tmp_path / "other_home"))
    save_tiny_checkpoint("tiny-mlp", seed=1)
    result = RUN.invoke(app, ["predict", "--adapter", str(bundle), str(dataset / "s01.edf"), "--out",
                              str(tmp_path / "p")])
    assert result.exit_code == 2
    assert "SHA-256" in result.output and "tiny-mlp" in result.output


def test_check_prints_its_report(montage_yaml: Path, dataset: Path, checkpoint: str) -> None:
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint])
    assert result.exit_code == 0, result.output
    for contract in ("channels", "sampling & shapes", "amplitude", "channel quality", "labels", "forward/backward",
                     "probe read-out"):
        assert f"] {contract}:" in result.output
    assert "[ok  ] channel quality: no bad channels in 4 recording(s)" in result.output
    assert "check passed" in result.output


def test_check_fails_on_unmappable_channels(tmp_path: Path, montage_yaml: Path, checkpoint: str) -> None:
    other = make_dataset(tmp_path / "other", n_subjects=1, n_epochs=2, names=["EL1", "XX9", "YY9"])
    result = RUN.invoke(app, ["check", "--montage", str(montage_yaml), "--data", str(other), "--checkpoint",
                              checkpoint])
    assert result.exit_code == 2
    assert "[FAIL] channels" in result.output and "check failed for: channels" in result.output


def test_evaluate_loso_writes_per_subject_table(tmp_path: Path, montage_yaml: Path, dataset: Path) -> None:
    out = tmp_path / "eval"
    result = RUN.invoke(app, ["evaluate", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              "tiny-mlp", "--checkpoint", "tiny-acpe", "--test-subject", "s01", "--test-subject",
                              "s02", "--max-steps", "2", "--batch-size", "8", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "per_subject.csv").open()))
    assert [r["subject"] for r in rows] == ["s01", "s02", "mean"]
    assert {"tiny-mlp", "tiny-acpe"} <= set(rows[0])
    assert (out / "confusion_tiny-mlp.png").is_file() and (out / "summary.json").is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["--protocol", "kfold"], "protocol"),
    (["--subjects-sweep", "1,x"], "--subjects-sweep"),
    (["--metric", "auc"], "unknown metric"),
    (["--balance", "oversample"], "balance"),
    (["--lr", "-1"], "lr"),
])
def test_evaluate_bad_options_are_one_line_errors(args: list[str], message: str, montage_yaml: Path,
                                                  dataset: Path, tmp_path: Path) -> None:
    result = RUN.invoke(app, ["evaluate", "--montage", str(montage_yaml), "--data", str(dataset), "--out",
                              str(tmp_path / "e"), *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_adapt_refuses_out_folder_with_foreign_files(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                     checkpoint: str) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("keep me")
    result = _adapt(montage_yaml, dataset, tmp_path / "busy", checkpoint)
    assert result.exit_code == 2 and "notes.txt" in result.output
    assert (tmp_path / "busy" / "notes.txt").read_text() == "keep me"


def test_adapt_defaults_out_to_runs_montage(tmp_path: Path, montage_yaml: Path, dataset: Path, checkpoint: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = RUN.invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              checkpoint, "--max-steps", "1", "--batch-size", "4", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "runs" / "tiny-ear" / "adapter.json").is_file()
    assert (tmp_path / "runs" / "tiny-ear" / "history.png").is_file()
