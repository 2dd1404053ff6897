"""benchmarks/transfer_ear.py: the --checkpoints and --recipe options (end to end: slow)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import transfer_ear


@pytest.mark.parametrize(
    ("text", "expected"),
    [("passport-small-acpe", {"passport-small-acpe": "passport-small-acpe"}),
     ("a=passport-small-acpe, up=runs/acpe-up/", {"a": "passport-small-acpe", "up": "runs/acpe-up/"}),
     ("runs/acpe-up/,mlp=passport-small-mlp", {"acpe-up": "runs/acpe-up/", "mlp": "passport-small-mlp"})],
)
def test_parse_checkpoints_labels_each_base(text: str, expected: dict[str, str]) -> None:
    assert transfer_ear.parse_checkpoints(text) == expected


@pytest.mark.parametrize(("text", "message"), [("a=x,a=y", "given twice"), ("=x", "LABEL=NAME_OR_DIR"), (",", "at least one")])
def test_parse_checkpoints_rejects_unclear_lists(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        transfer_ear.parse_checkpoints(text)


def test_checkpoints_and_shipped_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        transfer_ear.main(["--shipped", "--checkpoints", "passport-small-acpe"])
    assert "give one" in capsys.readouterr().err


@pytest.mark.slow  # adapts a shipped checkpoint twice, 2 steps per fold, on 9 quarter-hour nights: minutes
def test_labelled_checkpoints_get_their_own_columns_and_the_first_is_the_reference(tmp_path: Path) -> None:
    out = tmp_path / "ear"
    argv = ["--quick", "--hours", "0.25", "--threads", "1", "--recipe", "finetune", "--ft-steps", "2",
            "--out", str(out), "--checkpoints", "base=passport-small-acpe,same-base=passport-small-acpe"]
    assert transfer_ear.main(argv) == 0
    table = json.loads((out / "per_subject.json").read_text())
    assert table[-1]["subject"] == "mean" and {"base", "same-base"} <= table[-1].keys()
    diffs = json.loads((out / "difference_to_base.json").read_text())
    assert {d["method"] for d in diffs} == {"same-base"}
    assert all(abs(d["kappa_minus_base"]) < 1e-9 for d in diffs)  # the same base, recipe and seeds: no difference
    assert json.loads((out / "run.json").read_text())["settings"]["recipe"] == "finetune"
