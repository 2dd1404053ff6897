"""Model speed on CPU: passport-kit's backbone against braindecode's CBraMod, interleaved in one run.

Shapes: ``cbramod-base`` (12 layers), C channels × P one-second patches, 5 classes. Contenders,
timed in turn inside every repeat so that machine load hits them alike:

- ``ours infer``: ``Classifier`` (``mlp-experts``) in eval mode under ``torch.inference_mode``, at
  the precision ``--precision auto`` picks on this CPU (fp32 without native bf16).
- ``bd fp32 infer``: braindecode ``CBraMod(n_chans=C, n_times=200·P, n_outputs=5)``, same mode.
- ``ours adapter step``: policy ``adapter`` (backbone and experts frozen; mixture + head
  trainable): forward + cross-entropy + backward + AdamW.
- ``bd adapter step``: braindecode with the same parameters frozen. Its closest analogue of our
  mixture is its positional-encoding conv (``patch_embedding.positional_encoding.*``): like our
  mixture it sits before the encoder, so its gradient also flows back through all frozen layers.
  Trainable: that conv + ``final_layer.*``; frozen modules in eval mode, as ours.
- ``bd full step``: braindecode plain fp32 full fine-tuning (every parameter trainable, train mode).

braindecode bf16 autocast (its "best form" on CPUs with AVX-512 BF16) is measured once, at a
small batch, because without native bf16 it is about ten times slower than fp32 here; "bd best"
is whichever form is faster on this machine. Also printed: the fp32 and bf16 matrix-product rates
(``machine.py``), achieved GFLOP/s from a hand count (:func:`flop_per_token`), the peak memory of
our adapter step, and fp32-vs-bf16 agreement of predicted classes. Run::

    .venv/bin/python benchmarks/bench_model.py --batch-sizes 16,64 --channels 12 --patches 30 --repeats 3
    .venv/bin/python benchmarks/bench_model.py --quick     # smoke run, small batches, 1 repeat

On a GPU (``--device cuda``; :func:`device_report`): at batch 64 (``--batch-sizes``), ours in the
form ``adapt``/``predict`` use there by default (bf16 autocast, attention on a fused SDPA
kernel: the run fails rather than fall back to the unfused math kernel) against braindecode on
the same GPU in fp32 and under its own bf16 autocast, for inference and the adapter step, with
the peak GPU memory of each (``torch.cuda.max_memory_allocated`` above what was allocated before
the call)::

    .venv/bin/python benchmarks/bench_model.py --device cuda --repeats 5 --iters 10
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent / "tests" / "checkpoint"))
from braindecode_harness import import_braindecode_cbramod  # noqa: E402  (torchaudio stand-in)
from machine import machine_line, matmul_gflops  # noqa: E402

import passport_kit.model.fast_linear as fast_linear  # noqa: E402
from passport_kit.model import (  # noqa: E402
    ChannelMeta,
    Classifier,
    apply_policy,
    build_backbone,
    check_policy,
    model_config,
)
from passport_kit.model.fast_path import LOWP  # noqa: E402
from passport_kit.model.policy import _frozen_to_eval  # noqa: E402  (same frozen→eval rule for braindecode)
from passport_kit.runtime import autocast, cpu_supports_bf16, resolve_precision  # noqa: E402

N_CLASSES = 5


def fast_path_name() -> str:
    """Return the path our bf16 layers run here (eager, avx512, amx), or "none" where model/lowp/ is absent."""
    return "none (model/lowp/ absent: autocast)" if LOWP is None else LOWP.process_path()
CPU = torch.device("cpu")
#: The clock of every CPU timing: wall time (default), or this process's CPU time (``--clock cpu``:
#: with ``--threads 1`` robust to being descheduled on a loaded machine, not to shared caches).
CLOCK: Callable[[], float] = time.perf_counter


def flop_per_token(n_layers: int, c: int, p: int, *, braindecode: bool) -> float:
    """Return the hand-counted forward FLOP per token (one channel × one second).

    Per layer: q/k/v 2·(100·300) + out 2·(100·100) + FFN 2·(200·800) multiply-adds, plus the
    attention products 2·2·100·(C + P) FLOP. Patch embedding: convs 25·8·(49 + 3·25 + 3·25),
    spectral Linear(101, 200). braindecode adds its ACPE conv (200·19·7) and proj_out (200·200);
    our mixture network and heads are per channel/sample and negligible (< 0.1 %).
    """
    layer = 2 * (2 * 100 * 300 + 2 * 100 * 100 + 2 * 200 * 800) + 4 * 100 * (c + p)
    embed = 2 * (25 * 8 * (49 + 3 * 25 + 3 * 25) + 101 * 200)
    extra = 2 * (200 * 19 * 7 + 200 * 200) if braindecode else 0
    return n_layers * layer + embed + extra


def step_flop_per_token(n_layers: int, c: int, p: int, kind: str) -> float:
    """Return the hand-counted FLOP per token of one training step of ``kind``.

    Backward costs 1× forward where only input gradients are needed (a frozen encoder under the
    adapter policy) and 2× where weight gradients are needed too (full fine-tuning). Our
    adapter's frozen patch embedding needs no backward at all (the mixture reads it, detached).
    """
    if kind == "ours adapter":
        fwd = flop_per_token(n_layers, c, p, braindecode=False)
        encoder = n_layers * (2 * (2 * 100 * 300 + 2 * 100 * 100 + 2 * 200 * 800) + 4 * 100 * (c + p))
        return fwd + encoder
    fwd = flop_per_token(n_layers, c, p, braindecode=True)
    if kind == "bd adapter":
        # encoder + proj_out input grads (1×), ACPE weight grad (1× of the conv), no patch-branch backward
        embed = 2 * (25 * 8 * (49 + 3 * 25 + 3 * 25) + 101 * 200)
        return fwd + (fwd - embed)
    return 3 * fwd  # "bd full"


def rss_bytes(field: str) -> int:
    """Return ``VmRSS`` or ``VmHWM`` (peak) of this process in bytes, from /proc/self/status."""
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss() -> None:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="utf-8") as f:
            f.write("5")
    except OSError:
        pass


def make_meta(c: int) -> ChannelMeta:
    """Return metadata of ``c`` channels at fixed pseudo-random scalp-like positions (m)."""
    gen = torch.Generator().manual_seed(0)
    return ChannelMeta.create([f"CH{i}" for i in range(c)], torch.randn(c, 3, generator=gen) * 0.06)


def make_batch(b: int, c: int, p: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``x`` ``(B, C, P, 200)`` and labels ``(B,)``: noise plus a rhythm of random
    frequency (1-30 Hz) and amplitude per window, so that windows differ in their spectra."""
    gen = torch.Generator().manual_seed(seed)
    scale = torch.rand(b, 1, 1, 1, generator=gen) * 1.5 + 0.25
    freq = torch.rand(b, 1, 1, 1, generator=gen) * 29 + 1
    amp = torch.rand(b, 1, 1, 1, generator=gen) * 2
    t = (torch.arange(p * 200, dtype=torch.float32) / 200).view(1, 1, p, 200)
    x = torch.randn(b, c, p, 200, generator=gen) * scale + amp * torch.sin(2 * torch.pi * freq * t)
    return x, torch.randint(0, N_CLASSES, (b,), generator=gen)


class Contenders:
    """The models and step functions being timed (built once, reused across batch sizes)."""

    def __init__(self, arch: str, c: int, p: int, bd_cls: type, device: torch.device = CPU) -> None:
        self.device, self.c, self.p = device, c, p
        self.meta = make_meta(c).to(device)
        self.precision = resolve_precision("auto", device)
        torch.manual_seed(0)
        self.ours_eval = Classifier(build_backbone(model_config(arch, "mlp-experts")), N_CLASSES).eval()
        self.ours_adapt = Classifier(build_backbone(model_config(arch, "mlp-experts")), N_CLASSES)
        apply_policy(self.ours_adapt, "adapter")
        self.ours_adapt.train()
        check_policy(self.ours_adapt, "adapter")
        n_layers = self.ours_eval.backbone.config.n_layers
        kw = {"n_chans": c, "n_times": 200 * p, "sfreq": 200.0, "n_outputs": N_CLASSES, "n_layer": n_layers}
        self.bd_eval = bd_cls(**kw).eval()
        self.bd_adapt = bd_cls(**kw)
        for name, q in self.bd_adapt.named_parameters():
            q.requires_grad_(name.startswith(("patch_embedding.positional_encoding.", "final_layer.")))
        self.bd_adapt.train()
        _frozen_to_eval(self.bd_adapt)
        self.bd_full = bd_cls(**kw).train()
        for model in (self.ours_eval, self.ours_adapt, self.bd_eval, self.bd_adapt, self.bd_full):
            model.to(device)
        # Optimizers after the move: their parameter lists are the device's tensors.
        self.ours_opt = torch.optim.AdamW([q for q in self.ours_adapt.parameters() if q.requires_grad], lr=1e-4)
        self.bd_adapt_opt = torch.optim.AdamW([q for q in self.bd_adapt.parameters() if q.requires_grad], lr=1e-4)
        self.bd_full_opt = torch.optim.AdamW(self.bd_full.parameters(), lr=1e-4)

    def trainable(self) -> dict[str, int]:
        """Return the trainable parameter counts of the three training contenders."""

        def count(m: nn.Module) -> int:
            return sum(q.numel() for q in m.parameters() if q.requires_grad)

        return {"ours adapter": count(self.ours_adapt), "bd adapter": count(self.bd_adapt), "bd full": count(self.bd_full)}

    def infer_ours(self, x: torch.Tensor, y: torch.Tensor, precision: str | None = None) -> None:
        with torch.inference_mode(), autocast(self.device, precision or self.precision):  # type: ignore[arg-type]
            self.ours_eval(x, self.meta)

    def infer_ours_fp32(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.infer_ours(x, y, "fp32")

    def infer_bd(self, x: torch.Tensor, y: torch.Tensor, bf16: bool = False) -> None:
        with torch.inference_mode(), torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16):
            self.bd_eval(x.flatten(2))

    #: (forward s, backward s) of the last call of each training step, by step name (CPU clock).
    split: dict[str, tuple[float, float]]

    def step_ours(self, x: torch.Tensor, y: torch.Tensor) -> None:
        t0 = CLOCK()
        with autocast(self.device, self.precision):
            loss = F.cross_entropy(self.ours_adapt(x, self.meta).float(), y)
        t1 = CLOCK()
        self.ours_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.split = getattr(self, "split", {})
        self.split["ours adapter"] = (t1 - t0, CLOCK() - t1)
        self.ours_opt.step()

    def _step_bd(self, model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
                 bf16: bool = False, name: str = "bd") -> None:
        t0 = CLOCK()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x.flatten(2)).float(), y)
        t1 = CLOCK()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        self.split = getattr(self, "split", {})
        self.split[name] = (t1 - t0, CLOCK() - t1)
        opt.step()

    def step_bd_adapter(self, x: torch.Tensor, y: torch.Tensor, bf16: bool = False) -> None:
        self._step_bd(self.bd_adapt, self.bd_adapt_opt, x, y, bf16, name="bd adapter bf16" if bf16 else "bd adapter")

    def step_bd_adapter_bf16(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.step_bd_adapter(x, y, bf16=True)

    def infer_bd_bf16(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.infer_bd(x, y, bf16=True)

    def step_bd_full(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self._step_bd(self.bd_full, self.bd_full_opt, x, y, name="bd full")


@contextlib.contextmanager
def without_fast_path() -> "contextlib.AbstractContextManager[None]":
    """Return a context in which our model runs as if ``model/lowp/`` were absent (plain autocast, no hand-written op)."""
    import passport_kit.model.patch_embedding as patch_embedding
    import passport_kit.model.transformer as transformer

    saved = transformer.LOWP, patch_embedding.LOWP
    transformer.LOWP = patch_embedding.LOWP = None
    try:
        yield
    finally:
        transformer.LOWP, patch_embedding.LOWP = saved


def compiled_contenders(cont: Contenders) -> dict[str, Callable[[torch.Tensor, torch.Tensor], None]]:
    """Return ours compiled by Inductor (``torch.compile``, weight freezing for inference), without the fast path.

    The compiler is given the model as plain torch ops (:func:`without_fast_path`): what it makes of
    them is what would replace the hand-written ops. Inference under ``inference_mode`` and bf16
    autocast; the adapter step's forward compiled (AOTAutograd compiles its backward), AdamW eager.
    """
    import torch._inductor.config as inductor_config

    inductor_config.freezing = True
    infer = torch.compile(cont.ours_eval)
    step_model = torch.compile(cont.ours_adapt)
    opt = torch.optim.AdamW([q for q in cont.ours_adapt.parameters() if q.requires_grad], lr=1e-4)

    def infer_compiled(x: torch.Tensor, y: torch.Tensor) -> None:
        with without_fast_path(), torch.inference_mode(), autocast(cont.device, cont.precision):
            infer(x, cont.meta)

    def step_compiled(x: torch.Tensor, y: torch.Tensor) -> None:
        with without_fast_path():
            with autocast(cont.device, cont.precision):
                loss = F.cross_entropy(step_model(x, cont.meta).float(), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    return {"ours infer compiled": infer_compiled, "ours adapter compiled": step_compiled}


def with_fast_linear(fn: Callable[[torch.Tensor, torch.Tensor], None]) -> Callable[[torch.Tensor, torch.Tensor], None]:
    """Return ``fn`` run with the opt-in oneDNN linear lever on (frozen/inference linears fused)."""

    def run(x: torch.Tensor, y: torch.Tensor) -> None:
        saved, fast_linear._ONEDNN_LINEAR = fast_linear._ONEDNN_LINEAR, fast_linear.ONEDNN_OP
        try:
            fn(x, y)
        finally:
            fast_linear._ONEDNN_LINEAR = saved

    return run


def without_kernels(cont: Contenders) -> Callable[[torch.Tensor, torch.Tensor], None]:
    """Return ours inference with the compiled kernels off (the eager bf16 form), on a copy of the model: their A/B.

    The copy's layers are prepared while the loader says "not loaded", so their path is ``eager``
    (chosen once, when the weights are prepared); the patch embedding asks the loader on every call,
    so it is told the same on each. ``ours infer`` keeps the kernels: both in one process, interleaved.
    """
    import copy
    from unittest import mock

    from passport_kit.model.lowp import loader
    from passport_kit.model.lowp.cast import forget

    model = copy.deepcopy(cont.ours_eval)
    forget(model)

    def run(x: torch.Tensor, y: torch.Tensor) -> None:
        with mock.patch.object(loader, "ops", return_value=None), torch.inference_mode(), \
                autocast(cont.device, cont.precision):  # type: ignore[arg-type]
            model(x, cont.meta)

    return run


def with_one_micro_batch(cont: Contenders, fn: Callable[[torch.Tensor, torch.Tensor], None]) -> Callable[[torch.Tensor, torch.Tensor], None]:
    """Return ``fn`` run with our encoder's no-graph path on the whole batch at once (no micro-batches)."""
    encoder = cont.ours_eval.backbone.encoder

    def run(x: torch.Tensor, y: torch.Tensor) -> None:
        saved, encoder.chunk_tokens = encoder.chunk_tokens, 1 << 62
        try:
            fn(x, y)
        finally:
            encoder.chunk_tokens = saved

    return run


def matmul_rate(dtype: torch.dtype, n: int, repeats: int) -> float:
    """Return the median GFLOP/s of an n×n×n product in ``dtype`` on :data:`CLOCK` (``machine.matmul_gflops`` on CPU time)."""
    if CLOCK is time.perf_counter:
        return matmul_gflops(dtype, n=n, repeats=repeats)
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    for _ in range(3):
        a @ b
    return 2 * n**3 / timed(lambda: a @ b, repeats) / 1e9


def timed(fn: Callable[[], None], iters: int) -> float:
    """Return the median wall time of ``iters`` calls of ``fn`` (seconds)."""
    times = []
    for _ in range(iters):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return statistics.median(times)


def check_frozen_work(cont: Contenders, c: int, p: int) -> str:
    """Return a line saying whether the adapter step computes any frozen-parameter gradient."""
    x, y = make_batch(2, c, p, seed=99)
    cont.ours_opt.zero_grad(set_to_none=True)
    F.cross_entropy(cont.ours_adapt(x, cont.meta), y).backward()
    frozen_with_grad = [n for n, q in cont.ours_adapt.named_parameters() if not q.requires_grad and q.grad is not None]
    cont.ours_opt.zero_grad(set_to_none=True)
    with torch.profiler.profile(record_shapes=True) as prof:
        F.cross_entropy(cont.ours_adapt(x, cont.meta), y).backward()
    names = [e.name for e in prof.events()]
    # A weight gradient of an encoder projection is a product that contracts over the tokens:
    # (out, tokens) @ (tokens, in). Input gradients and forward products contract over features.
    tokens = x.shape[0] * c * p
    weight_grad_mm = sum(
        e.name in ("aten::mm", "aten::addmm", "aten::bmm")
        and any(len(shape) == 2 and shape[1] == tokens for shape in e.input_shapes[:2] if isinstance(shape, list))
        for e in prof.events()
    )
    # Backward kernels that exist only to produce weight gradients of frozen layers would show as
    # GroupNorm/conv backward (the patch embedding needs no backward at all under `adapter`).
    patch_backward = sum(n in ("aten::native_group_norm_backward", "aten::convolution_backward") for n in names)
    cont.ours_opt.zero_grad(set_to_none=True)
    return (
        f"frozen params with .grad after backward: {len(frozen_with_grad)}; "
        f"GroupNorm/conv backward kernels run (patch embedding): {patch_backward}; "
        f"products contracting over the {tokens} tokens (weight gradients of frozen projections): {weight_grad_mm}"
    )


def agreement(arch: str, c: int, p: int, n_windows: int, batch: int) -> tuple[float, int, float]:
    """Return (share of windows whose fp32 and bf16-autocast predicted classes agree, distinct
    classes predicted, max |logit difference|) for a randomly initialised model."""
    torch.manual_seed(1)
    model = Classifier(build_backbone(model_config(arch, "mlp-experts")), N_CLASSES).eval()
    meta = make_meta(c)
    # A random head predicts one class for nearly everything (agreement would be trivially
    # 100 %). Centre its logits on a calibration batch so that predictions spread over classes.
    with torch.inference_mode():
        calib = model(make_batch(64, c, p, seed=5)[0], meta)
        last = model.head.net[-1]
        last.bias -= calib.mean(0)
        last.weight *= 4.0 / float(calib.std(0).mean().clamp_min(1e-6))
        last.bias *= 4.0 / float(calib.std(0).mean().clamp_min(1e-6))
    same, classes, max_diff = 0, set(), 0.0
    for start in range(0, n_windows, batch):
        x, _ = make_batch(min(batch, n_windows - start), c, p, seed=1000 + start)
        with torch.inference_mode():
            ref = model(x, meta)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                low = model(x, meta).float()
        same += int((ref.argmax(1) == low.argmax(1)).sum())
        classes |= set(ref.argmax(1).tolist())
        max_diff = max(max_diff, float((ref - low).abs().max()))
    return same / n_windows, len(classes), max_diff


def wilson_interval(share: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Return the Wilson score interval (95 % by default) of a proportion ``share`` observed in ``n`` trials."""
    if n <= 0:
        return 0.0, 1.0
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * (share * (1 - share) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def fused_attention_only(device: torch.device) -> contextlib.AbstractContextManager:
    """Return a context in which SDPA may use fused kernels only (flash, memory-efficient, cuDNN) on ``device``.

    A call that would fall back to the unfused math kernel raises instead, so a timed "ours"
    figure on a GPU is the fused path's. Off a GPU: no restriction (nullcontext).
    """
    if device.type != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    backends += [SDPBackend.CUDNN_ATTENTION] if hasattr(SDPBackend, "CUDNN_ATTENTION") else []
    return sdpa_kernel(backends)


def device_timed(fn: Callable[[], None], iters: int, device: torch.device) -> float:
    """Return the median wall time (s) of ``iters`` calls of ``fn``, each waited for on ``device``."""
    times = []
    for _ in range(iters):
        _synchronize(device)
        t0 = time.perf_counter()
        fn()
        _synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory(fn: Callable[[], None], device: torch.device) -> float | None:
    """Return the peak device memory (bytes) one call of ``fn`` allocates above what was allocated before; None off CUDA."""
    if device.type != "cuda":
        return None
    _synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    fn()
    _synchronize(device)
    return float(torch.cuda.max_memory_allocated(device) - before)


def compiled_inference(cont: Contenders) -> dict[str, Callable[[torch.Tensor], None]]:
    """Return the three inference contenders compiled with ``torch.compile(mode="reduce-overhead")``.

    On a GPU that mode records CUDA graphs: one replay launches the whole forward, which is what a
    small batch needs when the host's kernel launches are the bottleneck (RESULTS.md: batch 64).
    Ours runs under its bf16 autocast, braindecode in fp32 and under its bf16 autocast, as eager.
    """
    ours = torch.compile(cont.ours_eval, mode="reduce-overhead")
    bd = torch.compile(cont.bd_eval, mode="reduce-overhead")

    def run_ours(x: torch.Tensor) -> None:
        with without_fast_path(), torch.inference_mode(), autocast(cont.device, cont.precision):  # type: ignore[arg-type]
            ours(x, cont.meta)

    def run_bd(bf16: bool) -> Callable[[torch.Tensor], None]:
        def run(x: torch.Tensor) -> None:
            with torch.inference_mode(), torch.autocast(cont.device.type, dtype=torch.bfloat16, enabled=bf16):
                bd(x.flatten(2))
        return run

    return {f"ours infer {cont.precision} compiled": run_ours, "bd fp32 infer compiled": run_bd(False),
            "bd bf16 infer compiled": run_bd(True)}


def device_report(cont: Contenders, batch: int, *, repeats: int, iters: int, warmup: int = 3,
                  echo: Callable[[str], None] = print, compiled: bool = False) -> dict[str, float]:
    """Print (``echo``) and return the GPU comparison at ``batch``: samples/s medians and the two RATIO lines.

    Contenders, interleaved in every repeat: ours inference and adapter step as ``adapt`` and
    ``predict`` run them on ``cont.device`` (precision ``auto``: bf16 autocast on a GPU that has it;
    SDPA restricted to fused kernels), braindecode inference in fp32 and under its own bf16
    autocast, and braindecode's same-frozen adapter step in fp32 and bf16 autocast. "bd best" is
    the faster of braindecode's two forms. Peak device memory per contender (CUDA only).
    """
    device = cont.device
    x, y = make_batch(batch, cont.c, cont.p, seed=batch)
    x, y = x.to(device), y.to(device)

    def ours(fn: Callable[[torch.Tensor, torch.Tensor], None]) -> Callable[[], None]:
        def run() -> None:
            with fused_attention_only(device):
                fn(x, y)
        return run

    contenders: dict[str, Callable[[], None]] = {
        f"ours infer {cont.precision}": ours(cont.infer_ours),
        "bd fp32 infer": lambda: cont.infer_bd(x, y),
        "bd bf16 infer": lambda: cont.infer_bd(x, y, bf16=True),
        f"ours adapter {cont.precision}": ours(cont.step_ours),
        "bd adapter fp32": lambda: cont.step_bd_adapter(x, y),
        "bd adapter bf16": lambda: cont.step_bd_adapter(x, y, bf16=True),
    }
    if compiled:  # --compile: the compiled forms beside the eager ones, after them in every repeat
        contenders |= {name: (lambda fn=fn: fn(x)) for name, fn in compiled_inference(cont).items()}
    for name, fn in list(contenders.items()):  # kernel selection, cuDNN autotuning, AdamW state, compilation
        t0 = time.perf_counter()
        try:
            for _ in range(warmup):
                fn()
        except Exception as exc:  # a compiler failure drops that contender; the eager comparison stands
            if not name.endswith("compiled"):
                raise
            echo(f"  {name}: compilation failed, left out ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})")
            del contenders[name]
            continue
        if name.endswith("compiled"):
            echo(f"  {name}: compiled and warmed in {time.perf_counter() - t0:.1f} s")
    memory = {name: peak_memory(fn, device) for name, fn in contenders.items()}
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    infer_ratio, step_ratio = [], []
    ours_infer, ours_step = f"ours infer {cont.precision}", f"ours adapter {cont.precision}"
    for r in range(repeats):
        for name, fn in contenders.items():
            rates[name].append(batch / device_timed(fn, iters, device))
        infer_ratio.append(rates[ours_infer][-1] / max(rates["bd fp32 infer"][-1], rates["bd bf16 infer"][-1]))
        step_ratio.append(rates[ours_step][-1] / max(rates["bd adapter fp32"][-1], rates["bd adapter bf16"][-1]))
        echo(f"  batch {batch} repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f}/s" for k, v in rates.items()))
    med = {name: statistics.median(v) for name, v in rates.items()}
    echo(f"batch {batch} on {device}: medians over {repeats} repeats of {iters} timed calls (samples/s), peak memory:")
    for name, v in med.items():
        mib = "n/a" if memory[name] is None else f"{memory[name] / 2**20:.0f} MiB"
        echo(f"  {name:20s} {v:10.1f} samples/s   peak {mib}")
    best_infer = max(med["bd fp32 infer"], med["bd bf16 infer"])
    best_step = max(med["bd adapter fp32"], med["bd adapter bf16"])
    echo(f"  bd best inference = {'fp32' if best_infer == med['bd fp32 infer'] else 'bf16 autocast'};"
         f" bd best same-frozen step = {'fp32' if best_step == med['bd adapter fp32'] else 'bf16 autocast'}")
    echo(f"  RATIO inference ours / bd best      {med[ours_infer] / best_infer:.2f}x of medians,"
         f" {statistics.median(infer_ratio):.2f}x median per repeat")
    echo(f"  RATIO adapter step ours / bd same-frozen {med[ours_step] / best_step:.2f}x of medians,"
         f" {statistics.median(step_ratio):.2f}x median per repeat (bd: the faster of fp32 and bf16 autocast)")
    ours_c = f"ours infer {cont.precision} compiled"
    if compiled and ours_c in med:
        best_c = max(med.get("bd fp32 infer compiled", 0.0), med.get("bd bf16 infer compiled", 0.0), best_infer)
        echo(f"  RATIO inference ours compiled / bd best of eager and compiled {med[ours_c] / best_c:.2f}x of medians;"
             f" ours compiled / ours eager {med[ours_c] / med[ours_infer]:.2f}x")
    return {"infer": med[ours_infer] / best_infer, "adapter": med[ours_step] / best_step,
            **{f"{k} samples/s": v for k, v in med.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="16,64")
    parser.add_argument("--channels", type=int, default=12)
    parser.add_argument("--patches", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iters", type=int, default=1, help="timed calls per contender per repeat (median)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or process CPU time (use with --threads 1 on a loaded machine)")
    parser.add_argument("--arch", default="cbramod-base")
    parser.add_argument("--train-batch-sizes", default="16", help="batches for the training steps (bd full at 64 takes minutes per step here)")
    parser.add_argument("--memory-batch", type=int, default=32)
    parser.add_argument("--bf16-batch", type=int, default=1, help="batch for the (slow) bf16 autocast inference")
    parser.add_argument("--bf16-repeats", type=int, default=1)
    parser.add_argument("--bf16-only", action="store_true", help="only braindecode bf16-autocast vs fp32 inference")
    parser.add_argument("--agree-arch", default="cbramod-small")
    # 1024 and 512 windows: a binomial interval of about +-1 % at 97 % (128 windows moved the figure by 1-2 %)
    parser.add_argument("--agree-windows", type=int, default=1024)
    parser.add_argument("--agree-patches", type=int, default=4)
    parser.add_argument("--agree-timed-windows", type=int, default=512,
                        help="with native bf16: agreement also on --arch at the timed shapes (0: skip)")
    parser.add_argument("--compile", action="store_true",
                        help="also time ours compiled by torch.compile (Inductor, freezing) without the fast path;"
                        " with --device cuda: ours and braindecode's inference compiled in reduce-overhead mode (CUDA graphs)")
    parser.add_argument("--onednn-ab", action="store_true", help="also time the opt-in oneDNN linear lever ('+L' rows)")
    parser.add_argument("--kernels-ab", action="store_true", help="also time ours inference with the compiled bf16 "
                        "kernels off ('eager' row: the eager bf16 form), interleaved with them (make fast builds them)")
    parser.add_argument("--quick", action="store_true", help="smoke run: cbramod-tiny, batch 4, 1 repeat")
    parser.add_argument("--device", default="cpu", help="cpu (default: the CPU comparison) or cuda (the GPU "
                        "comparison at --batch-sizes, default 64 there)")
    args = parser.parse_args()
    if args.device != "cpu":
        return main_device(args)
    if args.quick:
        args.batch_sizes, args.train_batch_sizes, args.repeats, args.arch, args.memory_batch = "4", "4", 1, "cbramod-tiny", 4
        args.agree_arch, args.agree_windows, args.bf16_batch = "cbramod-tiny", 16, 1
        args.agree_timed_windows = 8
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    train_batch_sizes = [int(b) for b in args.train_batch_sizes.split(",")]
    c, p = args.channels, args.patches
    torch.set_num_threads(args.threads)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter

    print(machine_line(args.threads) + f" | clock {args.clock}")
    print(f"load average at start: {os.getloadavg()[0]:.1f} (1 min)")
    t0 = time.perf_counter()
    native_bf16 = cpu_supports_bf16()
    fp32_rate = matmul_rate(torch.float32, n=1024, repeats=10)
    # bf16 without native instructions is ~60x slower: a smaller product, fewer repeats.
    bf16_n = 1024 if native_bf16 else 512
    bf16_rate = matmul_rate(torch.bfloat16, n=bf16_n, repeats=10 if native_bf16 else 3)
    print(f"matmul reference: fp32 1024^3 {fp32_rate:.1f} GFLOP/s | bf16 {bf16_n}^3 {bf16_rate:.2f} GFLOP/s"
          f" ({time.perf_counter() - t0:.0f} s; native bf16: {native_bf16})")

    bd_cls = import_braindecode_cbramod()
    if bd_cls is None:
        sys.exit("braindecode cannot be imported: pip install --no-deps braindecode (see tests/checkpoint/braindecode_harness.py)")
    cont = Contenders(args.arch, c, p, bd_cls)
    n_layers = cont.ours_eval.backbone.config.n_layers
    print(f"model {args.arch} ({n_layers} layers), {c} channels × {p} patches, {N_CLASSES} classes; ours: precision auto → {cont.precision}"
          f"; bf16 fast path: {fast_path_name()} (PASSPORT_KIT_LOWP_KERNELS=0 keeps eager)")
    print(f"trainable parameters: {cont.trainable()}")
    if not args.bf16_only:
        print(check_frozen_work(cont, c, p))

        # Peak memory first, before the braindecode steps raise the process high-water mark.
        cont.step_ours(*make_batch(2, c, p, seed=6))  # AdamW state exists before the measurement
        x, y = make_batch(args.memory_batch, c, p, seed=7)
        base = rss_bytes("VmRSS")
        reset_peak_rss()
        cont.step_ours(x, y)
        peak = rss_bytes("VmHWM")
        print(f"peak memory, ours adapter step at batch {args.memory_batch}: RSS high-water delta {(peak - base) / 2**30:.2f} GiB (process peak {peak / 2**30:.2f} GiB)")
        del x, y

    flops = {
        "ours infer": flop_per_token(n_layers, c, p, braindecode=False),
        "bd fp32 infer": flop_per_token(n_layers, c, p, braindecode=True),
        "ours adapter": step_flop_per_token(n_layers, c, p, "ours adapter"),
        "bd adapter": step_flop_per_token(n_layers, c, p, "bd adapter"),
        "bd full": step_flop_per_token(n_layers, c, p, "bd full"),
    }
    print("hand-counted MFLOP per token: " + ", ".join(f"{k} {v / 1e6:.2f}" for k, v in flops.items()))

    # bf16 autocast at a small batch (it is ~5-10x slower than fp32 here): warm-up, then
    # --bf16-repeats interleaved pairs of timed calls (bf16, fp32) at the same batch.
    xb, yb = make_batch(args.bf16_batch, c, p, seed=3)
    cont.infer_bd(xb, yb, bf16=True)
    cont.infer_bd(xb, yb)
    pairs = [
        (args.bf16_batch / timed(lambda: cont.infer_bd(xb, yb, bf16=True), 1), args.bf16_batch / timed(lambda: cont.infer_bd(xb, yb), 1))
        for _ in range(args.bf16_repeats)
    ]
    bd_bf16 = statistics.median(q[0] for q in pairs)
    bd_fp32_small = statistics.median(q[1] for q in pairs)
    print(
        f"braindecode inference at batch {args.bf16_batch} ({args.bf16_repeats} interleaved timed call(s) each, median):"
        f" bf16 autocast {bd_bf16:.2f} samples/s, fp32 {bd_fp32_small:.2f} samples/s; per pair bf16/fp32"
        f" {[round(a / b, 2) for a, b in pairs]}"
    )
    if args.bf16_only:
        return

    contenders: dict[str, Callable[[torch.Tensor, torch.Tensor], None]] = {
        "ours infer": cont.infer_ours,
        "ours infer 1mb": with_one_micro_batch(cont, cont.infer_ours),
        "bd fp32 infer": cont.infer_bd,
        "ours adapter": cont.step_ours,
        "bd adapter": cont.step_bd_adapter,
        "bd full": cont.step_bd_full,
    }
    flops["ours infer 1mb"] = flops["ours infer"]
    if native_bf16:
        # With native bf16, braindecode's bf16 autocast is a full contender (its best form may be
        # either), and ours in fp32 runs beside ours at `auto` (= bf16) for the precision's gain.
        contenders = {
            "ours infer": cont.infer_ours, "ours fp32 infer": cont.infer_ours_fp32,
            "ours infer 1mb": contenders["ours infer 1mb"],
            "bd fp32 infer": cont.infer_bd, "bd bf16 infer": cont.infer_bd_bf16,
            "ours adapter": cont.step_ours, "bd adapter": cont.step_bd_adapter,
            "bd adapter bf16": cont.step_bd_adapter_bf16, "bd full": cont.step_bd_full,
        }
        flops["ours fp32 infer"] = flops["ours infer"]
        flops["bd bf16 infer"] = flops["bd fp32 infer"]
        flops["bd adapter bf16"] = flops["bd adapter"]
    enc = cont.ours_eval.backbone.encoder
    print(f"'1mb' = ours inference as one micro-batch (default: micro-batches of {enc.chunk_tokens} tokens;"
          " in bf16 split evenly), the lever's A/B")
    if args.onednn_ab:
        contenders["ours infer +L"] = with_fast_linear(cont.infer_ours)
        contenders["ours adapter +L"] = with_fast_linear(cont.step_ours)
        flops["ours infer +L"], flops["ours adapter +L"] = flops["ours infer"], flops["ours adapter"]
        print("'+L' = ours with the opt-in oneDNN linear lever switched on (default: plain F.linear), the lever's A/B")
    if args.kernels_ab and LOWP is not None and cont.precision == "bf16":
        contenders["ours infer eager"] = without_kernels(cont)
        flops["ours infer eager"] = flops["ours infer"]
        print("'eager' = ours inference with the compiled kernels off (the eager bf16 form), the kernels' A/B")
    if args.compile:
        contenders.update(compiled_contenders(cont))
        flops["ours infer compiled"], flops["ours adapter compiled"] = flops["ours infer"], flops["ours adapter"]
        print("'compiled' = ours as plain torch ops compiled by Inductor (freezing), the fast path off;"
              " compiled at each timed batch before timing (compile times below)", flush=True)
    tokens = c * p
    for b in sorted(set(batch_sizes) | set(train_batch_sizes)):
        x, y = make_batch(b, c, p, seed=b)
        names = [k for k in contenders if b in train_batch_sizes or "infer" in k]
        if b not in batch_sizes:
            names = [k for k in names if "infer" not in k]
        # Warm-up (one-off kernel selection, AdamW state) at batch 2: a full-size warm-up of
        # every contender would double the run on this loaded machine.
        x2, y2 = make_batch(2, c, p, seed=2)
        for name in names:
            if "compiled" in name:  # a compiled contender is compiled for the timed shape, outside the timing
                t0 = time.perf_counter()
                contenders[name](x, y)
                print(f"  {name}: compiled at batch {b} in {time.perf_counter() - t0:.0f} s", flush=True)
            else:
                contenders[name](x2, y2)
        rates: dict[str, list[float]] = {k: [] for k in names}
        splits: dict[str, list[tuple[float, float]]] = {}
        ratios: dict[str, list[float]] = {}
        for r in range(args.repeats):
            for name in names:
                rates[name].append(b / timed(lambda fn=contenders[name]: fn(x, y), args.iters))
                if name in cont.split and name not in ("ours infer", "ours fp32 infer"):
                    splits.setdefault(name, []).append(cont.split.pop(name))
            ratio = {}
            if "ours infer" in rates:
                bd_infer = max(rates["bd fp32 infer"][-1], rates.get("bd bf16 infer", [0.0])[-1])
                ratio["infer"] = rates["ours infer"][-1] / bd_infer
                if "ours fp32 infer" in rates:
                    ratio["auto/fp32 infer"] = rates["ours infer"][-1] / rates["ours fp32 infer"][-1]
                ratio["1mb/default infer"] = rates["ours infer 1mb"][-1] / rates["ours infer"][-1]
                if "ours infer +L" in rates:
                    ratio["lever infer"] = rates["ours infer +L"][-1] / rates["ours infer"][-1]
                if "ours infer eager" in rates:
                    ratio["kernels/eager infer"] = rates["ours infer"][-1] / rates["ours infer eager"][-1]
                if "ours infer compiled" in rates:
                    ratio["compiled/ours infer"] = rates["ours infer compiled"][-1] / rates["ours infer"][-1]
            if "ours adapter" in rates:
                bd_step = max(rates["bd adapter"][-1], rates.get("bd adapter bf16", [0.0])[-1])
                ratio["adapter"] = rates["ours adapter"][-1] / bd_step
                ratio["vs full"] = rates["ours adapter"][-1] / rates["bd full"][-1]
                if "ours adapter +L" in rates:
                    ratio["lever adapter"] = rates["ours adapter +L"][-1] / rates["ours adapter"][-1]
                if "ours adapter compiled" in rates:
                    ratio["compiled/ours adapter"] = rates["ours adapter compiled"][-1] / rates["ours adapter"][-1]
            for k, v in ratio.items():
                ratios.setdefault(k, []).append(v)
            print(f"  batch {b} repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f}/s" for k, v in rates.items())
                  + " | ratios " + ", ".join(f"{k} {v:.2f}x" for k, v in ratio.items()) + f" | load {os.getloadavg()[0]:.1f}", flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        print(f"batch {b} medians over {args.repeats} repeats (samples/s, achieved GFLOP/s from the hand count):")
        for name, v in med.items():
            print(f"  {name:16s} {v:8.2f} samples/s  {v * tokens * flops[name] / 1e9:6.1f} GFLOP/s")
        for name, v in splits.items():
            fwd, bwd = statistics.median(q[0] for q in v), statistics.median(q[1] for q in v)
            print(f"  {name:16s} forward {1e3 * fwd:7.1f} ms, backward {1e3 * bwd:7.1f} ms (medians; the rest is AdamW)")
        if "ours infer" in med:
            best_bd_infer = max(med["bd fp32 infer"], med.get("bd bf16 infer", bd_bf16))
            print(f"  bd best inference = {'fp32' if best_bd_infer == med['bd fp32 infer'] else 'bf16 autocast'} ({best_bd_infer:.2f} samples/s)")
            target = ">= 2.5 (native bf16)" if native_bf16 else ">= 1.3"
            print(f"  RATIO inference ours / bd best      {med['ours infer'] / best_bd_infer:.2f}x of medians,"
                  f" {statistics.median(ratios['infer']):.2f}x median per repeat (target {target})")
            ref_rate, ref_name = (bf16_rate, "bf16") if cont.precision == "bf16" else (fp32_rate, "fp32")
            share = med["ours infer"] * tokens * flops["ours infer"] / 1e9 / ref_rate
            print(f"  SHARE ours inference / {ref_name} matmul reference {100 * share:.0f} % by the hand count"
                  f" (target >= 70 % of bf16 with native bf16)")
            if "ours infer eager" in med:
                print(f"  RATIO ours inference, compiled kernels ({fast_path_name()}) / eager bf16 form"
                      f" {med['ours infer'] / med['ours infer eager']:.2f}x of medians,"
                      f" {statistics.median(ratios['kernels/eager infer']):.2f}x median per repeat")
            if "ours fp32 infer" in med:
                print(f"  RATIO ours auto ({cont.precision}) / ours fp32 inference {med['ours infer'] / med['ours fp32 infer']:.2f}x of medians,"
                      f" {statistics.median(ratios['auto/fp32 infer']):.2f}x median per repeat")
        if "ours adapter" in med:
            best_bd_step = max(med["bd adapter"], med.get("bd adapter bf16", 0.0))
            form = "fp32" if best_bd_step == med["bd adapter"] else "bf16 autocast"
            print(f"  RATIO adapter step ours / bd same-frozen ({form}, its best form) {med['ours adapter'] / best_bd_step:.2f}x of medians,"
                  f" {statistics.median(ratios['adapter']):.2f}x median per repeat (target >= 1.8)")
            print(f"  RATIO ours adapter / bd fp32 full   {med['ours adapter'] / med['bd full']:.2f}x of medians,"
                  f" {statistics.median(ratios['vs full']):.2f}x median per repeat (target >= 4)")
        del x, y

    # On a CPU with native bf16 also on the timed model's own shapes (the bf16 figures above).
    runs = [(args.agree_arch, args.agree_patches, args.agree_windows)]
    if native_bf16 and args.agree_timed_windows > 0:
        runs.append((args.arch, p, args.agree_timed_windows))
    for arch, patches, windows in runs:
        t0 = time.perf_counter()
        share, n_cls, diff = agreement(arch, c, patches, windows, 32)
        lo, hi = wilson_interval(share, windows)
        print(
            f"fp32 vs bf16-autocast predicted classes ({arch}, random init, {windows} windows of"
            f" {c}x{patches}): agree {100 * share:.1f}% (95 % interval {100 * lo:.1f}-{100 * hi:.1f}; {n_cls} distinct"
            f" classes predicted, max |logit diff| {diff:.3f}; {time.perf_counter() - t0:.0f} s)"
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f} (1 min)")


def main_device(args: argparse.Namespace) -> None:
    """Run the GPU comparison (:func:`device_report`) at each of ``--batch-sizes`` (default 64)."""
    from passport_kit.errors import ConfigError
    from passport_kit.runtime import resolve_device

    try:
        device = resolve_device(args.device)
    except ConfigError as exc:
        sys.exit(f"bench_model: {exc}")
    batch_sizes = [64] if args.batch_sizes == "16,64" else [int(b) for b in args.batch_sizes.split(",")]
    if args.quick:
        args.arch, batch_sizes, args.repeats = "cbramod-tiny", [4], 1
    bd_cls = import_braindecode_cbramod()
    if bd_cls is None:
        sys.exit("braindecode cannot be imported: pip install --no-deps braindecode (see tests/checkpoint/braindecode_harness.py)")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else str(device)
    print(f"device {device} ({name}), torch {torch.__version__}")
    cont = Contenders(args.arch, args.channels, args.patches, bd_cls, device=device)
    print(f"model {args.arch} ({cont.ours_eval.backbone.config.n_layers} layers), {args.channels} channels × "
          f"{args.patches} patches; ours: precision auto → {cont.precision}, SDPA fused kernels only")
    for b in batch_sizes:
        device_report(cont, b, repeats=args.repeats, iters=max(args.iters, 1), compiled=args.compile)


if __name__ == "__main__":
    main()
