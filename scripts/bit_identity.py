"""Hashes of what adapt and predict write on a tiny simulated data set: compare them before and after a refactor.

A change that only moves code must leave every adapter tensor, every ``adapter.json`` value (but the
time stamps and paths of this run) and every prediction output bit-identical. The script simulates
three 30-minute nights on ``eesm19-ear`` (subject s03 with a noisy and a flat channel), runs

- ``adapt --recipe auto`` (the default: the ladder, the sleep stager first),
- ``adapt --recipe probe``,
- ``adapt --recipe finetune --max-steps 4``,
- ``adapt --recipe finetune --max-steps 4 --quality-gate`` (the noise-expert gate),

each on the CPU with one thread, and ``predict`` with each bundle on the bad night (once with
``--mask-bad-channels 0.5``); it prints one SHA-256 per output and one over all of them.

Run it on the code of a checkout (``PYTHONPATH`` chooses which)::

    PYTHONPATH=. .venv/bin/python scripts/bit_identity.py              # this tree
    git worktree add /tmp/before HEAD~1
    PYTHONPATH=/tmp/before .venv/bin/python scripts/bit_identity.py    # the commit before

and compare the last line (``all``) of the two runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# Values of adapter.json / summary.json that name this run rather than what it computed. The seal (issue 57) hashes
# every other key, `created` among them, so it differs from run to run; what it seals is compared key by key.
VOLATILE_KEYS = {"created", "package_version", "seconds", "data", "out", "adapter", "recording", "seal"}


def scrub(value: Any) -> Any:
    """Return ``value`` without the keys that name a time or a path of this run."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in sorted(value.items()) if k not in VOLATILE_KEYS and not k.endswith("_seconds")}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str) and ("/tmp" in value or os.sep + "bitid" in value):
        return "<path>"
    return value


def file_hash(path: Path) -> str:
    """Return the SHA-256 of one output: tensors by name and bytes, JSON scrubbed, text as is."""
    digest = hashlib.sha256()
    if path.suffix == ".safetensors":
        from safetensors.numpy import load_file

        for name, array in sorted(load_file(str(path)).items()):
            digest.update(name.encode() + str(array.dtype).encode() + str(array.shape).encode() + array.tobytes())
    elif path.suffix == ".json":
        digest.update(json.dumps(scrub(json.loads(path.read_text())), sort_keys=True).encode())
    else:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cli(*args: str, env: dict[str, str]) -> None:
    """Run ``passport-kit ARGS`` with the interpreter and ``PYTHONPATH`` of this process."""
    code = "from passport_kit.cli.app import main; main()"
    result = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"passport-kit {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None, help="Folder for the runs (default: a temporary one).")
    parser.add_argument("--quick", action="store_true", help="The probe bundle and its predictions only.")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bitid"))
    env = dict(os.environ, PASSPORT_KIT_HOME=str(work / "home"), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    data, night = work / "data", None
    cli("simulate", "--montage", "eesm19-ear", "--subjects", "3", "--hours", "0.5", "--seed", "4",
        "--bad-channels", "s03:ELA:noise,s03:ERB:flat", "--out", str(data), "-q", env=env)
    night = next(p for p in sorted(data.rglob("*.edf")) if "s03" in p.name)
    common = ["--montage", "eesm19-ear", "--data", str(data), "--device", "cpu", "--precision", "fp32",
              "--threads", "1", "--no-progress", "--seed", "0", "-q"]
    runs = {"auto": ["--recipe", "auto"],  # the default: the ladder, stager first on these nights
            "probe": ["--recipe", "probe"],
            "finetune": ["--recipe", "finetune", "--max-steps", "4", "--batch-size", "16"],
            "gated": ["--recipe", "finetune", "--max-steps", "4", "--batch-size", "16", "--quality-gate"]}
    if args.quick:
        runs = {"probe": runs["probe"]}
    outputs: list[Path] = []
    for name, recipe in runs.items():
        bundle = work / f"bundle_{name}"
        cli("adapt", *common, *recipe, "--out", str(bundle), env=env)
        outputs += [bundle / "adapter.safetensors", bundle / "adapter.json"]
        for tag, extra in (("plain", []), ("masked", ["--mask-bad-channels", "0.5"])):
            out = work / f"pred_{name}_{tag}"
            cli("predict", "--adapter", str(bundle), str(night), "--out", str(out), "--device", "cpu",
                "--precision", "fp32", *extra, "-q", env=env)
            outputs += sorted(p for p in out.rglob("*") if p.is_file() and p.suffix in {".csv", ".tsv", ".json"})
    total = hashlib.sha256()
    for path in outputs:
        h = file_hash(path)
        total.update(h.encode())
        print(f"{h[:16]}  {path.relative_to(work)}")
    print(f"{total.hexdigest()}  all")


if __name__ == "__main__":
    main()
