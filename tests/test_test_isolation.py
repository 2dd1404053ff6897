"""The test run never reads or writes the user's registry (issue 34, finding 9)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_collection_does_not_see_the_users_montages(tmp_path: Path) -> None:
    # A user who has used the tool: a montage of their own in their registry.
    user_home = tmp_path / "user-home"
    (user_home / "montages").mkdir(parents=True)
    (user_home / "montages" / "zz-users-own.yaml").write_text(
        "name: zz-users-own\ncoordinate_frame: head\nunits: m\nreference: Fpz\n"
        "channels:\n  - {name: TP9, position: [0.0, 0.0, 0.09]}\n")
    before = _files(user_home)
    env = {**os.environ, "PASSPORT_KIT_HOME": str(user_home), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/montage/test_montage_frame_guard.py"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test_builtin_montages_pass_the_guard[eesm17-ear]" in run.stdout
    assert "zz-users-own" not in run.stdout
    assert _files(user_home) == before

