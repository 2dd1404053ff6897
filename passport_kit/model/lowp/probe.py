"""The compiled library tried in a child process: nothing that can die by a signal runs in the caller's process.

The library is compiled for x86-64-v4 with AVX-512 BF16 (and AMX in ``amx.cpp``): loading it runs
AVX-512 code (static initialisers), its ops run AVX-512 BF16 and AMX instructions, and a library cut
short faults when it is read. On a CPU without those instructions, or with a damaged file, that is a
signal (SIGILL, SIGBUS, SIGSEGV), which Python cannot catch: it ends the process with no message
(issue 54: ``make install`` died by an illegal instruction on an AVX2-only AMD EPYC; issue 46: a
truncated library killed ``predict`` by SIGBUS). So:

- :func:`cpu_problem` reads the CPU's flags first (``/proc/cpuinfo``, pure Python): the x86-64-v4
  flags and ``avx512_bf16``; without them nothing is compiled or loaded;
- :func:`run_child` runs each step that loads or runs the library (the compile, which
  ``torch.utils.cpp_extension`` ends by loading what it built, and the self-test) in a child
  process; a child killed by a signal becomes one line naming the signal and the CPU;
- :func:`self_test` (the child: :data:`CHILD`, :func:`main`) loads the
  library, checks that it has every op the sources define and runs each op on small inputs against
  torch's own arithmetic (the AMX ops only where the CPU's flags list AMX and ``amx_available()``
  agrees);
- :func:`verified` is what the loader asks before it loads the library into its own process: the
  self-test's result, kept beside the library (``_lowp_kernels.so.probe``: the library's size and
  SHA-256, this CPU, and ``ok`` or why not), so the child runs once per library and CPU (the build
  runs it right after compiling).
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import resource
import signal
import subprocess
import sys
from pathlib import Path

import torch

from passport_kit.atomic_io import atomic_write_text
from passport_kit.runtime import CPU_FLAGS_ENV, cpu_flags, cpu_name

log = logging.getLogger(__name__)

#: The /proc/cpuinfo flags of x86-64-v4 (the build's -march; v2 and v3 included, ``abm`` is LZCNT) and AVX-512 BF16.
REQUIRED_FLAGS = frozenset({
    "cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3",  # x86-64-v2
    "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",  # x86-64-v3
    "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl",  # x86-64-v4
    "avx512_bf16",  # kernels.cpp's vdpbf16ps
})
#: The flags ``amx.cpp``'s ops need (each also asks ``amx_available()``: CPUID and the kernel's permission).
AMX_FLAGS = frozenset({"amx_tile", "amx_bf16"})
#: Tests only: a child started by :func:`run_child` first sends itself this signal (e.g. ``SIGILL``), as
#: a library that runs an instruction this CPU lacks would.
CHILD_SIGNAL_ENV = "PASSPORT_KIT_LOWP_CHILD_SIGNAL"
#: The self-test child's exit status where the library is at fault (its verdict, recorded; another status is not).
VERDICT = 3
#: The self-test child's program (not ``-m``: the package has imported this module before runpy would run it).
CHILD = "import sys; from passport_kit.model.lowp.probe import main; sys.exit(main(sys.argv[1:]))"
#: Seconds a self-test child may take (importing torch on a loaded machine); one that takes longer is not recorded.
PROBE_TIMEOUT_S = 300


def cpu_problem() -> str | None:
    """Return why this CPU cannot run the library (one phrase), or None where it can.

    Reads the flags only (:func:`passport_kit.runtime.cpu_flags`, ``PASSPORT_KIT_CPU_FLAGS`` to
    simulate another CPU), and torch's kernel level: both are safe on any CPU.
    """
    simulated = CPU_FLAGS_ENV in os.environ
    machine = platform.machine().lower()
    if not simulated and machine not in ("x86_64", "amd64"):
        return f"{machine} is not x86-64"
    missing = sorted(REQUIRED_FLAGS - cpu_flags())
    if missing:
        shown = ", ".join(missing[:6]) + (" ..." if len(missing) > 6 else "")
        return f"{cpu_name()} lacks {shown} (the kernels need x86-64-v4 with AVX-512 BF16)"
    if not simulated and "AVX512" not in str(torch.backends.cpu.get_cpu_capability()).upper():
        return f"torch runs no AVX-512 kernels on {cpu_name()} (ATEN_CPU_CAPABILITY?)"
    return None


def cpu_key() -> str:
    """Return what names this CPU in the self-test's record: its model name and a digest of its flags."""
    flags = " ".join(sorted(cpu_flags()))
    return f"cpu {cpu_name()} flags={hashlib.sha256(flags.encode()).hexdigest()[:16]}"


def _signal_name(number: int) -> str:
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"signal {number}"
    return f"{sig.name} ({signal.strsignal(sig) or sig.name})"


def _child(args: list[str], *, timeout: float, show_output: bool = False) -> tuple[int | None, str | None]:
    """Return the exit status of ``python args...`` in a child process and one line saying how it ended.

    The status is None after a timeout; the line is None where the child succeeded. The child
    imports what this process imports (its ``sys.path``, as ``PYTHONPATH``).
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path or os.getcwd() for path in sys.path)}
    try:
        done = subprocess.run([sys.executable, *args], stdout=None if show_output else subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout, check=False, env=env)
    except subprocess.TimeoutExpired:
        return None, f"did not finish in {timeout:.0f} s"
    if done.returncode < 0:
        return done.returncode, f"killed by {_signal_name(-done.returncode)} on {cpu_name()}"
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        return done.returncode, lines[-1] if lines else f"exited with status {done.returncode}"
    return 0, None


def run_child(args: list[str], *, timeout: float, show_output: bool = False) -> str | None:
    """Return None when ``python args...`` succeeds in a child process, else one line saying how it ended.

    Killed by a signal: "killed by SIGILL (Illegal instruction) on <CPU>"; an exit status: the
    child's last line on stderr. ``show_output`` passes the child's stdout through (``--verbose``).
    """
    return _child(args, timeout=timeout, show_output=show_output)[1]


def child_start() -> None:
    """Start a child of :func:`run_child`: with ``CHILD_SIGNAL_ENV`` set (tests), die by that signal, dumping no core."""
    name = os.environ.get(CHILD_SIGNAL_ENV)
    if not name:
        return
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.kill(os.getpid(), getattr(signal, name))


def _record_path(library: Path) -> Path:
    return library.with_name(library.name + ".probe")


def verified(library: Path, library_line: str) -> str | None:
    """Return None where ``library`` passed its self-test on this CPU, else why not (one phrase).

    ``library_line`` is the library's stamp (``library size=... sha256=...``, checked by the caller
    against the file). A recorded result for this library and CPU is reused; otherwise the
    self-test runs in a child and its verdict (a pass, a failure, or death by a signal) is
    recorded; a timeout or a child that fails before its verdict is not.
    """
    record = _record_path(library)
    key = f"{library_line}\n{cpu_key()}\n"
    try:
        text = record.read_text(encoding="utf-8") if record.is_file() else ""
    except OSError:
        text = ""
    if text.startswith(key):
        result = text[len(key):].strip()
        return None if result == "ok" else result.removeprefix("failed: ")
    status, problem = _child(["-c", CHILD, str(library)], timeout=PROBE_TIMEOUT_S)
    if status not in (0, VERDICT) and (status is None or status > 0):
        # a timeout (a loaded machine) or a child that failed before its verdict (a traceback): not the library's
        # result, so not recorded, and tried again in the next process
        return f"its self-test {problem}" if status is None else f"its self-test could not run ({problem})"
    try:
        atomic_write_text(record, key + ("ok" if problem is None else f"failed: {problem}") + "\n")
    except OSError as err:  # a read-only install: the child runs again in the next process
        log.debug("lowp kernels: self-test result not recorded (%s)", err)
    return problem


def _rel(got, ref) -> float:  # noqa: ANN001
    """Return the relative error of ``got`` against ``ref`` (inf where ``got`` is not finite)."""
    error = float((got.double() - ref.double()).norm() / ref.double().norm().clamp_min(1e-30))
    return error if error == error else float("inf")  # NaN: not finite


def _attention64(qkv, heads: tuple[int, int]):  # noqa: ANN001, ANN202
    """Return both attention halves of ``qkv`` ``(B, C, P, 6E)`` in fp64 (q scaled already), as ``(B, C, P, 2E)``."""
    b, c, p, six_e = qkv.shape
    e = six_e // 6
    halves = []
    for axis, half, n in ((1, qkv[..., : 3 * e], heads[0]), (2, qkv[..., 3 * e :], heads[1])):
        q, k, v = half.double().reshape(b, c, p, 3, n, e // n).movedim(axis, -2).unbind(2)  # (B, ·, H, L, hd)
        out = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
        halves.append(out.permute(0, 3, 1, 2, 4) if axis == 1 else out.permute(0, 1, 3, 2, 4))
    return torch.cat([h.reshape(b, c, p, e) for h in halves], -1)


def _test_avx512_ops(ops) -> list[str]:  # noqa: ANN001
    """Return the names of ``kernels.cpp``'s ops that fail or disagree with torch (fp64) on small inputs."""
    import torch.nn.functional as F

    bf16, g = torch.bfloat16, torch.Generator().manual_seed(0)
    x = (torch.randn(2, 3, 200, generator=g) * 2 + 0.5).to(bf16)
    w, b = (torch.rand(200, generator=g) + 0.5).to(bf16), torch.randn(200, generator=g).to(bf16)
    z = torch.randn(37, dtype=torch.complex64, generator=g)
    qkv = torch.randn(2, 3, 4, 600, generator=g).to(bf16)
    checks = {
        "layer_norm": lambda: _rel(ops.layer_norm(x, w, b, 1e-5), F.layer_norm(x.double(), (200,), w.double(), b.double())),
        "group_norm_gelu": lambda: _rel(ops.group_norm_gelu(x, 5, w.float(), b.float(), 1e-5, None), F.gelu(
            F.group_norm(x.double().transpose(1, 2), 5, w.double(), b.double(), 1e-5)).transpose(1, 2)),
        "spectrum_magnitude": lambda: _rel(ops.spectrum_magnitude(torch.view_as_real(z)), z.abs()),
        "criss_cross_attention": lambda: _rel(ops.criss_cross_attention(qkv, 4, 4, amx=False), _attention64(qkv, (4, 4))),
    }
    failed = []
    for name, check in checks.items():
        try:
            error = check()
        except RuntimeError as err:
            log.debug("%s: %s", name, err)
            error = float("inf")
        if not error < 0.02:  # bf16 outputs: ~0.3 % here
            failed.append(name)
    return failed


def _test_amx_ops(ops) -> list[str]:  # noqa: ANN001
    """Return the names of ``amx.cpp``'s ops that fail on small inputs, or disagree with each other.

    One criss-cross layer of the model's width (200, 4 + 4 heads, feed-forward 800) as the three ops
    and as the one-op form, which are bit-identical (tests/model/lowp/test_lowp_sample_layer.py).
    """
    bf16, g = torch.bfloat16, torch.Generator().manual_seed(1)

    def block_diagonal(n: int, k: int) -> torch.Tensor:
        w = torch.zeros(2 * n, 2 * k)
        w[:n, :k], w[n:, k:] = torch.randn(n, k, generator=g) / k**0.5, torch.randn(n, k, generator=g) / k**0.5
        return w.to(bf16)

    def vec(n: int) -> torch.Tensor:
        return (0.2 * torch.randn(n, generator=g)).to(bf16)

    x = torch.randn(2, 3, 4, 200, generator=g).to(bf16)
    norm_w, norm_b = (1 + vec(200).float()).to(bf16), vec(200)
    try:
        w_in, w_out = ops.pack_attention_weight(block_diagonal(300, 100)), ops.pack_attention_weight(block_diagonal(100, 100))
        w1 = ops.pack_feed_forward_weight((torch.randn(800, 200, generator=g) / 14).to(bf16))
        w2 = ops.pack_feed_forward_weight((torch.randn(200, 800, generator=g) / 28).to(bf16))
        b_in, b_out, b1, b2 = vec(600), vec(200), vec(800), vec(200)
        qkv = ops.attention_input(x, norm_w, norm_b, 1e-5, w_in, b_in)
        att = ops.criss_cross_attention(qkv, 4, 4, amx=True)
        three = ops.attention_output_feed_forward(att, x, w_out, b_out, norm_w, norm_b, 1e-5, w1, b1, w2, b2)
        one = ops.criss_cross_layer(x, norm_w, norm_b, 1e-5, w_in, b_in, 4, 4, w_out, b_out, norm_w, norm_b, 1e-5,
                                    w1, b1, w2, b2)
        ff = ops.feed_forward(x, x, w1, b1, w2, b2)
        gelu = ops.gelu_(x.clone())
    except RuntimeError as err:
        return [f"the AMX ops ({str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__})"]
    outputs = {"criss_cross_layer": one, "attention_output_feed_forward": three, "feed_forward": ff, "gelu_": gelu}
    failed = [name for name, out in outputs.items() if not torch.isfinite(out.float()).all()]
    if not failed and not torch.equal(one, three):
        failed.append("criss_cross_layer (differs from the three ops)")
    if not _rel(att, _attention64(qkv, (4, 4))) < 0.02:
        failed.append("criss_cross_attention on AMX")
    return failed


def self_test(library: Path) -> str | None:
    """Return None when ``library`` loads and its ops run right on small inputs, else what is wrong (one phrase).

    Runs the library in *this* process: call it only in a child (:data:`CHILD`).
    """
    from passport_kit.model.lowp.loader import missing_ops

    try:
        torch.ops.load_library(str(library))
    except (OSError, RuntimeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"does not load ({first})"
    missing = missing_ops(torch.ops.passport_kit)
    if missing:
        return f"lacks the ops {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}"
    ops = torch.ops.passport_kit
    failed = _test_avx512_ops(ops)
    if AMX_FLAGS <= cpu_flags() and ops.amx_available():
        failed += _test_amx_ops(ops)
    return f"gives wrong results in {', '.join(failed)}" if failed else None


def main(argv: list[str]) -> int:
    """The child: test the library ``argv[0]``; 0, or :data:`VERDICT` with one line on stderr saying what is wrong."""
    child_start()
    problem = self_test(Path(argv[0]))
    if problem is not None:
        print(problem, file=sys.stderr)
        return VERDICT
    return 0
