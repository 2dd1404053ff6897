"""Device, precision, seeding and thread settings shared by pretraining and adaptation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from passport_kit.errors import ConfigError
from passport_kit import runtime


@pytest.mark.parametrize("name", ["auto", "cpu", "CPU"])
def test_resolve_device_gives_cpu_without_cuda(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert runtime.resolve_device(name) == torch.device("cpu")


def test_resolve_device_refuses_cuda_when_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match="CUDA is not available.*--device cpu"):
        runtime.resolve_device("cuda")


@pytest.mark.parametrize("name", ["gpu", "tpu", ""])
def test_resolve_device_refuses_unknown_names(name: str) -> None:
    with pytest.raises(ConfigError, match="unknown device"):
        runtime.resolve_device(name)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [("fpu avx2 avx512f", False), ("fpu avx512f avx512_bf16", True), ("fpu amx_bf16 amx_tile", True)],
)
def test_cpu_bf16_detection_reads_cpuinfo_flags(
    tmp_path: Path, flags: str, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    assert runtime.cpu_supports_bf16(cpuinfo) is expected


@pytest.mark.parametrize(("supported", "expected"), [(True, "bf16"), (False, "fp32")])
def test_auto_precision_follows_cpu_support(
    supported: bool, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime, "cpu_supports_bf16", lambda *a: supported)
    assert runtime.resolve_precision("auto", torch.device("cpu")) == expected


@pytest.mark.parametrize("name", ["fp32", "bf16"])
def test_explicit_precision_is_honoured_on_cpu(name: str) -> None:
    assert runtime.resolve_precision(name, torch.device("cpu")) == name


def test_unknown_precision_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown precision 'fp16'"):
        runtime.resolve_precision("fp16", torch.device("cpu"))


@pytest.mark.parametrize(("precision", "dtype"), [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_autocast_sets_matmul_dtype(precision: str, dtype: torch.dtype) -> None:
    a = torch.randn(4, 4)
    with runtime.autocast(torch.device("cpu"), precision):  # type: ignore[arg-type]
        assert (a @ a).dtype == dtype


def test_seed_everything_makes_generators_repeat() -> None:
    runtime.seed_everything(7)
    first = (torch.rand(3), np.random.rand(3))
    runtime.seed_everything(7)
    second = (torch.rand(3), np.random.rand(3))
    assert torch.equal(first[0], second[0]) and np.array_equal(first[1], second[1])


def test_set_threads_applies_the_count() -> None:
    before = torch.get_num_threads()
    try:
        assert runtime.set_threads(1) == 1
    finally:
        torch.set_num_threads(before)


def test_set_threads_refuses_zero() -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        runtime.set_threads(0)


def test_simulated_cpu_flags_decide_what_the_cpu_checks_see(monkeypatch: pytest.MonkeyPatch) -> None:
    # PASSPORT_KIT_CPU_FLAGS: what another CPU would do, without one (issue 54: an AVX2-only AMD EPYC)
    cpu = torch.device("cpu")
    monkeypatch.setenv(runtime.CPU_FLAGS_ENV, "fpu avx avx2 fma")
    assert runtime.cpu_flags() == {"fpu", "avx", "avx2", "fma"}
    assert not runtime.cpu_supports_bf16() and runtime.resolve_precision("auto", cpu) == "fp32"
    assert runtime.cpu_name().endswith(f"(flags simulated by {runtime.CPU_FLAGS_ENV})")
    monkeypatch.setenv(runtime.CPU_FLAGS_ENV, "avx512f avx512_bf16")
    assert runtime.resolve_precision("auto", cpu) == "bf16"
