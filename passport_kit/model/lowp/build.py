"""Build the fused bf16 CPU kernels (``kernels.cpp``, ``amx.cpp``, ``lowp.h``) into ``passport_kit/model/lowp/_lowp_kernels.so``.

An opt-in, for CPUs with AVX-512 BF16 (x86-64-v4; AMX adds the products on tiles)::

    make fast          # or: .venv/bin/python -m passport_kit.model.lowp.build

The default install builds nothing (pure Python and torch, any x86-64 CPU): without the library the
encoder runs its eager bf16 path unchanged (:mod:`passport_kit.model.lowp.loader`), and the default
``auto``/``probe`` recipes never run the encoder in bf16 at all. Nothing that can end the process
by a signal runs in it (issue 54: on an AVX2-only CPU loading the library was an illegal
instruction, which killed ``make install``):

1. the CPU's flags are checked first (:func:`~.probe.cpu_problem`): without x86-64-v4 and AVX-512
   BF16 nothing is compiled;
2. the compile runs in a child process (``torch.utils.cpp_extension.load``: ninja and a C++17
   compiler, into ``build/lowp_kernels`` of the repository, never the user's home; it loads what
   it built, which only the child does);
3. the library is copied beside this module (a new file, renamed into place) and stamped with this
   torch, the sources' digest and its own size and SHA-256 (``_lowp_kernels.so.torch``: the loader
   loads nothing else);
4. its self-test runs in another child (:func:`~.probe.verified`): every op on small inputs
   against torch's arithmetic, the AMX ops where the CPU has AMX; the result is kept beside the
   library (``_lowp_kernels.so.probe``), so the loader does not run it again.

Any step that fails prints one line (a child killed by a signal: the signal and the CPU), leaves
no library behind, and exits 2; the eager bf16 path stays. Rebuild after upgrading torch or pulling
new sources (``make fast`` does): a library built against another torch or from other sources is
not loaded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from passport_kit.model.lowp import probe
from passport_kit.model.lowp.loader import LIBRARY, SOURCES, TORCH_STAMP, library_key, library_stamp

HERE = Path(__file__).resolve().parent
# All sources (loader.SOURCES) go into the one library; amx.cpp (the products on AMX tiles) adds its
# ops to the same ``passport_kit`` namespace; both include lowp.h (in the loader's digest).
# -mamx-tile -mamx-bf16: GCC emits AMX instructions only where amx.cpp calls the intrinsics,
# and that op checks for AMX at run time (amx_available) before it runs any.
FLAGS = ["-O3", "-march=x86-64-v4", "-mtune=native", "-mprefer-vector-width=512", "-mavx512bf16", "-mamx-tile",
         "-mamx-bf16", "-ffp-contract=fast", "-fopenmp"]
#: Seconds the compile may take (two ~1000-line files at -O3 on a loaded 2-core machine: about a minute).
COMPILE_TIMEOUT_S = 1800
#: What a failed build leaves the user with.
EAGER = "the eager bf16 path runs"


def compile_library(build_dir: Path, *, verbose: bool = False) -> Path:
    """Return the library compiled into ``build_dir``; it loads it into *this* process: call it in a child only."""
    from torch.utils import cpp_extension

    build_dir.mkdir(parents=True, exist_ok=True)
    cpp_extension.load(name="_lowp_kernels", sources=[str(path) for path in SOURCES], extra_cflags=FLAGS,
                       extra_ldflags=["-fopenmp"], build_directory=str(build_dir),
                       is_python_module=False, verbose=verbose)
    return build_dir / "_lowp_kernels.so"


def install(built: Path) -> list[str]:
    """Copy ``built`` to :data:`~.loader.LIBRARY` as a new file and stamp it; return the stamp's lines.

    The stamp goes first (nothing loads a library without a stamp of its own), the library is
    renamed into place (a process that has the old one mapped keeps it), then the new stamp.
    """
    TORCH_STAMP.unlink(missing_ok=True)
    partial = LIBRARY.with_name(LIBRARY.name + ".partial")
    shutil.copyfile(built, partial)
    os.replace(partial, LIBRARY)
    # The library is bound to this torch's C++ ABI and to these sources (line 1), and is this very file (line 2:
    # size and SHA-256): the loader compares both before it loads anything.
    lines = [library_key(), library_stamp(LIBRARY)]
    TORCH_STAMP.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


def remove_library() -> None:
    """Remove the library and its stamps: a build that failed leaves nothing the loader would try."""
    for path in (TORCH_STAMP, LIBRARY, LIBRARY.with_name(LIBRARY.name + ".probe")):
        path.unlink(missing_ok=True)


def build(build_dir: Path, *, verbose: bool = False) -> str | None:
    """Build, install and test the library; return None, or why it is not there (one phrase)."""
    problem = probe.cpu_problem()
    if problem is not None:
        return f"not built: {problem}"
    args = ["-m", "passport_kit.model.lowp.build", "--compile-in-child", "--build-dir", str(build_dir)]
    failed = probe.run_child(args + (["--verbose"] if verbose else []), timeout=COMPILE_TIMEOUT_S, show_output=verbose)
    if failed is not None:
        return f"build failed: the compile {failed}"
    stamp = install(build_dir / "_lowp_kernels.so")
    failed = probe.verified(LIBRARY, stamp[1])
    if failed is not None:
        remove_library()
        return f"built, but its self-test failed, so it was removed: {failed}"
    return None


def _compile_child(build_dir: Path, verbose: bool) -> int:
    """The compile's child: 0, or 1 with the error's first line on stderr."""
    probe.child_start()
    try:
        compile_library(build_dir, verbose=verbose)
    except Exception as err:  # noqa: BLE001  (a compiler or ninja problem: its first line goes to the parent)
        print(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__, file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Build the library; return 0, or 2 with one line saying why not (the eager bf16 path stays)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, default=HERE.parents[2] / "build" / "lowp_kernels",
                        help="where the compiler's files go (default: build/lowp_kernels of the repository)")
    parser.add_argument("--verbose", action="store_true", help="show the compiler's output")
    parser.add_argument("--compile-in-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.compile_in_child:
        return _compile_child(args.build_dir, args.verbose)
    problem = build(args.build_dir, verbose=args.verbose)
    if problem is not None:
        print(f"lowp kernels: {problem}; {EAGER}", file=sys.stderr)
        return 2
    amx = "on AMX tiles" if probe.AMX_FLAGS <= probe.cpu_flags() else "AVX-512 BF16 (no AMX here)"
    print(f"lowp kernels: built {LIBRARY} and tested on this CPU ({amx}); bf16 inference takes them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
