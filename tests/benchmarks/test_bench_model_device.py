"""The GPU comparison of benchmarks/bench_model.py (--device cuda), run on the CPU: its logic, not its figures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

bm = pytest.importorskip("bench_model")


@pytest.fixture(scope="module")
def contenders() -> "bm.Contenders":
    bd_cls = bm.import_braindecode_cbramod()
    if bd_cls is None:
        pytest.skip("braindecode is not importable")
    return bm.Contenders("cbramod-tiny", 3, 2, bd_cls, device=torch.device("cpu"))


def test_device_report_prints_the_watched_ratio_lines(contenders: "bm.Contenders") -> None:
    lines: list[str] = []
    result = bm.device_report(contenders, 2, repeats=1, iters=1, warmup=1, echo=lines.append)
    text = "\n".join(lines)
    assert "RATIO inference ours / bd best" in text and "RATIO adapter step ours / bd same-frozen" in text
    assert result["infer"] > 0 and result["adapter"] > 0
    # Peak memory is a CUDA figure; on a CPU each contender says n/a rather than a made-up number.
    assert text.count("peak n/a") == 6


def test_peak_memory_and_fused_only_are_cuda_only() -> None:
    cpu = torch.device("cpu")
    assert bm.peak_memory(lambda: None, cpu) is None
    with bm.fused_attention_only(cpu):  # no restriction off a GPU
        q = torch.randn(1, 2, 4, 25)
        torch.nn.functional.scaled_dot_product_attention(q, q, q)


def test_device_flag_without_cuda_exits_with_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    monkeypatch.setattr(sys, "argv", ["bench_model.py", "--device", "cuda", "--quick"])
    with pytest.raises(SystemExit, match="CUDA is not available"):
        bm.main()


def test_the_agreement_interval_is_wilsons() -> None:
    lo, hi = bm.wilson_interval(0.97, 512)
    assert lo < 0.97 < hi and 0.95 < lo and hi < 0.99
    assert bm.wilson_interval(1.0, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)  # not the degenerate (1, 1)
    narrow, wide = bm.wilson_interval(0.9, 1000), bm.wilson_interval(0.9, 100)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


def test_compiled_contenders_join_the_report_and_a_failed_compile_is_left_out(
        contenders: "bm.Contenders", monkeypatch: pytest.MonkeyPatch) -> None:
    # The compiler itself is not run here (a minute on this CPU); the forms stand in for what it returns.
    def broken(x: torch.Tensor) -> None:
        raise RuntimeError("inductor could not lower an op\nmore detail")

    stand_ins = {f"ours infer {contenders.precision} compiled": lambda x: contenders.infer_ours(x, None),
                 "bd fp32 infer compiled": lambda x: contenders.infer_bd(x, None),
                 "bd bf16 infer compiled": broken}
    monkeypatch.setattr(bm, "compiled_inference", lambda cont: stand_ins)
    lines: list[str] = []
    result = bm.device_report(contenders, 2, repeats=1, iters=1, warmup=1, echo=lines.append, compiled=True)
    text = "\n".join(lines)
    assert "bd bf16 infer compiled: compilation failed, left out (RuntimeError: inductor could not lower an op)" in text
    assert "RATIO inference ours compiled / bd best of eager and compiled" in text
    assert "bd bf16 infer compiled samples/s" not in result and result["bd fp32 infer compiled samples/s"] > 0


def test_an_eager_contender_that_fails_is_not_hidden(contenders: "bm.Contenders", monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contenders, "infer_bd", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("eager broke")))
    with pytest.raises(RuntimeError, match="eager broke"):
        bm.device_report(contenders, 2, repeats=1, iters=1, warmup=1, echo=lambda line: None)
