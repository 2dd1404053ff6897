"""What a new user found, round 4 (issue 45): classifications answer, scores compare, plots agree with the terminal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from passport_kit.inference.night_report import AdapterFacts, TrainingChecks, write_prediction
from passport_kit.signals import PreprocessConfig
from passport_kit.signals.recording import RecordingWindows


def _night(n: int, *, flagged: bool = False, seconds: float = 30.0) -> RecordingWindows:
    """Return ``n`` empty windows (no channels), every one flagged by the signal checks when ``flagged``."""
    return RecordingWindows(x=np.zeros((n, 0, 0, 0), np.float32), flags=np.full((n, 2), int(flagged), np.uint8),
                            onset_s=np.arange(n) * seconds, quality=None, config=PreprocessConfig())


def _write(folder: Path, proba: np.ndarray, classes: list[str], *, flagged: bool = False, task: str | None = None,
           seconds: float = 30.0):  # noqa: ANN202 - a PredictionResult
    task = task or ("sleep-staging" if len(classes) == 5 else "classification")
    return write_prediction(folder, Path("rec.edf"), proba, _night(len(proba), flagged=flagged, seconds=seconds),
                            adapter=AdapterFacts(classes=classes, window_seconds=seconds, task=task,
                                                 adapter=Path("a"), base_name="b"))


def _eegmat_like(n: int = 40, seed: int = 0) -> np.ndarray:
    """Return ``(n, 2)`` probabilities as a temperature-scaled two-class adapter gives them: 0.52-0.66, mostly task."""
    rng = np.random.default_rng(seed)
    top = rng.uniform(0.52, 0.66, n)
    task_first = rng.random(n) < 0.7
    return np.where(task_first[:, None], np.stack([1 - top, top], 1), np.stack([top, 1 - top], 1))


def test_a_classification_is_answered_over_calibrated_windows(tmp_path: Path) -> None:
    result = _write(tmp_path, _eegmat_like(), ["rest", "arithmetic"])
    s = result.summary
    assert s["statistics_withheld"] is None and s["recording_class"] == "arithmetic"
    # Under a tenth of the way from chance: most windows of a sound two-class model are not "low confidence".
    assert s["low_confidence_below"] == pytest.approx(0.55)
    assert s["low_confidence_windows"] < len(result.proba) / 2
    assert "hypnogram_plot" not in result.files


def test_a_classification_is_withheld_only_for_flagged_windows_and_not_in_sleep_words(tmp_path: Path) -> None:
    result = _write(tmp_path, _eegmat_like(), ["rest", "arithmetic"], flagged=True)
    reason = result.summary["statistics_withheld"]
    assert result.summary["recording_class"] is None
    assert "flagged by the signal checks" in reason and "the recording's class over them" in reason
    assert "statistics" not in reason


def test_sleep_staging_keeps_its_third_of_the_way_rule(tmp_path: Path) -> None:
    near_uniform = np.full((6, 5), 0.2) + np.array([0.04, -0.01, -0.01, -0.01, -0.01])
    result = _write(tmp_path, near_uniform, ["W", "N1", "N2", "N3", "REM"])
    assert result.summary["low_confidence_below"] == pytest.approx(0.2 + 0.8 / 3, abs=1e-4)
    assert "6 of 6 windows are low confidence" in result.summary["statistics_withheld"]


def _selection(metric: str = "auroc") -> dict:
    rungs = [{"rung": "bandpower", "tried": True, "taken": True, "score": 0.74, "gain": None,
              "standard_error": None, "reason": "the textbook"}]
    return {"metric": metric, "ladder": rungs, "method": "5-fold cross-validation; ...", "chosen": "bandpower",
            "expected": {"score": 0.747, "folds": 5, "kind": "subjects"}, "calibration": {}}


def test_adapt_gives_the_decision_metrics_beside_the_ranking_metric_and_says_they_are_near_chance() -> None:
    from passport_kit.checkpoint.adapter_metrics import ClassificationMetrics
    from passport_kit.cli.onboard import ladder_lines

    validation = ClassificationMetrics.model_construct(kappa=0.159, balanced_accuracy=0.600, auroc=0.75)
    lines = ladder_lines(_selection(), validation=validation)
    expected = next(line for line in lines if line.startswith("expected on new subjects"))
    assert "auroc 0.747 to rank windows; its decisions: balanced accuracy 0.600, kappa 0.159" in expected
    assert any(line.startswith("warning: the model's class decisions are near chance") for line in lines)
    sound = ladder_lines(_selection("kappa"), validation=ClassificationMetrics.model_construct(
        kappa=0.9, balanced_accuracy=0.88))
    assert "kappa 0.747, balanced accuracy 0.880 (cross-validated" in sound[1]
    assert not any("near chance" in line for line in sound)


def test_evaluate_headlines_the_metrics_adapt_gives() -> None:
    from passport_kit.cli.onboard import headline_lines

    summary = {"band power": {"auroc": {"mean": 0.75}, "balanced_accuracy": {"mean": 0.6}, "kappa": {"mean": 0.159}},
               "sleep": {"auroc": {"mean": None}, "balanced_accuracy": {"mean": 0.88}, "kappa": {"mean": 0.89}}}
    lines = headline_lines(summary)
    assert lines[0].startswith("band power: auroc 0.750, balanced accuracy 0.600, kappa 0.159")
    assert "near chance" in lines[0]
    assert lines[1] == "sleep: balanced accuracy 0.880, kappa 0.890 (means over held-out subjects)"


def test_predict_prints_a_classification_without_sleep_words_or_a_promised_plot(tmp_path: Path) -> None:
    from passport_kit.cli.night_lines import class_line

    result = _write(tmp_path, np.array([[0.3, 0.7], [0.48, 0.52], [0.2, 0.8]]), ["rest", "arithmetic"])
    line = class_line(result.summary)
    assert line.startswith("class arithmetic (mean probability 0.67; windows: 3 arithmetic, 0 rest)")
    close = _write(tmp_path / "close", np.array([[0.52, 0.48], [0.44, 0.56], [0.5, 0.5]]), ["rest", "arithmetic"])
    assert "(mean probability 0.51; uncertain;" in class_line(close.summary)


def test_zero_shot_says_which_channel_it_staged_and_warns_of_a_low_rate_in_its_own_words(tmp_path: Path) -> None:
    from passport_kit.errors import PassportWarning
    from passport_kit.inference.zero_shot import predict_zero_shot

    names = ["F3", "F4", "C3", "C4", "O1", "O2"]
    signal = np.random.default_rng(0).standard_normal((6, 100 * 600)) * 20e-6   # volts, 10 min at 100 Hz
    with pytest.warns(PassportWarning) as caught:
        result = predict_zero_shot("tuh-standard", (signal, 100.0, names), tmp_path / "zs")[0]
    low_rate = [str(w.message) for w in caught if "sampled at 100 Hz" in str(w.message)]
    assert low_rate and "the stager yasa staged channel C" in low_rate[0]
    assert "adapter" not in low_rate[0] and "200 Hz" not in low_rate[0]
    assert result.summary["zero_shot"]["stager"] == "yasa" and result.summary["zero_shot"]["eeg"] in ("C3", "C4")


def test_every_option_of_every_command_has_help_text() -> None:
    from typer import main as typer_main

    from passport_kit.cli.app import app

    bare = []

    def walk(command, path: list[str]) -> None:  # noqa: ANN001 - a click command or group
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])
        bare.extend(f"{' '.join(path)} {p.opts[0]}" for p in getattr(command, "params", [])
                    if type(p).__name__.endswith("Option") and not p.help and not getattr(p, "hidden", False))

    walk(typer_main.get_command(app), [])
    assert not bare


def test_a_bad_option_is_named_as_the_command_line_spells_it() -> None:
    from passport_kit.errors import ConfigError
    from passport_kit.onboard.adapt import make_config

    with pytest.raises(ConfigError, match=r"invalid adapt option --batch-size \(batch_size\): "):
        make_config(montage="tuh-standard", data=Path("d"), batch_size=0)


@pytest.mark.parametrize(("selection", "inputs"), [({"backbone_weight": 0.0, "prior_weight": 0.0}, "on band power;"),
                                                    ({"backbone_weight": 0.0, "prior_weight": 1.0},
                                                     "on band power and the sleep stager's probabilities;")])
def test_no_trainable_params_line_when_the_model_shipped_does_not_use_the_backbone(selection: dict,
                                                                                   inputs: str) -> None:
    import torch

    from passport_kit.checkpoint.adapter_metrics import LadderSelection
    from passport_kit.onboard.recipes import get_recipe

    model = torch.nn.Module()
    model.head = torch.nn.Linear(4, 2)
    line = get_recipe("auto").fitted_summary(model, LadderSelection(metric="auroc", **selection),
                                             "trainable params: 28,836 || all params: 901,836")
    assert inputs in line and "trainable params" not in line and "not used by the model shipped" in line
    with_backbone = get_recipe("auto").fitted_summary(model, LadderSelection(metric="auroc", backbone_weight=0.1),
                                                      "trainable params: 1")
    assert "trainable params: 1" in with_backbone


def test_the_package_licence_is_an_spdx_string() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"  # a table ({text = ...}) prints setuptools' deprecation block on install


def test_one_stray_n1_epoch_is_sleep_onset_but_not_persistent_sleep() -> None:
    from passport_kit.sleep.hypnogram import Hypnogram

    stages = ["W"] * 4 + ["N1"] + ["W"] * 5 + ["N2"] * 25 + ["W"] * 2
    stats = Hypnogram(stages).sleep_statistics()
    assert stats["SOL"] == 2.0                       # the stray N1 epoch, 4 epochs in
    assert stats["LPS"] == 5.0 and stats["SOL_5min"] == 5.0   # the first 10 (5) min of uninterrupted sleep
    assert Hypnogram(["W", "N1", "N2", "W"]).sleep_statistics()["LPS"] is None


def _svg_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.fixture
def svg_text_kept():  # noqa: ANN201 - a fixture
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text in the SVG, to be read back
        yield


def _short_night_with_clock(folder: Path, proba: np.ndarray, withheld_by_distribution: bool = False):  # noqa: ANN202
    from datetime import datetime

    from passport_kit.inference.predict import OutputOptions
    from passport_kit.signals.distribution import DistributionVerdict

    n = len(proba)
    night = RecordingWindows(x=np.zeros((n, 0, 0, 0), np.float32), flags=np.zeros((n, 2), np.uint8),
                             onset_s=np.arange(n) * 30.0, quality=None, config=PreprocessConfig(),
                             start=datetime(1985, 1, 1, 14, 45, 33))
    verdict = DistributionVerdict(distance=0.1, channel_distance={}, amplitude_ratio=1.0, correlation_distance=2.5)
    return write_prediction(folder, Path("rec.edf"), proba, night, output=OutputOptions(plot_format="svg"),
                            checks=TrainingChecks(distribution=verdict if withheld_by_distribution else None),
                            adapter=AdapterFacts(classes=["W", "N1", "N2", "N3", "REM"], window_seconds=30.0,
                                                 task="sleep-staging", adapter=Path("a"), base_name="b"))


def test_the_plot_says_what_the_terminal_says(tmp_path: Path, svg_text_kept: None) -> None:
    import re

    sure = np.array([0.05, 0.05, 0.8, 0.05, 0.05])
    result = _short_night_with_clock(tmp_path / "a", np.stack([sure] * 8))
    svg = _svg_text(result.files["hypnogram_plot"])
    assert "not meaningful: the recording is 4 min long" in svg      # TST/SE carry the terminal's mark
    assert "1985" not in svg and "the file gives no date" in svg     # EDF's placeholder date is not a date
    ticks = re.findall(r">(\d\d:\d\d(?::\d\d)?)<", svg)
    assert ticks and len(ticks) == len(set(ticks))                   # no '00:00 00:00 00:01'
    withheld = _short_night_with_clock(tmp_path / "b", np.stack([sure] * 8), withheld_by_distribution=True)
    svg = _svg_text(withheld.files["hypnogram_plot"])
    assert "sleep statistics withheld: the recording is unlike the adapter" in svg
    assert "most epochs are low confidence" not in svg


def test_a_lone_low_confidence_epoch_of_a_long_night_is_drawn_wider_than_a_pixel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.axes

    from passport_kit.sleep.hypnogram import Hypnogram
    from passport_kit.inference.reports import MIN_SPAN, plot_hypnogram

    n = 960   # 8 h of 30-s epochs
    proba = np.tile([0.05, 0.05, 0.8, 0.05, 0.05], (n, 1))
    proba[500] = [0.3, 0.2, 0.2, 0.15, 0.15]
    spans = []
    original = matplotlib.axes.Axes.axvspan

    def record(self, xmin, xmax, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202 - axvspan's signature
        spans.append(xmax - xmin)
        return original(self, xmin, xmax, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "axvspan", record)
    plot_hypnogram(tmp_path / "h.png", Hypnogram(["N2"] * n, proba=proba))
    assert len(spans) == 1 and spans[0] >= MIN_SPAN * 8 - 1e-9   # hours: at least MIN_SPAN of the 8-h axis


def test_pk_predict_zero_shot_takes_predicts_order_and_keywords(tmp_path: Path) -> None:
    import passport_kit as pk

    names = ["F3", "F4", "C3", "C4", "O1", "O2"]
    signal = np.random.default_rng(1).standard_normal((6, 200 * 600)) * 20e-6
    result = pk.predict_zero_shot("yasa", (signal, 200.0, names), tmp_path / "zs", montage="tuh-standard",
                                  sfreq=200.0, plot_format="svg")[0]
    assert result.files["hypnogram_plot"].suffix == ".svg" and result.summary["zero_shot"]["stager"] == "yasa"
    assert {"ReadOptions", "OutputOptions"} <= set(dir(pk))
    with pytest.raises(pk.PassportError, match="needs montage="):
        pk.predict_zero_shot("yasa", (signal, 200.0, names), tmp_path / "zs2")


def test_help_of_pk_adapt_lists_its_options() -> None:
    import inspect

    import passport_kit as pk

    params = inspect.signature(pk.adapt).parameters
    assert {"montage", "data", "out", "batch_size", "recipe"} <= set(params)
    assert "batch_size" in pk.adapt.__doc__ and "options" not in params


def test_quiet_hides_other_packages_warnings_and_mne_info(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import logging
    import warnings

    from sklearn.exceptions import InconsistentVersionWarning
    from typer.testing import CliRunner

    import passport_kit.inference.zero_shot as prediction
    from passport_kit.cli.app import app
    from passport_kit.errors import PassportWarning

    levels = []

    def noisy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - predict_zero_shot's signature
        # Another version each call: Python shows a warning once per text and place.
        note = InconsistentVersionWarning(estimator_name="LabelEncoder", current_sklearn_version="1.9.1",
                                          original_sklearn_version=f"1.5.{len(levels)}")
        warnings.warn(note)  # scikit-learn's own words: "Trying to unpickle estimator LabelEncoder ..."
        warnings.warn("ours stays", PassportWarning)
        levels.append(logging.getLogger("mne").getEffectiveLevel())
        return []

    monkeypatch.setattr(prediction, "predict_zero_shot", noisy)
    args = ["predict", "--zero-shot", "yasa", "--montage", "tuh-standard", "x.edf", "--out", str(tmp_path)]
    with warnings.catch_warnings(record=True) as shown:  # what the CLI hands on to Python's display
        warnings.simplefilter("always")
        quiet = CliRunner().invoke(app, [*args, "-q"])
        assert quiet.exit_code == 0, quiet.output
        assert "warning: ours stays" in quiet.output and levels[-1] >= logging.WARNING
        assert not [w for w in shown if w.category is InconsistentVersionWarning]
        normal = CliRunner().invoke(app, args)
        assert [w for w in shown if w.category is InconsistentVersionWarning] and levels[-1] < logging.WARNING


def test_a_recording_of_another_device_is_named_so_not_given_a_rename_per_channel() -> None:
    import mne

    from passport_kit.errors import ChannelMappingError
    from passport_kit.inference.recording import read_for_prediction
    from passport_kit.montage import resolve_montage

    raw = mne.io.RawArray(np.zeros((1, 200 * 60)), mne.create_info(["Fpz"], 200.0, "eeg"), verbose="error")
    with pytest.raises(ChannelMappingError) as info:
        read_for_prediction(Path("one.edf"), resolve_montage("tuh-19"), PreprocessConfig(), raw=raw)
    message = str(info.value)
    assert "lacks 19 of the 19 channels" in message and "another device or montage" in message
    assert "once per channel" not in message


def test_a_training_night_read_from_another_format_is_in_sample(tmp_path: Path, bundle: Path, dataset: Path) -> None:
    import mne

    from passport_kit.inference.predict import predict

    raw = mne.io.read_raw_edf(dataset / "s01.edf", preload=True, verbose="error")
    fif = tmp_path / "s01_raw.fif"
    raw.save(fif, verbose="error")          # the same signal, other bytes: no training file's hash matches
    assert predict(bundle, [fif], tmp_path / "p")[0].summary["in_sample"] is True
    other = mne.io.read_raw_edf(dataset / "s02.edf", preload=True, verbose="error")
    memory = (other.get_data(), other.info["sfreq"], other.ch_names)
    assert predict(bundle, [memory], tmp_path / "q")[0].summary["in_sample"] is True   # in memory, by its signal


def test_fingerprints_tell_another_night_from_the_same_one_rescaled() -> None:
    from passport_kit.signals.fingerprint import same_signal, training_fingerprints

    rng = np.random.default_rng(0)
    night = rng.standard_normal((30, 2, 10, 20)) * rng.uniform(0.5, 2.0, (30, 1, 1, 1))
    prints = training_fingerprints(night, np.array(["a"] * 30), np.arange(30) * 10.0)
    assert same_signal(3.0 * night, prints) == "a"           # another unit or scale: the same shape over time
    other = rng.standard_normal((30, 2, 10, 20)) * rng.uniform(0.5, 2.0, (30, 1, 1, 1))
    assert same_signal(other, prints) is None


def test_simulate_prints_no_empty_line_off_a_terminal(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from passport_kit.cli.app import app

    result = CliRunner().invoke(app, ["simulate", "--montage", "muse", "--subjects", "1", "--hours", "0.05",
                                      "--out", str(tmp_path / "sim")])
    assert result.exit_code == 0, result.output
    assert "" not in result.output.splitlines() and result.output.startswith("simulated 1 subject")
