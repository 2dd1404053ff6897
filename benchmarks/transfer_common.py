"""Shared machinery of the layout-transfer benchmarks: seeds, runs, summaries and figures.

The three scripts (``transfer_subsets.py``, ``transfer_ear.py``, ``transfer_real.py``) differ in
their data and their question; what they share lives here, once:

- the command line every script has (``--quick``, ``--out``, ``--seeds``, ``--threads``) and the
  ``run.json`` record of a run (command, machine line, wall time);
- simulating a dataset once per output folder, pretraining a grid of small checkpoints with
  :func:`passport_kit.pretrain.run.pretrain` and fine-tuning/scoring them with
  :func:`passport_kit.onboard.evaluate.evaluate` (both resumable: a finished piece is skipped
  when the command is run again with the same ``--out``);
- summaries of evaluate's per-subject rows (mean ± SD over seeds, per-subject tables,
  differences to a reference method) and the two figure kinds (metric vs training subjects with
  seed bands, one panel per pretraining layout; per-subject difference bars).

Every row handled here is one of evaluate's ``results.csv`` rows (one test subject of one
fine-tuning run) with three more keys naming the pretrained model: ``layout`` (its pretraining
montage), ``kind`` (its channel embedding) and ``pretrain_seed``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/machine.py, run as a script or imported

from machine import machine_line

from passport_kit.atomic_io import write_json, write_table
from passport_kit.reports import save_figure

#: Colours of the embedding kinds (and of the non-neural baseline), the same in every figure.
KIND_COLOURS = {
    "ape": "tab:gray", "channel-id": "tab:brown", "xyz": "tab:olive",
    "acpe": "tab:blue", "mlp-experts": "tab:orange", "xattn-experts": "tab:green",
    "bandpower-logreg": "tab:purple",
}


# ----------------------------------------------------------------------------- command line


def parse_seeds(text: str) -> tuple[int, int]:
    """Return (pretraining seeds, fine-tuning seeds) from ``'P'`` (both P) or ``'PxF'``.

    >>> parse_seeds("2x3"), parse_seeds("3")
    ((2, 3), (3, 3))
    """
    parts = text.lower().replace("×", "x").split("x")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: give a number (e.g. 3) or PxF (e.g. 2x3)") from None
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: give a number (e.g. 3) or PxF (e.g. 2x3), each >= 1")
    return values[0], values[1]


def common_parser(description: str, *, default_out: str) -> argparse.ArgumentParser:
    """Return an argument parser with the options every transfer benchmark has."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="minutes-scale run (tiny budgets; weak evidence)")
    parser.add_argument("--out", type=Path, default=Path(default_out), help="output folder (resumable)")
    parser.add_argument("--seeds", type=parse_seeds, default=None,
                        help="seeds: N, or PxF (pretraining x fine-tuning); default depends on --quick")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    return parser


def simulated_parser(description: str, *, default_out: str, kinds: Sequence[str]) -> argparse.ArgumentParser:
    """Return the parser of the simulated experiments: the common options plus budgets and kinds."""
    parser = common_parser(description, default_out=default_out)
    parser.add_argument("--kinds", default=",".join(kinds), help="comma-separated embedding kinds")
    parser.add_argument("--steps", type=int, default=None, help="pretraining steps per run (overrides the scale)")
    parser.add_argument("--ft-steps", type=int, default=None, help="fine-tuning step budget (overrides the scale)")
    parser.add_argument("--hours", type=float, default=None, help="length of every simulated night (overrides the scale)")
    parser.add_argument("--arch", default="cbramod-tiny")
    parser.add_argument("--balance", default="none", choices=("none", "weights", "sampler"))
    parser.add_argument("--device", default="cpu")
    return parser


@dataclass(frozen=True)
class SimulatedPlan:
    """The sizes of one simulated experiment run: its scale with the command line's overrides."""

    scale: dict[str, Any]
    quick: bool
    pretrain_seeds: int
    finetune_seeds: int
    kinds: tuple[str, ...]
    budget: PretrainBudget
    ft_steps: int

    def settings(self, **extra: Any) -> dict[str, Any]:
        """Return the settings recorded in ``run.json``."""
        return {"scale": "quick" if self.quick else "default",
                **{k: v for k, v in self.scale.items() if k != "seeds"},
                "pretrain_seeds": self.pretrain_seeds, "finetune_seeds": self.finetune_seeds, "kinds": self.kinds,
                "pretrain": self.budget.__dict__, "ft_steps": self.ft_steps, **extra}

    @property
    def tag(self) -> str:
        """Return the figure subtitle naming scale, seeds and architecture."""
        return (f"{'quick' if self.quick else 'default'} scale, {self.pretrain_seeds}x{self.finetune_seeds} seeds, "
                f"{self.budget.arch}")


def simulated_plan(args: argparse.Namespace, scales: dict[str, dict[str, Any]]) -> SimulatedPlan:
    """Return the plan of a simulated experiment from its parsed options and its two scales."""
    scale = dict(scales["quick" if args.quick else "default"])
    if args.hours is not None:
        scale.update(pre_hours=args.hours, ft_hours=args.hours)
    n_pre, n_ft = args.seeds or scale["seeds"]
    return SimulatedPlan(
        scale=scale, quick=args.quick, pretrain_seeds=n_pre, finetune_seeds=n_ft,
        kinds=tuple(k.strip() for k in args.kinds.split(",") if k.strip()),
        # A scale may set the pretraining batch and peak lr; without them, PretrainBudget's defaults.
        budget=PretrainBudget(arch=args.arch, steps=args.steps or scale["pre_steps"],
                              **{field: scale[key] for key, field in (("pre_batch", "batch_size"), ("pre_lr", "lr"))
                                 if key in scale}),
        ft_steps=args.ft_steps or scale["ft_steps"],
    )


class RunRecord:
    """Times a benchmark run and writes ``run.json`` (command, machine line, wall time, settings)."""

    def __init__(self, out: Path, threads: int, settings: dict[str, Any]) -> None:
        self.out = Path(out)
        self.threads = threads
        self.settings = settings
        self.start = time.perf_counter()
        self.cpu_start = time.process_time()
        self.stages: dict[str, float] = {}
        self._stage_start = self.start

    def stage(self, name: str) -> None:
        """Record the wall time since the previous stage under ``name`` and print it."""
        now = time.perf_counter()
        self.stages[name] = round(now - self._stage_start, 1)
        self._stage_start = now
        print(f"[{now - self.start:7.1f} s] {name} done ({self.stages[name]:.1f} s)", flush=True)

    def finish(self, extra: dict[str, Any] | None = None) -> Path:
        """Write ``run.json`` into the output folder; return its path."""
        payload = {
            "command": " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
            "machine": machine_line(self.threads),
            "wall_s": round(time.perf_counter() - self.start, 1),
            "cpu_s_main_process": round(time.process_time() - self.cpu_start, 1),
            "stages_s": self.stages,
            "settings": self.settings,
            "finished_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        } | (extra or {})
        return write_json(self.out / "run.json", payload)


# ----------------------------------------------------------------------------- data and models


def ensure_simulated(montage: str, folder: Path, *, n_subjects: int, hours: float, seed: int,
                     bad_channels: str | None = None) -> Path:
    """Return a simulated dataset folder, simulating it only when no complete one is there."""
    from passport_kit.signals import simulate_dataset

    if (folder / "dataset.yaml").is_file():  # written last by the simulator: the folder is complete
        return folder
    return simulate_dataset(montage, folder, n_subjects=n_subjects, hours=hours, seed=seed,
                            bad_channels=bad_channels, overwrite=True)


@dataclass(frozen=True)
class PretrainRun:
    """One small pretrained model of a benchmark grid."""

    layout: str
    kind: str
    seed: int

    @property
    def name(self) -> str:
        """Return the checkpoint name (also evaluate's method name)."""
        return f"{self.layout}-{self.kind}-p{self.seed}"


@dataclass(frozen=True)
class PretrainBudget:
    """Size of each pretraining run (the shipped checkpoints' recipe, scaled)."""

    arch: str = "cbramod-tiny"
    steps: int = 600
    batch_size: int = 4
    lr: float = 2e-3
    val_max_windows: int = 64


def pretrain_grid(runs: Sequence[PretrainRun], windows_by_layout: dict[str, tuple[Path, Any]], out: Path, *,
                  budget: PretrainBudget, threads: int) -> dict[str, Path]:
    """Return {run name: checkpoint folder}, pretraining each run that has no checkpoint yet.

    ``windows_by_layout`` maps a layout name to (dataset folder, WindowSet): the windows (labels
    ignored) are read once and shared by every kind and seed of that layout; the folder is what
    the model card names as the data.
    """
    from passport_kit.pretrain.run import PretrainConfig, pretrain

    folders: dict[str, Path] = {}
    for i, run in enumerate(runs, 1):
        folder = Path(out) / "pretrain" / run.name
        if (folder / "config.json").is_file():
            _check_budget(folder, budget)
        else:
            if folder.exists():
                # An interrupted run: start it again (a few minutes at most at these budgets).
                import shutil

                shutil.rmtree(folder)
            t0 = time.perf_counter()
            folder_of_data, windows = windows_by_layout[run.layout]
            config = PretrainConfig(
                sources=[{"path": folder_of_data, "montage": run.layout}], embedding=run.kind,
                arch=budget.arch, out=folder, name=run.name, steps=budget.steps, batch_size=budget.batch_size,
                lr=budget.lr, seed=run.seed, checkpoint_every=budget.steps, val_fraction=0.15,
                val_max_windows=budget.val_max_windows, amplitude_limit_uv=None, device="cpu",
                threads=threads, progress=False,
            )
            pretrain(config, datasets=[(str(folder_of_data), windows)])
            print(f"  pretrained {run.name} ({i}/{len(runs)}) in {time.perf_counter() - t0:.0f} s", flush=True)
        folders[run.name] = folder
    return folders


def _check_budget(folder: Path, budget: PretrainBudget) -> None:
    """Raise ValueError when a finished checkpoint in ``folder`` was pretrained with another budget.

    Reusing it silently would mix budgets in one table; the caller picks a new ``--out`` instead.
    """
    training = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))["training"]
    done = (training.get("steps"), training.get("batch_size_per_process"), training["optimizer"].get("lr"))
    wanted = (budget.steps, budget.batch_size, budget.lr)
    if done != wanted:
        raise ValueError(f"{folder} was pretrained with (steps, batch, lr) = {done}, not {wanted}; "
                         "use a new --out folder for another pretraining budget")


def pretraining_table(checkpoints: dict[str, Path], runs: dict[str, PretrainRun]) -> list[dict[str, Any]]:
    """Return one row per pretrained model: held-out masked MSE, zero-predictor MSE and their ratio.

    Read from each checkpoint's ``config.json`` (what its model card shows): a ratio near 1 means
    the model stayed at the zero predictor, i.e. its embeddings are close to their initial weights.
    """
    table = []
    for name, folder in checkpoints.items():
        training = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))["training"]
        val = training.get("validation") or {}
        run = runs[name]
        table.append({"layout": run.layout, "kind": run.kind, "pretrain_seed": run.seed,
                      "steps": training.get("steps"), "val_mse": val.get("val_loss"),
                      "zeros_mse": val.get("val_zero_loss"), "ratio_to_zeros": val.get("ratio_to_zero"),
                      "wall_s": training.get("wall_time_s")})
    return table


def evaluate_grid(checkpoints: dict[str, Path | str], runs: dict[str, PretrainRun], out: Path,
                  **evaluate_options: Any) -> list[dict[str, Any]]:
    """Return evaluate's rows for every checkpoint, tagged with layout, kind and pretraining seed.

    ``checkpoints`` and ``runs`` share their keys (checkpoint names); a checkpoint is a folder or
    a shipped name. One :func:`~passport_kit.onboard.evaluate.evaluate` call per checkpoint
    writes into ``out/finetune/<name>/``; a folder whose ``summary.json`` was written with the
    same recipe (seeds, steps, sweep, ...) is read back instead of rerun; with another recipe
    (e.g. ``--seeds 1x2`` after ``1x1``) it is run again.
    """
    from passport_kit.onboard.evaluate import evaluate

    # The layout-transfer experiments compare channel embeddings under the paper's recipe: no
    # distrusted or uncorrelated-masked channels unless a caller asks (robustness_real does, per variant).
    evaluate_options.setdefault("distrust_bad_channels", None)
    evaluate_options.setdefault("mask_uncorrelated_channels", None)
    by_name = runs
    rows: list[dict[str, Any]] = []
    for i, (name, folder) in enumerate(checkpoints.items(), 1):
        target = Path(out) / "finetune" / name
        summary = target / "summary.json"
        finished = json.loads(summary.read_text()) if summary.is_file() else None
        if finished is not None and _same_recipe(finished["config"], evaluate_options):
            run_rows = finished["rows"]
        else:
            t0 = time.perf_counter()
            run_rows = evaluate(checkpoints=(str(folder),), out=target, **evaluate_options).rows
            print(f"  fine-tuned {name} ({i}/{len(checkpoints)}) in {time.perf_counter() - t0:.0f} s", flush=True)
        run = by_name[name]
        # The zero-shot stager's rows (evaluate scores it since issue 56) are no run of this checkpoint's kind.
        rows += [r | {"layout": run.layout, "kind": run.kind, "pretrain_seed": run.seed} for r in run_rows
                 if not str(r["method"]).startswith("zero-shot")]
    return rows


#: evaluate options that change which runs are made or how; a finished evaluation is reused only if they match.
RECIPE_KEYS = ("recipe", "protocol", "subjects_sweep", "seeds", "max_steps", "batch_size", "train", "balance", "metric")


def _same_recipe(finished_config: dict[str, Any], options: dict[str, Any]) -> bool:
    """Return whether a finished evaluation's config has the recipe that ``options`` asks for."""
    def plain(value: Any) -> Any:  # tuples → lists, as in the JSON the config was read from
        return json.loads(json.dumps(value, default=str))

    return all(plain(options[key]) == finished_config.get(key) for key in RECIPE_KEYS if key in options)


# ----------------------------------------------------------------------------- summaries


def _finite(values: Iterable[Any]) -> np.ndarray:
    arr = np.array([v for v in values if v is not None], dtype=float)
    return arr[np.isfinite(arr)]


def summarise(rows: Sequence[dict[str, Any]], *, by: Sequence[str], unit: Sequence[str],
              metric: str) -> list[dict[str, Any]]:
    """Return mean, SD and count of ``metric`` per ``by`` group, over independent units.

    Rows of one unit (e.g. one pretraining seed × fine-tuning seed: its test subjects and folds)
    are averaged first, so the SD is the spread between seeds, not between test windows.
    """
    per_unit: dict[tuple, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get(metric) is None:
            continue
        per_unit[tuple(r[k] for k in by)][tuple(r[k] for k in unit)].append(float(r[metric]))
    out = []
    for key in sorted(per_unit, key=lambda k: tuple(str(v) for v in k)):
        values = _finite(np.mean(v) for v in per_unit[key].values())
        out.append({**dict(zip(by, key)), metric: float(values.mean()) if values.size else None,
                    "sd": float(values.std()) if values.size else None, "n_units": int(values.size)})
    return out


def per_subject_table(rows: Sequence[dict[str, Any]], *, methods: Sequence[str], metric: str,
                      method_key: str = "kind") -> list[dict[str, Any]]:
    """Return the paper's per-subject table: one row per test subject, mean and SD per method.

    Mean and SD are over every run (pretraining × fine-tuning seed) scored on that subject; the
    last row holds the mean over subjects (its SD: spread of the per-subject means).
    """
    subjects = sorted({r["test_subject"] for r in rows})
    table = []
    for subject in subjects:
        entry: dict[str, Any] = {"subject": subject}
        for method in methods:
            vals = _finite(r[metric] for r in rows if r["test_subject"] == subject and r[method_key] == method)
            entry[method] = float(vals.mean()) if vals.size else None
            entry[f"{method}_sd"] = float(vals.std()) if vals.size else None
        table.append(entry)
    mean_row: dict[str, Any] = {"subject": "mean"}
    for method in methods:
        vals = _finite(e[method] for e in table)
        mean_row[method] = float(vals.mean()) if vals.size else None
        mean_row[f"{method}_sd"] = float(vals.std()) if vals.size else None
    return table + [mean_row]


def differences_to(rows: Sequence[dict[str, Any]], *, reference: str, methods: Sequence[str], metric: str,
                   method_key: str = "kind") -> list[dict[str, Any]]:
    """Return per subject and method the difference to ``reference`` (mean, SD over seed pairs).

    Runs are paired by (pretraining seed, fine-tuning seed, fold): the same seeds and the same
    training subjects, so each difference compares the two methods under equal conditions.
    """
    key = ("test_subject", "pretrain_seed", "seed", "fold")
    ref = {tuple(r[k] for k in key): r[metric] for r in rows if r[method_key] == reference}
    out = []
    for subject in sorted({r["test_subject"] for r in rows}):
        for method in methods:
            diffs = _finite(
                r[metric] - ref[tuple(r[k] for k in key)] for r in rows
                if r[method_key] == method and r["test_subject"] == subject and r[metric] is not None
                and ref.get(tuple(r[k] for k in key)) is not None
            )
            out.append({"subject": subject, "method": method, f"{metric}_minus_{reference}":
                        float(diffs.mean()) if diffs.size else None,
                        "sd": float(diffs.std()) if diffs.size else None, "n_pairs": int(diffs.size)})
    return out


def write_outputs(out: Path, stem: str, rows: Sequence[dict[str, Any]]) -> list[Path]:
    """Write ``rows`` as ``<stem>.csv`` and ``<stem>.json`` in ``out``; return both paths."""
    return [write_table(Path(out) / f"{stem}.csv", rows), write_json(Path(out) / f"{stem}.json", list(rows))]


def markdown_table(rows: Sequence[dict[str, Any]], *, digits: int = 3) -> str:
    """Return ``rows`` as a Markdown table (floats rounded), for printing and for RESULTS.md."""
    if not rows:
        return "(no rows)"
    columns = list(dict.fromkeys(k for r in rows for k in r))

    def cell(v: Any) -> str:
        if v is None:
            return "–"
        if isinstance(v, float):
            return f"{v:.{digits}f}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- figures


def _figure(n_panels: int, *, width: float = 4.2, height: float = 3.4) -> tuple[Any, list[Any]]:
    from matplotlib.figure import Figure  # Agg canvas; no display needed

    fig = Figure(figsize=(width * n_panels, height), layout="constrained")
    axes = fig.subplots(1, n_panels, sharey=True, squeeze=False)[0]
    return fig, list(axes)


def plot_sweep_panels(curves: Sequence[dict[str, Any]], path: Path, *, metric: str, panels: Sequence[str],
                      lines: Sequence[str], panel_key: str = "layout", line_key: str = "kind",
                      panel_title: str = "pretrained on {}", title: str = "") -> Path:
    """Draw metric vs training subjects, one panel per ``panel_key`` value, one line per ``line_key`` value; write a PNG.

    ``curves`` are :func:`summarise` rows grouped by ``layout``, ``kind``, ``n_train_subjects``;
    each line is the mean with a band of ± one SD over seeds.
    """
    fig, axes = _figure(len(panels))
    for ax, panel in zip(axes, panels):
        for line in lines:
            pts = sorted((r["n_train_subjects"], r[metric], r["sd"] or 0.0) for r in curves
                         if r[panel_key] == panel and r[line_key] == line and r[metric] is not None)
            if not pts:
                continue
            x, mean, sd = (np.array(v, dtype=float) for v in zip(*pts))
            colour = KIND_COLOURS.get(line)
            drawn = ax.plot(x, mean, marker="o", ms=3, color=colour, label=line)[0]
            ax.fill_between(x, mean - sd, mean + sd, color=drawn.get_color(), alpha=0.15, linewidth=0)
        ax.set_title(panel_title.format(panel), fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("fine-tuning subjects")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(metric)
    axes[-1].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def plot_difference_bars(diffs: Sequence[dict[str, Any]], path: Path, *, metric: str, reference: str,
                         methods: Sequence[str], outline: Sequence[str] = (), outline_label: str = "poor-contact channels",
                         title: str = "") -> Path:
    """Draw per-subject bars of (method − reference) with SD error bars; write a PNG.

    Subjects in ``outline`` (e.g. the poor-contact ones, named by ``outline_label``) get a black box,
    as in the paper's Fig. 5(a).
    """
    column = f"{metric}_minus_{reference}"
    subjects = sorted({d["subject"] for d in diffs})
    fig, (ax,) = _figure(1, width=max(5.0, 0.7 * len(subjects) + 2), height=3.4)
    width = 0.8 / max(1, len(methods))
    for j, method in enumerate(methods):
        vals = {d["subject"]: d for d in diffs if d["method"] == method}
        x = np.arange(len(subjects)) + (j - (len(methods) - 1) / 2) * width
        mean = [vals[s][column] if s in vals and vals[s][column] is not None else np.nan for s in subjects]
        sd = [vals[s]["sd"] if s in vals and vals[s]["sd"] is not None else 0.0 for s in subjects]
        ax.bar(x, mean, width, yerr=sd, capsize=2, color=KIND_COLOURS.get(method), label=f"{method} − {reference}")
    for i, subject in enumerate(subjects):
        if subject in outline:
            ax.axvspan(i - 0.45, i + 0.45, fill=False, edgecolor="black", linewidth=1.2)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(subjects)), subjects, fontsize=8)
    ax.set_xlabel("held-out subject" + (f" (boxed: {outline_label})" if outline else ""))
    ax.set_ylabel(f"Δ {metric} vs {reference}")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    return save_figure(fig, path)


def plot_subject_scores(table: Sequence[dict[str, Any]], path: Path, *, metric: str, methods: Sequence[str],
                        title: str = "") -> Path:
    """Draw per-subject scores (mean ± SD over seeds) of several methods as grouped bars; write a PNG."""
    subjects = [r["subject"] for r in table]
    fig, (ax,) = _figure(1, width=max(5.0, 0.6 * len(subjects) + 2), height=3.4)
    width = 0.8 / max(1, len(methods))
    for j, method in enumerate(methods):
        x = np.arange(len(subjects)) + (j - (len(methods) - 1) / 2) * width
        mean = [r[method] if r.get(method) is not None else np.nan for r in table]
        sd = [r.get(f"{method}_sd") or 0.0 for r in table]
        ax.bar(x, mean, width, yerr=sd, capsize=2, color=KIND_COLOURS.get(method), label=method)
    ax.set_xticks(np.arange(len(subjects)), subjects, fontsize=7, rotation=45, ha="right")
    ax.set_ylabel(metric)
    ax.legend(fontsize=7, ncol=len(methods), loc="lower left")
    ax.grid(axis="y", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    return save_figure(fig, path)
