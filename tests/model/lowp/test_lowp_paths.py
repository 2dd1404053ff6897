"""The path a layer runs (eager, avx512, amx) is chosen once when its weights are prepared, named and logged.

The AVX-512 BF16 path without AMX has its own test here, run in a process whose CPU acts as one
without AMX (``PASSPORT_KIT_LOWP_NO_AMX=1``): on an AVX-512 BF16 CPU without AMX that is the
process as it is; on an AMX Xeon it is the same code, not a measurement of such a CPU.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import torch
from tests.model.model_helpers import needs_cpu_bf16

from passport_kit.model.lowp import layer as lowp_layer
from passport_kit.model.lowp import loader
from passport_kit.model.lowp.cast import forget
from passport_kit.model.transformer import CrissCrossEncoder

BF16 = torch.bfloat16
ROOT = Path(__file__).resolve().parents[3]


def _encoder() -> CrissCrossEncoder:
    encoder = CrissCrossEncoder(2, 200, 8, 800, 0.1).eval()
    encoder.requires_grad_(False)
    forget(encoder)
    return encoder


def _bf16(encoder: CrissCrossEncoder, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode(), torch.autocast("cpu", dtype=BF16):
        return encoder(x).float()


@needs_cpu_bf16
def test_without_the_library_every_layer_is_eager_and_says_so(caplog) -> None:  # noqa: ANN001
    encoder = _encoder()
    lowp_layer._announce.cache_clear()
    with mock.patch.object(loader, "ops", return_value=None), caplog.at_level(logging.INFO):
        _bf16(encoder, torch.randn(2, 3, 4, 200))
        paths = {lowp_layer.prepare(layer, BF16).path for layer in encoder.layers}
    forget(encoder)
    assert paths == {"eager"} and lowp_layer.process_path() in lowp_layer.PATHS
    assert [r.getMessage().split(":")[1].strip() for r in caplog.records if "bf16 fast path" in r.getMessage()] == [
        "eager"]  # once per process, however many layers


def test_the_path_is_kept_with_the_prepared_weights_until_they_change(kernels) -> None:  # noqa: ANN001
    encoder = _encoder()
    layer = encoder.layers[0]
    chosen = lowp_layer.prepare(layer, BF16).path
    assert chosen == ("amx" if kernels.amx_available() else "avx512")
    with mock.patch.object(loader, "ops", return_value=None):
        assert lowp_layer.prepare(layer, BF16).path == chosen  # chosen once, not per call
        with torch.no_grad():
            layer.linear1.bias.add_(0)  # an in-place update: the weights are prepared again
        assert lowp_layer.prepare(layer, BF16).path == "eager"
    forget(encoder)


_WITHOUT_AMX = """
import torch
from passport_kit.model.lowp import layer as lowp_layer, loader
from passport_kit.model.transformer import CrissCrossEncoder
kernels = loader.ops()
assert kernels is not None and not kernels.amx_available()
assert lowp_layer.process_path() == "avx512"
torch.manual_seed(0)
encoder = CrissCrossEncoder(2, 200, 8, 800, 0.1).eval().requires_grad_(False)
x = torch.randn(3, 12, 30, 200)
with torch.inference_mode():
    ref = encoder(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fast = encoder(x).float()
assert {lowp_layer.prepare(layer, torch.bfloat16).path for layer in encoder.layers} == {"avx512"}
rel = float((fast - ref).norm() / ref.norm())
assert rel < 0.02, rel
xi = x[:2].clone().requires_grad_(True)  # the adapter step on this path: the eager frozen-layer form
with torch.autocast("cpu", dtype=torch.bfloat16):
    encoder(xi).float().sum().backward()
assert xi.grad is not None and torch.isfinite(xi.grad).all()
"""


def test_the_avx512_path_runs_and_agrees_with_fp32_on_a_cpu_without_amx(kernels) -> None:  # noqa: ANN001
    env = {**os.environ, "PASSPORT_KIT_LOWP_NO_AMX": "1"}
    done = subprocess.run([sys.executable, "-c", _WITHOUT_AMX], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
