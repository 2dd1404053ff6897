"""Papercuts a new user found (issue 34, finding 10): each one a behaviour, each with its test."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.errors import ConfigError, DataError
from tests.onboard.edf_helpers import rhythm_edf as _edf

RUN = CliRunner()


def test_a_rule_between_options_reads_without_pydantic_words(tmp_path: Path) -> None:
    from passport_kit.onboard.adapt import make_config

    with pytest.raises(ConfigError) as caught:
        make_config(montage="eesm17-ear", data=tmp_path, recipe="probe", lr=0.1)
    message = str(caught.value)
    assert message.startswith("invalid adapt options: recipe 'probe' ignores lr")
    assert "Value error" not in message and "option options" not in message


def test_the_csv_rate_message_has_no_stray_apostrophe(tmp_path: Path) -> None:
    from passport_kit.signals.readers import read_recording

    path = tmp_path / "muse.csv"
    rows = ["timestamps,TP9,AF7"] + [f"{k / 256:.6f},{k % 7},{k % 5}" for k in range(256 * 4)]
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(DataError) as caught:
        read_recording(path, sfreq=100.0)
    assert str(caught.value).endswith("(or drop 'sfreq' to use the timestamps)")


def test_data_inspect_takes_the_rename_its_error_suggests(tmp_path: Path, montage_yaml: Path) -> None:
    edf = _edf(tmp_path / "r.edf", ["EL1", "ER1", "Lx"], seed=0, epochs=2)
    result = RUN.invoke(app, ["data", "inspect", str(edf), "--montage", str(montage_yaml)])
    assert result.exit_code == 2
    assert "--rename EL2='<name in file>'" in result.output and "dataset.yaml" not in result.output
    result = RUN.invoke(app, ["data", "inspect", str(edf), "--montage", str(montage_yaml), "--rename", "EL2=Lx"])
    assert result.exit_code == 0, result.output
    assert "EL2" in result.output and "← Lx" in result.output


@pytest.mark.parametrize(("n", "noun", "words"), [(1, "channel", "1 channel"), (2, "channel", "2 channels"),
                                                  (0, "warning", "0 warnings"), (1, "warning", "1 warning"),
                                                  (3, "class", "3 classes")])
def test_counts_take_the_number_of_their_noun(n: int, noun: str, words: str) -> None:
    from passport_kit.wording import counted

    assert counted(n, noun) == words


def test_check_report_counts_one_warning_as_one_warning() -> None:
    from passport_kit.onboard.check import CheckReport

    report = CheckReport()
    report.add("montage", "ok", "fine")
    report.add("labels", "warn", "rare class")
    assert report.render().splitlines()[-1] == "check passed: 2 contracts, 0 failing, 1 warning"


def test_evaluate_file_names_have_no_spaces(tmp_path: Path, montage_yaml: Path, dataset: Path) -> None:
    out = tmp_path / "eval"
    result = RUN.invoke(app, ["evaluate", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                              "tiny-mlp", "--test-subject", "s01", "--recipe", "probe", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert (out / "confusion_band-power.png").is_file()
    assert [p.name for p in out.iterdir() if " " in p.name] == []


def test_montages_list_shows_descriptions_uncut() -> None:
    result = RUN.invoke(app, ["montages", "list"])
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    words = " ".join(result.output.replace("│", " ").split())
    assert "electrodes;" in words and "ELB1/ERB1" in words


def test_adapt_help_describes_the_default_recipe() -> None:
    result = RUN.invoke(app, ["adapt", "--help"])
    assert "Train the mixture adapter and a head" not in result.output
    assert "cross-validation" in " ".join(result.output.split()[:60])


def test_the_readme_python_snippet_prints_no_cv_grid() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    snippet = readme.split("```python", 1)[1].split("```", 1)[0]
    assert 'metrics["selection"])' not in snippet and 'metrics["selection"],' not in snippet


def test_importing_the_hypnogram_loads_neither_the_simulator_nor_filelock() -> None:
    import subprocess
    import sys

    code = ("import sys; from passport_kit.sleep.hypnogram import Hypnogram; "
            "print(sorted(m for m in sys.modules if m.startswith(('filelock', 'passport_kit.signals.simulator', "
            "'torch', 'mne'))))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_the_package_lists_its_api_and_montage_is_one_of_it() -> None:
    import passport_kit as pk

    for name in ("adapt", "evaluate", "predict", "check", "Hypnogram", "Montage", "register_montage"):
        assert name in dir(pk)
    from passport_kit.montage import Montage

    assert pk.Montage is Montage


def test_a_one_channel_montage_is_one_channel(tmp_path: Path) -> None:
    path = tmp_path / "c3.yaml"
    path.write_text("name: one-c3\ncoordinate_frame: head\nunits: m\nreference: A2\n"
                    "channels:\n  - {name: C3, position: [-0.06, 0.0, 0.07]}\n")
    result = RUN.invoke(app, ["register-montage", str(path)])
    assert result.exit_code == 0, result.output
    assert "'one-c3': 1 channel, hash" in result.output
