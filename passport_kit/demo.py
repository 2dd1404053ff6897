"""``demo``: the README's main job end to end, on simulated ear-EEG sleep data.

A composition of both rooms (onboarding's ``evaluate`` and prediction's ``predict``), so it
lives above them, under the CLI (``passport-kit demo``, ``make demo``).

1. Simulate a small sleep dataset for the built-in ``eesm17-ear`` montage (physics-based
   simulator: dipoles in a spherical head, stage-dependent dynamics).
2. Adapt the shipped Device Passport checkpoint with the default recipe (``auto``: the ladder,
   :attr:`~passport_kit.onboard.recipes.AutoRecipe.help`: for sleep a pretrained stager first, a
   richer model only on a clear cross-validated gain), with one subject held out.
3. Score on the held-out subject what the toolkit adds, row by row: the zero-shot sleep stager
   (YASA, no labels), the adapted model (each row names what its bundle shipped, from its
   ``metrics.selection``), and band power alone (the textbook, fitted on the same subjects); then
   the adapted model's cross-validated score on the training subjects (what ``adapt`` expects).
4. Predict the held-out recording with the adapter (CSV, events, hypnogram), and compare it with
   the simulator's stages of that night (the scorer's line under the hypnogram).

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
from passport_kit.wording import counted

MONTAGE = "eesm17-ear"
#: The shipped checkpoint the demo adapts: Device Passport (MLP experts). One: where the ladder takes no backbone
#: rung, another checkpoint ships the same read-out (issue 45: the ACPE row repeated its kappa).
CHECKPOINT = DEFAULT_CHECKPOINT
#: The sleep stager of the zero-shot row.
STAGER = "yasa"


def _score(value: float | None) -> str:
    """Return a score as the demo's rows print it: three decimals, 'n/a' where there is none."""
    return "  n/a" if value is None else f"{value:6.3f}"


def _balanced_accuracy(confusion: dict[str, dict[str, int]]) -> float | None:
    """Return the mean recall over the scorer's classes present in ``confusion`` ({scorer class: {predicted: n}})."""
    recalls = [row.get(c, 0) / sum(row.values()) for c, row in confusion.items() if sum(row.values())]
    return float(sum(recalls) / len(recalls)) if recalls else None


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
    from passport_kit.checkpoint import read_adapter_meta
    from passport_kit.checkpoint.adapter_metrics import LadderSelection
    from passport_kit.inference.options import ScorerFiles
    from passport_kit.inference.predict import predict
    from passport_kit.inference.zero_shot import predict_zero_shot
    from passport_kit.onboard.evaluate import BANDPOWER, adapter_folder, evaluate
    from passport_kit.onboard.recipes import shipped_read_out
    from passport_kit.signals import simulate_dataset

    start = time.perf_counter()
    data = out / "data"
    if not reused:
        echo(f"[1/4] simulating {n_subjects} subjects x {hours:g} h of ear-EEG sleep ({MONTAGE}) -> {data}")
        simulate_dataset(MONTAGE, data, n_subjects=n_subjects, hours=hours, seed=0)
    else:
        echo(f"[1/4] reusing the earlier run's simulated data in {data}")
    held_out = f"s{n_subjects:02d}"
    checkpoint = _base_or_stand_in(CHECKPOINT, "mlp-experts", echo)
    echo(f"[2/4] adapting {checkpoint} on s01-s{n_subjects - 1:02d} with the default recipe (backbone and experts "
         f"frozen; each rung of the read-out ladder taken only where cross-validation shows a gain), holding out "
         f"{held_out}")
    report = evaluate(
        montage=MONTAGE, data=data, out=out / "evaluation", checkpoints=(checkpoint,),
        protocol="split", test_subjects=(held_out,), batch_size=batch_size, threads=threads, save_adapters=True,
        progress=lambda done, total, what: echo(f"      run {min(done + 1, total)}/{total}: {what}") if done < total else None,
        step_progress=step_progress,
    )
    bundle = adapter_folder(out / "evaluation", checkpoint, "split-fixed", None, 0)
    selection = read_adapter_meta(bundle).metrics.selection
    recording, stages = data / f"{held_out}.edf", data / f"{held_out}_hypnogram.csv"
    zero = predict_zero_shot(MONTAGE, [recording], out / "zero-shot", stager=STAGER,
                             scorer=ScorerFiles(labels=[stages]))[0].summary
    echo(f"[3/4] on held-out subject {held_out} (the simulator's stages as the scorer):")
    rows = [(f"zero-shot stager ({STAGER} on {zero['zero_shot']['eeg']}, no labels)",
             zero["scorer_agreement"]["kappa"], _balanced_accuracy(zero["scorer_agreement"]["confusion"])),
            (f"adapted ({checkpoint}): {shipped_read_out(selection)}", report.summary[checkpoint]["kappa"]["mean"],
             report.summary[checkpoint]["balanced_accuracy"]["mean"]),
            ("band power alone (the textbook, same subjects)", report.summary[BANDPOWER]["kappa"]["mean"],
             report.summary[BANDPOWER]["balanced_accuracy"]["mean"])]
    width = max(len(name) for name, _, _ in rows)
    for name, kappa, bacc in rows:
        echo(f"      {name:{width}s}  kappa {_score(kappa)}   balanced accuracy {_score(bacc)}")
    expected = selection.expected if isinstance(selection, LadderSelection) else None
    if expected is not None and expected.score is not None:
        echo(f"      validation: the adapted model's {expected.metric} cross-validated on the training subjects "
             f"{expected.score:.3f} ({expected.folds} folds), band power's "
             f"{_score(selection.bandpower_score).strip()}")
    echo(f"[4/4] predicting {held_out}.edf with the adapter (the simulator's stages as the scorer)")
    result = predict(bundle, [recording], out / "predictions", scorer=ScorerFiles(labels=[stages]))[0]
    stats = result.summary.get("sleep_statistics", {})
    if stats:
        echo(f"      TST {stats['TST']:.1f} min, SE {stats['SE']:.1f} %, WASO {stats['WASO'] or 0:.1f} min")
    scored = result.summary.get("scorer_agreement") or {}
    if scored.get("kappa") is not None:
        echo(f"      agreement with the simulator's stages: kappa {scored['kappa']:.3f} over "
             f"{counted(scored['windows'], 'epoch', 'epochs')}")
    elif result.summary.get("statistics_withheld"):
        echo(f"      sleep statistics withheld: {result.summary['statistics_withheld']}")
    files = {"data": data, "adapter": bundle,
             "zero-shot summary": out / "zero-shot" / held_out / f"{held_out}_summary.json",
             **{f"evaluation {k}": v for k, v in report.files.items()},
             **{f"prediction {k}": v for k, v in result.files.items()}}
    echo(f"done in {time.perf_counter() - start:.0f} s. Files:")
    for name, path in files.items():
        echo(f"  {name:34s} {path}")
    return files
