"""The opt-in build and the loader's self-test never crash their caller (issue 54).

On an AVX2-only CPU loading the library was an illegal instruction that killed ``make install``
with no message. Now the CPU's flags are checked before anything is compiled or loaded, and the
compile and the self-test run in child processes: a child killed by a signal is one line naming the
signal and the CPU, the build exits 2 and the eager bf16 path stays. Other CPUs are simulated here
(``PASSPORT_KIT_CPU_FLAGS``) and the signals sent by the child to itself
(``PASSPORT_KIT_LOWP_CHILD_SIGNAL``, a test hook): nothing here compiles anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from unittest import mock

import pytest
import torch

from passport_kit.errors import PassportWarning
from passport_kit.model.lowp import build as lowp_build
from passport_kit.model.lowp import loader, probe
from passport_kit.runtime import CPU_FLAGS_ENV, cpu_name

ROOT = Path(__file__).resolve().parents[3]
AVX2_ONLY = "fpu sse4_2 ssse3 popcnt avx avx2 fma bmi1 bmi2 f16c movbe abm xsave"
RUNS_IT = " ".join(sorted(probe.REQUIRED_FLAGS))


def _build(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """Run ``python -m passport_kit.model.lowp.build`` as ``make fast`` does, with ``env`` added."""
    clean = {k: v for k, v in os.environ.items() if k not in (CPU_FLAGS_ENV, probe.CHILD_SIGNAL_ENV)}
    return subprocess.run([sys.executable, "-m", "passport_kit.model.lowp.build", "--build-dir", str(tmp_path / "b")],
                          cwd=ROOT, env={**clean, "OMP_NUM_THREADS": "1", **env}, capture_output=True, text=True,
                          timeout=600)


def test_on_a_cpu_without_avx512_the_build_says_so_in_one_line_and_exits_2(tmp_path: Path) -> None:
    done = _build(tmp_path, **{CPU_FLAGS_ENV: AVX2_ONLY})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and not done.stdout, done.stderr + done.stdout
    assert lines[0].startswith("lowp kernels: not built: ") and "lacks" in lines[0] and "avx512_bf16" in lines[0]
    assert cpu_name().split(" (flags")[0] in lines[0] and lines[0].endswith("the eager bf16 path runs")
    assert not (tmp_path / "b").exists()  # nothing compiled


def test_a_build_child_killed_by_a_signal_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # the CPU passes the check; the compile's child dies as a library with an instruction this CPU lacks would
    done = _build(tmp_path, **{CPU_FLAGS_ENV: RUNS_IT, probe.CHILD_SIGNAL_ENV: "SIGILL"})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and not done.stdout, done.stderr + done.stdout
    assert "killed by SIGILL (Illegal instruction) on " in lines[0] and cpu_name().split(" (flags")[0] in lines[0]
    assert lines[0].endswith("the eager bf16 path runs")


@pytest.mark.parametrize("name", ["SIGILL", "SIGBUS", "SIGSEGV"])
def test_run_child_names_the_signal_and_the_cpu(name: str) -> None:
    script = (f"import os, resource, signal; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
              f"os.kill(os.getpid(), signal.{name})")
    said = probe.run_child(["-c", script], timeout=60)
    assert said is not None and said.startswith(f"killed by {name} (") and said.endswith(f" on {cpu_name()}")
    assert probe.run_child(["-c", "import sys; print('why', file=sys.stderr); sys.exit(1)"], timeout=60) == "why"
    assert probe.run_child(["-c", "pass"], timeout=60) is None


def test_a_failed_compile_or_self_test_leaves_no_library(tmp_path: Path, monkeypatch, capsys) -> None:  # noqa: ANN001
    library, stamp = tmp_path / "_lib.so", tmp_path / "_lib.so.torch"
    monkeypatch.setattr(lowp_build, "LIBRARY", library)
    monkeypatch.setattr(lowp_build, "TORCH_STAMP", stamp)
    monkeypatch.setattr(probe, "cpu_problem", lambda: None)
    monkeypatch.setattr(probe, "run_child", lambda *a, **k: "g++: error: unrecognized option '-mamx-tile'")
    assert lowp_build.main(["--build-dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "build failed: the compile g++: error" in err and not library.exists()
    # compiled, then its self-test's child dies: the library and its stamps are removed
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "_lowp_kernels.so").write_bytes(b"compiled")
    monkeypatch.setattr(probe, "run_child", lambda *a, **k: None)
    monkeypatch.setattr(probe, "verified", lambda lib, line: f"killed by SIGBUS (Bus error) on {cpu_name()}")
    assert lowp_build.main(["--build-dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "self-test failed, so it was removed: killed by SIGBUS" in err
    assert sorted(tmp_path.iterdir()) == [tmp_path / "b"]


def test_a_self_test_killed_by_a_signal_keeps_the_eager_path_and_is_not_retried(stamped_library: Path,
                                                                                  monkeypatch) -> None:  # noqa: ANN001
    library = stamped_library
    monkeypatch.setenv(probe.CHILD_SIGNAL_ENV, "SIGBUS")
    with mock.patch.object(torch.ops, "load_library") as load, warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert loader.ops() is None
    assert load.call_count == 0  # never loaded into this process
    lines = [str(w.message) for w in said if issubclass(w.category, PassportWarning)]
    assert len(lines) == 1 and "failed its self-test (killed by SIGBUS (Bus error) on " in lines[0], lines
    record = library.with_name(library.name + ".probe").read_text()
    assert record.startswith(loader.library_stamp(library)) and "failed: killed by SIGBUS" in record
    # the next process reads the result: no second child
    loader.ops.cache_clear()
    with mock.patch.object(probe, "_child") as child, pytest.warns(PassportWarning, match="killed by SIGBUS"):
        assert loader.ops() is None
    assert child.call_count == 0


def test_a_passed_self_test_is_reused_for_the_same_library_and_cpu_only(stamped_library: Path, monkeypatch) -> None:  # noqa: ANN001
    library = stamped_library
    line = loader.library_stamp(library)
    with mock.patch.object(probe, "_child", return_value=(0, None)) as child:
        assert probe.verified(library, line) is None and probe.verified(library, line) is None
        assert child.call_count == 1
        monkeypatch.setenv(CPU_FLAGS_ENV, RUNS_IT + " amx_tile amx_bf16")  # another CPU (the checkout on shared disk)
        assert probe.verified(library, line) is None and child.call_count == 2
        library.write_bytes(b"rebuilt")
        assert probe.verified(library, loader.library_stamp(library)) is None and child.call_count == 3
    # not the library's verdict, so not recorded and tried again: a timeout (a loaded machine), a child that
    # failed before its verdict (a traceback)
    for status, said, why in ((None, "did not finish in 300 s", "its self-test did not finish in 300 s"),
                              (1, "ModuleNotFoundError: x", "its self-test could not run (ModuleNotFoundError: x)")):
        library.write_bytes(f"rebuilt for {status}".encode())
        with mock.patch.object(probe, "_child", return_value=(status, said)) as child:
            for _ in range(2):
                assert probe.verified(library, loader.library_stamp(library)) == why
            assert child.call_count == 2


def test_the_self_test_names_missing_ops_and_a_library_that_does_not_load(tmp_path) -> None:  # noqa: ANN001
    # the child's own checks, run here on libraries that cannot raise a signal
    assert probe.self_test(tmp_path / "absent.so").startswith("does not load (")
    with mock.patch.object(torch.ops, "load_library"), \
            mock.patch.object(loader, "missing_ops", return_value=["criss_cross_attention", "layer_norm"]):
        assert probe.self_test(tmp_path / "x.so") == "lacks the ops criss_cross_attention, layer_norm"


def test_the_cpu_check_reads_the_flags() -> None:
    with mock.patch.dict(os.environ, {CPU_FLAGS_ENV: AVX2_ONLY}):
        said = probe.cpu_problem()
        assert said is not None and "avx512_bf16" in said and "avx512f" in said
    with mock.patch.dict(os.environ, {CPU_FLAGS_ENV: RUNS_IT.replace("avx512_bf16", "")}):
        assert probe.cpu_problem() is not None and "avx512_bf16" in probe.cpu_problem()
    with mock.patch.dict(os.environ, {CPU_FLAGS_ENV: RUNS_IT}):
        assert probe.cpu_problem() is None
