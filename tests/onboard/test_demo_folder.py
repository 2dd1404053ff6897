"""The demo owns its folder: a second run replaces it whole (issue 34, finding 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from passport_kit.errors import ConfigError
from passport_kit.demo import MARKER, _fresh_folder

SETTINGS = {"montage": "eesm17-ear", "subjects": 4, "hours": 2.0, "seed": 0, "version": "x"}


def _earlier_run(out: Path, settings: dict | None = SETTINGS) -> None:
    import json

    (out / "data").mkdir(parents=True)
    (out / "data" / "dataset.yaml").write_text("task: sleep-staging\n")
    (out / "predictions" / "s04").mkdir(parents=True)
    (out / "predictions" / "s04" / "s04_summary.json").write_text("{}")
    if settings is not None:
        (out / MARKER).write_text(json.dumps(settings))


def test_a_second_run_starts_from_an_empty_folder_and_reuses_the_same_data(tmp_path: Path) -> None:
    out = tmp_path / "passport-demo"
    _earlier_run(out)
    with _fresh_folder(out, SETTINGS) as reused:
        assert reused == out / "data" and (out / "data" / "dataset.yaml").is_file()
        assert not (out / "predictions").exists()          # predict writes into an empty folder: nothing to refuse
    assert sorted(p.name for p in tmp_path.iterdir()) == ["passport-demo"]   # the old one is gone


def test_other_settings_simulate_anew(tmp_path: Path) -> None:
    out = tmp_path / "passport-demo"
    _earlier_run(out)
    with _fresh_folder(out, SETTINGS | {"subjects": 3}) as reused:
        assert reused is None and not (out / "data").exists()


def test_a_failed_run_puts_the_earlier_folder_back(tmp_path: Path) -> None:
    out = tmp_path / "passport-demo"
    _earlier_run(out)
    with pytest.raises(KeyboardInterrupt):
        with _fresh_folder(out, SETTINGS):
            (out / "evaluation").mkdir()
            raise KeyboardInterrupt
    assert (out / "predictions" / "s04" / "s04_summary.json").is_file()
    assert (out / "data" / "dataset.yaml").is_file() and not (out / "evaluation").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["passport-demo"]


def test_an_earlier_demo_without_the_marker_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "passport-demo"
    _earlier_run(out, settings=None)
    with _fresh_folder(out, SETTINGS) as reused:
        assert reused is None
    assert not (out / "predictions").exists()


def test_a_folder_the_demo_did_not_write_is_refused_and_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("...")
    with pytest.raises(ConfigError, match="holds files the demo did not write"):
        with _fresh_folder(out, SETTINGS):
            pass
    assert (out / "chapter1.tex").read_text() == "..."
