"""`make demo` and `make test` compile nothing: the default install is pure Python + torch on any x86-64 CPU (issue 54).

The fused bf16 kernels are an opt-in (`make fast`): on an AVX2-only CPU building them in
`make install` killed it by an illegal instruction. Read from `make -n -B` (every target out of
date, as on a fresh clone, nothing run), with the virtualenv in a folder that does not exist.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What a recipe that compiles native code names: a compiler, ninja, or the kernels' build.
COMPILING = re.compile(r"(?<![\w.-])(gcc|g\+\+|c\+\+|cc|clang|ninja)(?![\w.-])|build\.py|lowp\.build|cpp_extension|-march")


def _dry_run(target: str, tmp_path: Path) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed here")
    done = subprocess.run(["make", "-n", "-B", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("target", "runs"), [("demo", "passport-kit demo"), ("test", "-m pytest -q")])
def test_demo_and_test_invoke_no_compiler(tmp_path: Path, target: str, runs: str) -> None:
    recipe = _dry_run(target, tmp_path)
    assert "pip install" in recipe and runs in recipe  # the whole set-up is there
    assert not COMPILING.search(recipe), COMPILING.search(recipe)


def test_the_kernels_are_built_by_make_fast_only(tmp_path: Path) -> None:
    recipe = _dry_run("fast", tmp_path)
    assert COMPILING.search(recipe) and "-m passport_kit.model.lowp.build" in recipe
    assert "-m passport_kit.model.lowp.build" in _dry_run("test-fast", tmp_path)
