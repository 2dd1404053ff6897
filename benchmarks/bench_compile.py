"""The compiler first: ``torch.compile`` (Inductor, CPU, bf16, weight freezing) against the hand-written bf16 ops.

For each compiled op of ``passport_kit/model/lowp/`` the same arithmetic written in torch ops is
compiled by Inductor (``torch._inductor.config.freezing = True``: the module's weights folded as
constants, as for inference) and timed against the op, interleaved (op, compiled, op, ...), on
cbramod-base shapes (``--batch`` × ``--channels`` × ``--patches``, d 200, 4 + 4 heads, FF 800):

- ``layer_norm`` (bf16 in and out, fp32 statistics); ``criss_cross_attention`` (both halves from the
  packed q/k/v); ``group_norm_gelu`` (the patch embedding's GroupNorm + GELU + add); ``spectrum_magnitude``;
- one criss-cross layer: the path this process runs (``amx`` / ``avx512``), the ``eager`` bf16 form, and
  ``CrissCrossLayer.forward`` compiled under bf16 autocast (default mode, and ``max-autotune`` with
  ``--autotune``);
- the patch embedding: the fast path's form against ``embed_patches`` compiled under autocast;
- with ``--model``: the whole ``Classifier`` (``--arch``) inference and its ``adapter`` training step,
  ours (the fast path) against ours compiled and braindecode's CBraMod (fp32 and bf16 autocast), the
  issue's ``bench_model.py`` comparison with the compiler beside it.

Times are the median per call of ``--repeats`` interleaved rounds of ``--iters`` calls, on
``--threads`` threads (1 by default: on a shared 2-core machine one thread's clock is its own work), by
the CPU clock of the process (``--clock cpu``) or the wall clock. Compile times are printed too.
Run::

    .venv/bin/python benchmarks/bench_compile.py [--threads 1] [--autotune] [--model]
"""

from __future__ import annotations

import argparse
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
from machine import machine_line  # noqa: E402

from passport_kit.model.fast_path import LOWP  # noqa: E402
from passport_kit.model.transformer import CrissCrossLayer  # noqa: E402

BF16 = torch.bfloat16
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def compiled(module: nn.Module, mode: str | None = None) -> Callable[..., torch.Tensor]:
    """Return ``torch.compile(module)`` on Inductor with weight freezing (compiled at its first call)."""
    import torch._inductor.config as inductor_config

    inductor_config.freezing = True
    return torch.compile(module, mode=mode)


def first_call(fn: Callable[[], object]) -> float:
    """Return the wall seconds of ``fn()``'s first call (a compiled function's compile time)."""
    start = time.perf_counter()
    with torch.inference_mode():
        fn()
    return time.perf_counter() - start


def interleaved(contenders: dict[str, Callable[[], object]], repeats: int, iters: int, clock: Callable[[], float],
                no_grad: bool = True) -> dict[str, float]:
    """Return the median seconds per call of each contender, timed in turn in every repeat."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            with torch.inference_mode(no_grad) if no_grad else torch.enable_grad():
                fn()  # warm
                start = clock()
                for _ in range(iters):
                    fn()
                times[name].append((clock() - start) / iters)
    return {k: statistics.median(v) for k, v in times.items()}


class LayerNormRef(nn.Module):
    """The ``layer_norm`` op in torch ops: bf16 in and out, fp32 statistics."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w = nn.Parameter(1 + 0.1 * torch.randn(d), requires_grad=False)
        self.b = nn.Parameter(0.1 * torch.randn(d), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x.float(), (x.shape[-1],), self.w, self.b, 1e-5).to(BF16)


class AttentionRef(nn.Module):
    """The ``criss_cross_attention`` op in torch ops: q (scale folded in), k, v of both halves from ``(B, C, P, 6E)``."""

    def __init__(self, heads: tuple[int, int]) -> None:
        super().__init__()
        self.heads = heads

    def forward(self, qkv: torch.Tensor) -> torch.Tensor:
        b, c, p, six_e = qkv.shape
        e = six_e // 6
        outs = []
        for axis, (start, n_heads) in enumerate(((0, self.heads[0]), (3 * e, self.heads[1])), start=1):
            hd = e // n_heads
            t = qkv[..., start : start + 3 * e].reshape(b, c, p, 3, n_heads, hd)
            # spatial: sequences over C for each (b, p, head); temporal: over P for each (b, c, head)
            t = t.permute(3, 0, 2, 4, 1, 5) if axis == 1 else t.permute(3, 0, 1, 4, 2, 5)
            q, k, v = t[0], t[1], t[2]
            w = torch.softmax(torch.matmul(q, k.transpose(-1, -2)).float(), dim=-1).to(BF16)
            o = torch.matmul(w, v)  # (b, p|c, h, L, hd)
            o = o.permute(0, 3, 1, 2, 4) if axis == 1 else o.permute(0, 1, 3, 2, 4)
            outs.append(o.reshape(b, c, p, e))
        return torch.cat(outs, dim=-1)


class GroupNormGeluRef(nn.Module):
    """The ``group_norm_gelu`` op in torch ops: per-sample GroupNorm over ``(B, R, D)`` rows (fp32), GELU, + add, bf16."""

    def __init__(self, d: int, groups: int) -> None:
        super().__init__()
        self.groups = groups
        self.w = nn.Parameter(1 + 0.1 * torch.randn(d), requires_grad=False)
        self.b = nn.Parameter(0.1 * torch.randn(d), requires_grad=False)

    def forward(self, x: torch.Tensor, add: torch.Tensor) -> torch.Tensor:
        b, r, d = x.shape
        h = x.float().view(b, r, self.groups, d // self.groups)
        mean = h.mean(dim=(1, 3), keepdim=True)
        var = h.var(dim=(1, 3), keepdim=True, correction=0)
        h = ((h - mean) * torch.rsqrt(var + 1e-5)).view(b, r, d) * self.w + self.b
        return (F.gelu(h) + add.float()).to(BF16)


class MagnitudeRef(nn.Module):
    """The ``spectrum_magnitude`` op in torch ops: ``|z|`` of ``(..., F, 2)`` fp32 pairs, as bf16."""

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return z.pow(2).sum(-1).sqrt().to(BF16)


class LayerInBf16(nn.Module):
    """One criss-cross layer's graph-path forward under bf16 autocast (what the compiler is given)."""

    def __init__(self, layer: CrissCrossLayer) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=BF16):
            return self.layer(x)


def op_rows(args: argparse.Namespace, clock: Callable[[], float]) -> list[tuple[str, dict[str, float], dict[str, float]]]:
    """Return ``(op, {contender: s per call}, {compiled contender: compile s})`` for every op and the layer."""
    from passport_kit.model.lowp import layer as lowp_layer
    from passport_kit.model.lowp import loader
    from passport_kit.model.lowp.cast import forget

    kernels = loader.ops()
    if kernels is None:
        sys.exit("the lowp kernels are not loaded here: make fast (python -m passport_kit.model.lowp.build) builds them")
    b, c, p, d = args.batch, args.channels, args.patches, 200
    g = torch.Generator().manual_seed(0)
    rows: list[tuple[str, dict[str, float], dict[str, float]]] = []

    def run(name: str, ours: dict[str, Callable[[], object]], refs: dict[str, Callable[[], object]]) -> None:
        compile_s = {k: first_call(fn) for k, fn in refs.items()}
        rows.append((name, interleaved({**ours, **refs}, args.repeats, args.iters, clock), compile_s))
        print(f"  {name}: done", flush=True)

    x = (torch.randn(b, c, p, d, generator=g)).to(BF16)
    ln = LayerNormRef(d).eval()
    ln_c = compiled(ln)
    run("layer_norm", {"op": lambda: kernels.layer_norm(x, ln.w.to(BF16), ln.b.to(BF16), 1e-5)},
        {"compiled": lambda: ln_c(x)})

    qkv = (torch.randn(b, c, p, 3 * d, generator=g) * 1.5).to(BF16)
    att = AttentionRef((4, 4)).eval()
    att_c = compiled(att)
    run("criss_cross_attention", {"op": lambda: kernels.criss_cross_attention(qkv, 4, 4)},
        {"compiled": lambda: att_c(qkv)})

    rows_per_sample, width = c * p, 200  # the patch embedding's blocks: (B, C·P, 25·8) after each conv product
    h = torch.randn(b, rows_per_sample, width, generator=g).to(BF16)
    add = torch.randn(b, rows_per_sample, width, generator=g).to(BF16)
    gn = GroupNormGeluRef(width, 5).eval()
    gn_c = compiled(gn)
    run("group_norm_gelu", {"op": lambda: kernels.group_norm_gelu(h, 5, gn.w, gn.b, 1e-5, add)},
        {"compiled": lambda: gn_c(h, add)})

    z = torch.view_as_real(torch.fft.rfft(torch.randn(b * c * p, 200, generator=g), dim=-1))
    mag = MagnitudeRef().eval()
    mag_c = compiled(mag)
    run("spectrum_magnitude", {"op": lambda: kernels.spectrum_magnitude(z)}, {"compiled": lambda: mag_c(z)})

    torch.manual_seed(0)
    layer = CrissCrossLayer(d, 8, 800, 0.1).eval().requires_grad_(False)
    path = lowp_layer.process_path()
    ours: dict[str, Callable[[], object]] = {}
    for chosen in (path, *(("avx512",) if path == "amx" else ()), "eager"):
        forget(layer)
        original = lowp_layer.process_path
        lowp_layer.process_path = lambda dtype=BF16, chosen=chosen: chosen  # type: ignore[assignment]
        try:
            lowp_layer.prepare(layer, BF16)
        finally:
            lowp_layer.process_path = original  # type: ignore[assignment]
        prepared = layer.__dict__["_frozen_cast"]

        def form(prepared=prepared) -> torch.Tensor:
            layer.__dict__["_frozen_cast"] = prepared
            return lowp_layer.layer_forward(layer, x)[0]

        ours[f"ours {chosen}"] = form
    wrapped = LayerInBf16(layer).eval()
    xf = x.float()
    refs: dict[str, Callable[[], object]] = {"compiled": (lambda fn=compiled(wrapped): fn(xf))}
    if args.autotune:
        refs["compiled max-autotune"] = lambda fn=compiled(LayerInBf16(layer).eval(), "max-autotune"): fn(xf)
    refs["autocast (graph path, not compiled)"] = lambda: wrapped(xf)
    run(f"criss-cross layer ({path} path here)", ours, refs)
    forget(layer)
    return rows


def main() -> None:
    """Print the op-by-op table: each hand-written op against its compiled torch form."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--channels", type=int, default=12)
    parser.add_argument("--patches", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu")
    parser.add_argument("--autotune", action="store_true", help="also compile the layer with mode='max-autotune'")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if LOWP is None:
        sys.exit("model/lowp/ is absent: nothing hand-written to compare")
    print(machine_line(args.threads))
    print(f"bf16 fast path here: {LOWP.process_path()}; batch {args.batch} × {args.channels} ch × {args.patches} patches;"
          f" {args.clock} clock, median of {args.repeats} interleaved rounds of {args.iters} calls")
    rows = op_rows(args, CLOCKS[args.clock])
    print("| op | contender | ms per call | compiled / op | compile s |\n|---|---|---|---|---|")
    for name, times, compile_s in rows:
        base_key = next(iter(times))
        for key, seconds in times.items():
            ratio = seconds / times[base_key]
            comp = f"{compile_s[key]:.0f}" if key in compile_s and key.startswith("compiled") else ""
            print(f"| {name} | {key} | {1e3 * seconds:.3f} | {ratio:.2f} | {comp} |")


if __name__ == "__main__":
    main()
