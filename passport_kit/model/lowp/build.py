"""Build the fused bf16 CPU kernels (``kernels.cpp``, ``amx.cpp``, ``lowp.h``) into ``passport_kit/model/lowp/_lowp_kernels.so``.

Run once after installing (``make install`` does, and goes on without it when this fails)::

    .venv/bin/python -m passport_kit.model.lowp.build

Nothing is built at import time or in the tests: without the library the encoder runs its eager
bf16 path unchanged (:mod:`passport_kit.model.lowp.loader`). The build goes through
``torch.utils.cpp_extension.load`` (ninja and a C++17 compiler) into ``build/lowp_kernels`` of
the repository, never the user's home, and the library is copied next to this module. It is
compiled for x86-64-v4 (AVX-512) with AVX-512 BF16, tuned for this machine, and loaded only
where the CPU has AVX-512 BF16 and torch itself runs AVX-512 kernels (``amx.cpp``'s
ops are also built for AMX and runs only where ``amx_available()`` says so); rebuild
after upgrading torch or pulling new sources (``make install`` does): a library built against
another torch or from other sources is not loaded (see ``_lowp_kernels.so.torch``), and the eager
path runs.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
from pathlib import Path

import torch

from passport_kit.model.lowp.loader import LIBRARY, SOURCES, TORCH_STAMP, library_key, library_stamp

HERE = Path(__file__).resolve().parent
# All sources (loader.SOURCES) go into the one library; amx.cpp (the products on AMX tiles) adds its
# ops to the same ``passport_kit`` namespace; both include lowp.h (in the loader's digest).
# -mamx-tile -mamx-bf16: GCC emits AMX instructions only where amx.cpp calls the intrinsics,
# and that op checks for AMX at run time (amx_available) before it runs any.
FLAGS = ["-O3", "-march=x86-64-v4", "-mtune=native", "-mprefer-vector-width=512", "-mavx512bf16", "-mamx-tile",
         "-mamx-bf16", "-ffp-contract=fast", "-fopenmp"]


def build(build_dir: Path, *, verbose: bool = False) -> Path:
    """Return the path of the built library, ``_lowp_kernels.so`` beside this module."""
    from torch.utils import cpp_extension

    build_dir.mkdir(parents=True, exist_ok=True)
    cpp_extension.load(name="_lowp_kernels", sources=[str(path) for path in SOURCES], extra_cflags=FLAGS,
                       extra_ldflags=["-fopenmp"], build_directory=str(build_dir),
                       is_python_module=False, verbose=verbose)
    TORCH_STAMP.unlink(missing_ok=True)  # no stamp while the library is being replaced: nothing loads a half copy
    shutil.copyfile(build_dir / "_lowp_kernels.so", LIBRARY)
    # The library is bound to this torch's C++ ABI and to these sources (line 1), and is this very file (line 2:
    # size and SHA-256): the loader compares both before it loads anything.
    TORCH_STAMP.write_text(f"{library_key()}\n{library_stamp(LIBRARY)}\n", encoding="utf-8")
    return LIBRARY


def runs_here() -> bool:
    """Return whether this machine can run the library: x86-64 with AVX-512 BF16, torch running AVX-512 kernels.

    The same conditions the loader checks before it loads the library (:func:`~.loader.ops`).
    """
    from passport_kit.runtime import cpu_supports_bf16

    return (platform.machine().lower() in ("x86_64", "amd64") and cpu_supports_bf16()
            and "AVX512" in str(torch.backends.cpu.get_cpu_capability()).upper())


def main(argv: list[str] | None = None) -> int:
    """Build the library; return 0, or 1 with one line saying why not (the eager path stays).

    ``--required-where-it-runs`` (``make install``): a failure is 1 only on a machine that runs the
    library (:func:`runs_here`), so CI there fails on a broken build; elsewhere it is 0, with the line.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, default=HERE.parents[2] / "build" / "lowp_kernels",
                        help="where the compiler's files go (default: build/lowp_kernels of the repository)")
    parser.add_argument("--required-where-it-runs", action="store_true",
                        help="exit 1 on a failed build only where this CPU runs the library (AVX-512 BF16); 0 elsewhere")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    failed = 0 if args.required_where_it_runs and not runs_here() else 1
    if platform.machine().lower() not in ("x86_64", "amd64"):
        print(f"lowp kernels: not built on {platform.machine()} (x86-64 only); the eager bf16 path runs")
        return failed
    try:
        path = build(args.build_dir, verbose=args.verbose)
    except Exception as err:  # noqa: BLE001  (a compiler or ninja problem: say so in one line, keep the eager path)
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        where = ("; this CPU runs it (AVX-512 BF16): fix the build" if failed and args.required_where_it_runs
                 else "; the eager bf16 path runs")
        print(f"lowp kernels: build failed ({first}){where}", file=sys.stderr)
        return failed
    print(f"lowp kernels: built {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
