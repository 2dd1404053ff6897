"""``demo``: the README's main job end to end, on simulated ear-EEG sleep data.

A composition of both rooms (onboarding's ``evaluate`` and prediction's ``predict``), so it
lives above them, under the CLI (``passport-kit demo``, ``make demo``).

1. Simulate a small sleep dataset for the built-in ``eesm17-ear`` montage (physics-based
   simulator: dipoles in a spherical head, stage-dependent dynamics).
2. Adapt the shipped Device Passport checkpoint and the ``acpe`` baseline the same way, with the
   default recipe (``auto``: the ladder, :attr:`~passport_kit.onboard.recipes.AutoRecipe.help`:
   for sleep a pretrained stager first, a richer model only on a clear cross-validated gain), on
   the same subjects, with one subject held out.
3. Score both on the held-out subject next to the band-power reference (the read-out of band
   power alone, fitted on the same subjects), and write the evaluation reports.
4. Predict the held-out recording with the Device Passport adapter (CSV, events, hypnogram), and
   compare it with the simulator's stages of that night (the scorer's line under the hypnogram).

The demo owns its folder (``--out``, default ``passport-demo``): a second run replaces it whole.
The earlier one is moved aside while the new one is written, deleted once it is complete, and
put back if the run fails or is interrupted; its simulated data is reused when the simulation
settings are the same. A folder the demo did not write is never touched (an error says so).

Sized to finish in a few minutes on 2 CPU cores. When the shipped checkpoints are absent
(a checkout before they were trained), the demo says so and uses *untrained* (randomly
initialised) stand-ins with the same architecture, labelled as such in every file: the
pipeline runs, but those numbers say nothing about the method.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from passport_kit.checkpoint import DEFAULT_CHECKPOINT
from passport_kit.errors import CheckpointError, ConfigError
from passport_kit.onboard.recipe import ProgressFn

MONTAGE = "eesm17-ear"
#: The shipped checkpoints the demo compares: Device Passport (MLP experts) and ACPE.
CHECKPOINTS = {"Device Passport (mlp-experts)": DEFAULT_CHECKPOINT, "ACPE baseline": "passport-small-acpe"}


def _base_or_stand_in(name: str, kind: str, echo: Callable[[str], None]) -> str:
    """Return a checkpoint to use: the shipped ``name``, or a labelled untrained stand-in."""
    from passport_kit.checkpoint import find_checkpoint, save_base_checkpoint, user_checkpoint_dir
    from passport_kit.model import build_backbone, model_config

    try:
        find_checkpoint(name)
        return name
    except CheckpointError:
        pass
    stand_in = f"untrained-{name}"
    folder = user_checkpoint_dir() / stand_in
    echo(f"WARNING: shipped checkpoint '{name}' not found; using '{stand_in}', a RANDOMLY INITIALISED "
         f"cbramod-tiny ({kind}). Its scores say nothing about the method.")
    try:
        find_checkpoint(stand_in)
    except CheckpointError:
        import torch

        torch.manual_seed(0)
        save_base_checkpoint(build_backbone(model_config("cbramod-tiny", kind)), folder, name=stand_in,
                             card="UNTRAINED stand-in created by `passport-kit demo`: random weights, no pretraining.",
                             training_info={"pretrained": False})
    return stand_in


#: The file that marks a folder as the demo's own, with the simulation settings of its data.
MARKER = ".passport-demo.json"
#: What an earlier demo (before the marker) left in its folder.
_EARLIER_DEMO = {"data", "evaluation", "predictions"}


def _is_demo_folder(folder: Path) -> bool:
    """Return whether ``folder`` is one the demo may replace: its marker, an earlier demo's folders only, or empty."""
    names = {p.name for p in folder.iterdir()}
    return MARKER in names or names <= _EARLIER_DEMO


@contextmanager
def _fresh_folder(out: Path, settings: dict[str, Any]) -> Iterator[Path | None]:
    """Yield the simulated data folder of an earlier run with the same ``settings`` (None: none), with ``out`` emptied.

    The earlier folder waits aside while the body fills ``out``: deleted when the body ends, put
    back (and the partial new one removed) when it raises, Ctrl-C included.
    """
    old = None
    if out.exists():
        if not out.is_dir() or not _is_demo_folder(out):
            raise ConfigError(f"--out '{out}' holds files the demo did not write; the demo replaces its folder whole, "
                              "so give a new or empty folder (or a demo's earlier one)")
        old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(out, old)
    try:
        out.mkdir(parents=True)
        reused = None
        if old is not None and (old / "data" / "dataset.yaml").is_file():
            try:
                earlier = json.loads((old / MARKER).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                earlier = None
            if earlier == settings:
                os.rename(old / "data", out / "data")
                reused = out / "data"
        (out / MARKER).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        yield reused
    except BaseException:
        if old is not None:
            if (out / "data").is_dir() and not (old / "data").exists():
                os.rename(out / "data", old / "data")
            shutil.rmtree(out, ignore_errors=True)
            os.rename(old, out)
        else:
            shutil.rmtree(out, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def run_demo(
    out: Path = Path("passport-demo"),
    *,
    n_subjects: int = 4,
    hours: float = 2.0,
    batch_size: int = 32,
    threads: int | None = None,
    echo: Callable[[str], None] = print,
    step_progress: ProgressFn | None = None,
) -> dict[str, Path]:
    """Return the demo's output files after running it (see the module docstring).

    ``echo`` prints the demo's lines; ``step_progress(step, total, info)`` is called inside each
    adaptation (as ``evaluate``'s), for a progress bar.
    """
    from passport_kit.version import __version__

    out = Path(out)
    settings = {"montage": MONTAGE, "subjects": n_subjects, "hours": hours, "seed": 0, "version": __version__}
    with _fresh_folder(out, settings) as reused:
        return _run(out, reused is not None, n_subjects=n_subjects, hours=hours, batch_size=batch_size,
                    threads=threads, echo=echo, step_progress=step_progress)


def _run(out: Path, reused: bool, *, n_subjects: int, hours: float, batch_size: int, threads: int | None,
         echo: Callable[[str], None], step_progress: ProgressFn | None) -> dict[str, Path]:
    """Return the demo's output files after running its four steps into the fresh folder ``out``."""
    from passport_kit.inference.predict import ScorerFiles, predict
    from passport_kit.onboard.evaluate import BANDPOWER, adapter_folder, evaluate
    from passport_kit.signals import simulate_dataset

    start = time.perf_counter()
    data = out / "data"
    if not reused:
        echo(f"[1/4] simulating {n_subjects} subjects x {hours:g} h of ear-EEG sleep ({MONTAGE}) -> {data}")
        simulate_dataset(MONTAGE, data, n_subjects=n_subjects, hours=hours, seed=0)
    else:
        echo(f"[1/4] reusing the earlier run's simulated data in {data}")
    held_out = f"s{n_subjects:02d}"
    checkpoints = {label: _base_or_stand_in(name, "mlp-experts" if "mlp" in name else "acpe", echo)
                   for label, name in CHECKPOINTS.items()}
    echo(f"[2/4] adapting {', '.join(checkpoints.values())} on s01-s{n_subjects - 1:02d} with the default "
         f"recipe (backbone and experts frozen; read-out chosen by cross-validation, adapter trained where that "
         f"helps), holding out {held_out}")
    report = evaluate(
        montage=MONTAGE, data=data, out=out / "evaluation", checkpoints=tuple(checkpoints.values()),
        protocol="split", test_subjects=(held_out,), batch_size=batch_size, threads=threads, save_adapters=True,
        progress=lambda done, total, what: echo(f"      run {min(done + 1, total)}/{total}: {what}") if done < total else None,
        step_progress=step_progress,
    )
    echo(f"[3/4] {report.metric} on held-out subject {held_out}:")
    labels = {name: label for label, name in checkpoints.items()} | {BANDPOWER: "band power alone (reference)"}
    for name in report.summary:
        score = report.summary[name][report.metric]["mean"]
        bacc = report.summary[name]["balanced_accuracy"]["mean"]
        echo(f"      {labels.get(name, name):32s} {name:28s} kappa {score:6.3f}   balanced accuracy {bacc:5.3f}")
    passport = checkpoints["Device Passport (mlp-experts)"]
    bundle = adapter_folder(out / "evaluation", passport, "split-fixed", None, 0)
    echo(f"[4/4] predicting {held_out}.edf with the Device Passport adapter (the simulator's stages as the scorer)")
    result = predict(bundle, [data / f"{held_out}.edf"], out / "predictions",
                     scorer=ScorerFiles(labels=[data / f"{held_out}_hypnogram.csv"]))[0]
    stats = result.summary.get("sleep_statistics", {})
    if stats:
        echo(f"      TST {stats['TST']:.1f} min, SE {stats['SE']:.1f} %, WASO {stats['WASO'] or 0:.1f} min")
    scored = result.summary.get("scorer_agreement") or {}
    if scored.get("kappa") is not None:
        echo(f"      agreement with the simulator's stages: kappa {scored['kappa']:.3f} over {scored['windows']} epochs")
    elif result.summary.get("statistics_withheld"):
        echo(f"      sleep statistics withheld: {result.summary['statistics_withheld']}")
    files = {"data": data, "adapter": bundle, **{f"evaluation {k}": v for k, v in report.files.items()},
             **{f"prediction {k}": v for k, v in result.files.items()}}
    echo(f"done in {time.perf_counter() - start:.0f} s. Files:")
    for name, path in files.items():
        echo(f"  {name:34s} {path}")
    return files
