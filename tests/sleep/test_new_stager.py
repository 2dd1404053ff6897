"""A new stager is one file of ``passport_kit/sleep/stagers/`` and its test (issue 60): the registry lists it
wherever stagers are named, with nothing else to edit (no tuple of module names, no ``auto`` list, no help text)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: The one file: a stager that declares its words and its place in ``--prior auto`` (before YASA).
STAGER_FILE = '''
from typing import ClassVar

import numpy as np

from passport_kit.sleep.priors import STAGES, SleepPrior


class DummyStager(SleepPrior):
    name: ClassVar[str] = "dummy-test"
    licence: ClassVar[str] = "MIT"
    origin: ClassVar[str] = "a test stager, MIT"
    auto_order: ClassVar[int | None] = -1

    def night_log_proba(self, eeg_uv, sfreq, *, eog_uv=None, emg_uv=None):
        return np.log(np.full((int(len(eeg_uv) // (30 * sfreq)), len(STAGES)), 1 / len(STAGES)))
'''

#: Run in a fresh process, since help texts are made when the CLI is imported: the file's folder is one more
#: folder of the stagers package, as if the file lay in passport_kit/sleep/stagers/.
PROBE = '''
import json, sys
import passport_kit.sleep.stagers as stagers
stagers.__path__.append(sys.argv[1])
import typer.main
from typer.testing import CliRunner
import passport_kit as pk
from passport_kit.cli.app import app
from passport_kit.onboard.ladder_inputs import stager_names
from passport_kit.onboard.recipe import RecipeOptions
from passport_kit.sleep import auto_stagers, available_priors

params = {p.name: p for p in typer.main.get_command(app).commands["predict"].params}
refused = CliRunner().invoke(app, ["predict", "--zero-shot", "nosuch", "--montage", "eesm19-ear", "x.edf"])
print(json.dumps({"available": available_priors(), "auto": auto_stagers(), "auto_names": stager_names("auto"),
                  "named": stager_names("dummy-test"), "zero_shot_help": params["zero_shot"].help,
                  "prior_help": RecipeOptions.model_fields["prior"].description,
                  "keyword_doc": pk.predict_zero_shot.__doc__, "refused": [refused.exit_code, refused.output]}))
'''


def test_a_stager_file_is_listed_in_help_auto_and_the_cli_choice(tmp_path: Path) -> None:
    folder = tmp_path / "more_stagers"
    folder.mkdir()
    (folder / "dummy_stager.py").write_text(textwrap.dedent(STAGER_FILE))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                          os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", PROBE, str(folder)], capture_output=True, text=True, env=env,
                          check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["available"]["dummy-test"] is None
    assert seen["auto"][:2] == ["dummy-test", "yasa"] and seen["auto_names"] == seen["auto"]  # its declared place
    assert seen["named"] == ["dummy-test"]
    assert "labels: dummy-test (a test stager, MIT), yasa (built in, BSD-3)" in seen["zero_shot_help"]
    assert "'dummy-test' (a test stager, MIT)" in seen["prior_help"]
    assert "``dummy-test`` (a test stager, MIT)" in seen["keyword_doc"]
    code, output = seen["refused"]
    assert code == 2 and "unknown sleep prior 'nosuch'" in output and "dummy-test" in output.split("choose one of")[1]


def test_a_stager_without_a_place_in_auto_is_listed_but_not_tried_by_auto() -> None:
    from passport_kit.sleep.priors import PRIORS, SleepPrior, auto_stagers, stager_help

    class _Quiet(SleepPrior):
        name = "quiet-test"
        origin = "a test stager"

    try:
        assert "quiet-test" not in auto_stagers()
        listed = stager_help()
        assert "quiet-test (a test stager)" in listed
        assert listed.index("quiet-test") > listed.index("yasa (built in, BSD-3)")  # after those auto tries
    finally:
        PRIORS.remove("quiet-test")
