"""Dev protocol of issue 24: the default probe against the textbook, on several tasks and repeated splits.

A default is kept only if it holds on every task here, over repeated subject splits, with an
interval, not on one leave-one-subject-out. Tasks (real ones from ``../shared/data``):

- ``eegmat-temporal``: rest vs arithmetic, T3 T4 T5 T6 + A2-A1, 10-s windows (AUROC);
- ``eegmat-ear``: the same with the ear-to-ear derivation A2-A1 alone (AUROC);
- ``eegmat-frontal``: the same with Fp1 Fp2 F7 F8 (AUROC);
  eegmat is low-passed at 45 Hz in its dataset.yaml (``h_freq: 45``): three subjects carry
  different prefilters above 45 Hz in their two recordings (``../shared/data/README.md``);
- ``dreams``: sleep staging of DREAMS excerpts 1 (100 Hz) and 3 (50 Hz), C3-A1, leave one night
  out (Cohen's kappa; one training night: the probe's fallback read-out);
- ``sim-ear``: sleep staging of simulated ear-EEG (``eesm17-ear``, 8 subjects x 1 h, seed 3;
  kappa): the layout transfer the paper is about, without real data.

Splits: ``--splits`` repeated grouped K-fold draws over subjects (seeded; 4 folds for eegmat,
4 for sim-ear; the 2 nights of DREAMS give one leave-one-out draw). Per draw, every window is
predicted once by a model that never saw its subject; the score is pooled over the draw.

Methods, on exactly the same folds:

- ``default (the ladder)``: the read-out ladder as ``adapt`` runs it (issues 33, 43), at the feature level: the
  product's model (pretrained base, contact policy, spectral block) computes the read-out inputs once; per
  outer fold :class:`passport_kit.onboard.ladder.Ladder` climbs on the training subjects (for sleep with
  the YASA prior computed as ``adapt`` computes it), and the model it ships (read-out or zero-shot prior,
  night smoothing, temperature) is scored on the test subjects. LP-FT (a gradient rung) is not run here:
  ``benchmarks/lpft_ablation.py``.
- ``rung: NAME``: each rung's own best candidate (its C, weights and variant chosen by the ladder's inner
  CV), fitted and scored alone, with how often the ladder took that rung over the outer folds.
- ``ladder, min effect 0`` / ``x2``: the same ladder and candidates with the minimum effect 0 or doubled;
  ``ladder, gain > 1 SE`` / ``3 SE``: a step clearing 1 or 3 standard errors instead of 2.
- ``random backbone i``: the ladder on a randomly initialised backbone of the same architecture.
- sleep (issue 43): ``textbook-first ladder (issue 33)``: the same ladder starting from band power (the stager
  one rung like the others: the ablation of stager-first); ``stager zero-shot, positions' channel``: YASA
  alone on the channel the positions pick (no choice among options); ``rung: stager``: the zero-shot option
  the ladder chose on the training nights.
- ``textbook``: log absolute and relative band power (the standard 6 bands up to 45 Hz, clipped
  to the slowest recording's Nyquist frequency) by ``scipy.signal.welch`` (4-s segments) at each
  recording's OWN sampling rate on the raw signal, standardised, logistic regression (C = 1,
  balanced classes): what a user builds without us.

Per task: the mean over draws of each method, and the mean and 95 % t-interval over draws of
(default - method)::

    .venv/bin/python benchmarks/dev_protocol.py --out runs/dev-protocol --splits 10

Skips cleanly (exit 0, one line) when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_data import (  # noqa: E402  (benchmarks/ is not a package)
    CHECKPOINT,
    DEFAULT_DATA,
    DREAMS_MONTAGE,
    EEGMAT_MONTAGE,
    dreams_folder,
    eegmat_folder,
    markdown,
    random_base,
    score,
    t_interval,
)

MONTAGES = {"eegmat-temporal": EEGMAT_MONTAGE, "eegmat-ear": HERE / "montages" / "eegmat-ear.yaml",
            "eegmat-frontal": HERE / "montages" / "eegmat-frontal.yaml", "dreams": DREAMS_MONTAGE,
            "sim-ear": "eesm17-ear"}
FOLDS = {"eegmat-temporal": 4, "eegmat-ear": 4, "eegmat-frontal": 4, "dreams": 2, "sim-ear": 4}


def sim_folder(folder: Path) -> Path:
    """Return a simulated ear-EEG sleep data set (8 subjects x 1 h, seed 3), made once."""
    if not (folder / "dataset.yaml").exists():
        subprocess.run([sys.executable, "-m", "passport_kit.cli.app", "simulate", "--montage", "eesm17-ear",
                        "--subjects", "8", "--hours", "1", "--seed", "3", "--out", str(folder)], check=True,
                       capture_output=True)
    return folder


def protocol_parser(description: str, *, out: Path, splits: int) -> argparse.ArgumentParser:
    """Return the arguments every dev-protocol benchmark takes: data, out, tasks, draws, seed, threads."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding eegmat/ and dreams-spindles/")
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--tasks", default="eegmat-temporal,eegmat-ear,eegmat-frontal,dreams,sim-ear")
    parser.add_argument("--splits", type=int, default=splits, help="repeated grouped draws per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    return parser


def no_real_data(data: Path, tool: str) -> bool:
    """Return True (after saying so in one line) when ``data`` lacks the real recordings the protocol reads."""
    if (data / "eegmat").is_dir() and (data / "dreams-spindles").is_dir():
        return False
    print(f"{tool}: no real recordings under {data} (eegmat/, dreams-spindles/); skipped")
    return True


def paired_table(name: str, metric: str, scores: dict[str, list[float]], reference: str, *,
                 reference_first: bool) -> list[dict[str, Any]]:
    """Return one row per method: its mean over draws and the mean and 95 % t-interval over draws of the paired
    difference to ``reference`` (``reference - method`` when ``reference_first``, else ``method - reference``)."""
    label = f"{reference} minus this" if reference_first else f"this minus {reference}"
    table = []
    for method, values in scores.items():
        diffs = [(r - v) if reference_first else (v - r) for r, v in zip(scores[reference], values)]
        ci = t_interval(diffs)
        row = {"task": name, "method": method, f"mean {metric} over draws": round(float(np.mean(values)), 3),
               "draws": len(values)}
        if method != reference:
            row[label] = round(float(np.mean(diffs)), 3)
            row["95% t-interval (draws)"] = None if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
        table.append(row)
    return table


def run_tasks(args: argparse.Namespace, tool: str, argv: list[str] | None, run_one: Any, note: str = "") -> int:
    """Run ``run_one(task)`` on every task of ``args.tasks``; write each task's JSON and the report; return 0."""
    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    results = []
    for name in args.tasks.split(","):
        results.append(run_one(load_task(name, task_folder(name, args.data, args.out))))
        (args.out / f"{name}.json").write_text(json.dumps(results[-1], indent=2, default=str))
        print(markdown(results[-1]["table"]))
        if note:
            print(f"{note.replace('_', ' ')}: {results[-1][note]}")
    write_report(args.out, tool, argv, start, results, note)
    return 0


def write_report(out: Path, tool: str, argv: list[str] | None, start: float, results: list[dict[str, Any]],
                 note: str = "") -> None:
    """Write ``out/<tool>.json`` (machine, command, seconds, results) and ``out/<tool>.md`` (one table per task;
    ``note``: a result key whose value follows each task's heading)."""
    import torch

    from machine import machine_line

    report = {"machine": machine_line(torch.get_num_threads()),
              "command": " ".join([f"benchmarks/{tool}.py", *(argv if argv is not None else sys.argv[1:])]),
              "seconds": round(time.perf_counter() - start, 1), "results": results}
    (out / f"{tool}.json").write_text(json.dumps(report, indent=2, default=str))
    text = []
    for r in results:
        extra = f"; {note.replace('_', ' ')}: {r[note]}" if note else ""
        text += [f"## {r['task']} ({r['metric']}){extra}", "", markdown(r["table"]), ""]
    (out / f"{tool}.md").write_text("\n".join(text))
    print(f"done in {report['seconds']} s; {out / (tool + '.md')}")


def task_folder(name: str, data: Path, out: Path) -> Path:
    """Return the dataset folder of task ``name`` (written under ``out`` once, from the recordings in ``data``)."""
    if name.startswith("eegmat"):
        return eegmat_folder(data / "eegmat", out / "data-eegmat", h_freq=45.0)
    if name == "dreams":
        return dreams_folder(data / "dreams-spindles", out / "data-dreams")
    return sim_folder(out / "data-sim-ear")


@dataclass
class Task:
    """One task's windows as the product reads them, with the raw-rate textbook features."""

    name: str
    classes: list[str]
    y: np.ndarray
    subjects: np.ndarray
    recordings: np.ndarray
    keep: np.ndarray
    run: Any
    textbook: np.ndarray
    raws: dict[str, tuple[np.ndarray, float]]


def textbook_features(run: Any, rows: np.ndarray) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, float]]]:
    """Return log absolute + relative band power at each recording's own rate on the raw signal ``(N, C·2·bands)``,
    and the raw signals ``{recording: ((C, T) µV, sfreq)}``."""
    import torch

    from passport_kit.model.spectral import band_power_features, carried_bands
    from passport_kit.signals.channels import mapped_data
    from passport_kit.signals.readers import read_recording

    w = run.windows
    seconds = float(run.preprocess.window_seconds)
    files = {rec.file: run.spec.path_of(rec.file) for rec in run.spec.recordings}
    by_name = {Path(str(p)).name: p for p in files.values()}
    raws = {}
    for rec in np.unique(w.recording[rows]):
        path = by_name.get(Path(str(rec)).name, rec)
        raw = read_recording(Path(path))
        raws[rec] = (mapped_data(raw, run.montage) * 1e6, float(raw.info["sfreq"]))
    top = min(sf for _, sf in raws.values()) * 0.45
    bands = carried_bands(top)
    out = np.zeros((len(w.y), len(run.montage.channels) * 2 * len(bands)))
    for rec, (data, sf) in raws.items():
        idx = rows[w.recording[rows] == rec]
        n = int(round(seconds * sf))
        starts = np.round(np.asarray(w.onset_s)[idx] * sf).astype(int)
        segs = np.stack([data[:, s:s + n] for s in starts])
        out[idx] = band_power_features(torch.from_numpy(segs), bands, sfreq=sf).double().numpy()
    return out, raws


def load_task(name: str, folder: Path) -> Task:
    """Return ``name``'s windows and textbook features (the product's default preprocessing and contact policy)."""
    from passport_kit.checkpoint import find_checkpoint
    from passport_kit.montage import Montage
    from passport_kit.montage.registry import get_montage as load_montage
    from passport_kit.onboard.recipe import RecipeOptions
    from passport_kit.onboard.run import prepare_run

    montage = MONTAGES[name]
    mont = Montage.from_yaml(montage) if isinstance(montage, Path) else load_montage(montage)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = prepare_run(RecipeOptions(), find_checkpoint(CHECKPOINT), mont, folder)
    w = run.windows
    keep = np.asarray(run.keep)
    textbook, raws = textbook_features(run, np.flatnonzero(keep))
    return Task(name=name, classes=list(w.classes), y=np.asarray(w.y), subjects=np.asarray(w.subject),
                recordings=np.asarray(w.recording), keep=keep, run=run, textbook=textbook, raws=raws)


def product_features(task: Task, checkpoint: str, legacy: bool = False,
                     probe_layer: int | None = None) -> tuple[dict[str, np.ndarray], int]:
    """Return the probe head's inputs per pooling for every window (the default's model), and D.

    ``probe_layer`` None: the product's read-out layer (``PROBE_LAYER``); N: the backbone after N layers.
    """
    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.engine.forward import read_out_features
    from passport_kit.model.spectral import carried_bands
    from passport_kit.onboard.ladder_inputs import POOLINGS
    from passport_kit.onboard.probe import plain_features
    from passport_kit.onboard.run import PROBE_LAYER, build_classifier

    run = task.run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backbone, _ = load_base_checkpoint(checkpoint)
    backbone.add_channels(run.meta.names)
    model = build_classifier(backbone, len(task.classes), "adapter", recipe="probe", n_channels=len(run.meta.names),
                             bands=carried_bands(run.preprocess.h_freq),
                             probe_layer=PROBE_LAYER if probe_layer is None else probe_layer)
    if legacy:
        model.head.bands = None
    z = read_out_features(model, run.windows.x, run.meta, channel_mask=run.channel_mask, distrust=run.distrust,
                          pooling="meanstd")
    d = model.head.d_model
    return plain_features(z, d, POOLINGS), d


def draws(task: Task, n: int, seed: int) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Return ``n`` draws of grouped outer folds over the usable windows ``(train rows, test rows)``."""
    from passport_kit.onboard.probe import repeated_group_folds

    rows = np.flatnonzero(task.keep)
    k = FOLDS[task.name]
    n_subjects = len(np.unique(task.subjects[rows]))
    out = repeated_group_folds(task.subjects[rows], min(k, n_subjects), n if n_subjects > k else 1, seed)
    return [[(rows[a], rows[b]) for a, b in d] for d in out]


def ladder_of(task: Task, plain: dict[str, np.ndarray], d: int, train: np.ndarray, prior: Any,
              seed: int = 0, stager_first: bool = True) -> Any:
    """Return the product's ladder over the ``train`` rows (sleep: contexts, per-night scaling and the stager's
    options ``prior``: ``[(spec, (N, 5) log-probabilities), ...]`` as adapt computes them, or None)."""
    from passport_kit.onboard.ladder import Ladder
    from passport_kit.onboard.ladder_inputs import CONTEXTS, LadderData
    from passport_kit.sleep import classes_to_stages

    sleep = len(task.classes) > 2
    options = [(spec, p[train]) for spec, p in prior] if prior else []
    data = LadderData(plain={p: v[train] for p, v in plain.items()}, y=task.y[train], groups=task.subjects[train],
                      recordings=task.recordings[train], classes=task.classes, d_model=d, sleep=sleep,
                      contexts=CONTEXTS if sleep else (0,), scalings=("none", "recording") if sleep else ("none",),
                      prior=options[0][1] if options else None, prior_stages=classes_to_stages(task.classes),
                      stager_choice=options[0][0] if options else None, stager_options=options,
                      stager_first=stager_first,
                      prior_reason="no prior" if sleep else "not a sleep-staging task")
    return Ladder(data, seed=seed)


def chosen_prior(prior: Any, spec: dict[str, Any] | None) -> np.ndarray | None:
    """Return the full-length log-probabilities of the stager option ``spec`` (None: no option)."""
    if not prior or spec is None:
        return None
    return next(p for s, p in prior if s == spec)


def fitted_proba(task: Task, plain: dict[str, np.ndarray], d: int, train: np.ndarray, test: np.ndarray,
                 choice: Any, prior: np.ndarray | None = None) -> np.ndarray:
    """Return test probabilities of read-out ``choice`` fitted on ``train`` rows, applied as the head applies it."""
    from passport_kit.onboard.probe import fit_offset_read_out, fit_read_out, offset_inputs, read_out_matrix
    from passport_kit.sleep import classes_to_stages

    sub = {p: v[train] for p, v in plain.items()}
    p_train = None if prior is None else prior[train]
    if choice.offset:  # fitted around the stager's output (issue 43)
        stages = classes_to_stages(task.classes)
        fit, standardise = fit_offset_read_out(sub, task.y[train], choice, p_train, stages, d_model=d,
                                               recordings=list(task.recordings[train]))
        z, _, offset, _ = offset_inputs({p: v[test] for p, v in plain.items()}, choice, prior[test], stages,
                                        list(task.recordings[test]), d)
        return fit.predict_proba(standardise(z), offset)
    lr, standardise = fit_read_out(sub, task.y[train], choice, len(task.classes), d_model=d,
                                   recordings=list(task.recordings[train]), prior=p_train)
    z = read_out_matrix({p: v[test] for p, v in plain.items()}, choice, None if prior is None else prior[test],
                        list(task.recordings[test]))
    out = np.zeros((len(test), len(task.classes)))
    out[:, lr.classes_] = lr.predict_proba(standardise(z))
    return out


def shipped_proba(task: Task, plain: dict[str, np.ndarray], d: int, train: np.ndarray, test: np.ndarray,
                  result: Any, prior: np.ndarray | None) -> np.ndarray:
    """Return test probabilities of the model the ladder ships: its read-out (or the zero-shot prior), its night
    smoothing (transitions of the training rows) and its temperature, as predict applies them."""
    from passport_kit.model.night import smooth, temper
    from passport_kit.onboard.ladder import zero_shot_proba
    from passport_kit.sleep import classes_to_stages

    chosen = result.chosen
    prior = chosen_prior(prior, result.stager_choice)
    if chosen is not None and chosen.choice is None:
        proba = zero_shot_proba(prior[test], classes_to_stages(task.classes))
    else:
        proba = fitted_proba(task, plain, d, train, test, result.fitted, prior)
    if result.smoothing is not None:
        proba = smooth(proba, np.asarray(result.smoothing["transitions"]),
                       np.asarray(result.smoothing["emission_prior"]), list(task.recordings[test]))
    return temper(proba, result.temperature)


def textbook_proba(task: Task, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Return test probabilities of the textbook: standardised log band powers + balanced logistic regression."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=3000, class_weight="balanced"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(task.textbook[train], task.y[train])
    out = np.zeros((len(test), len(task.classes)))
    out[:, model.classes_] = model.predict_proba(task.textbook[test])
    return out


def run_task(task: Task, n_splits: int, random_seeds: int, out: Path, log: Any, seed: int = 0,
             with_yasa: bool = True, checkpoint: str = CHECKPOINT, probe_layer: int | None = None) -> dict[str, Any]:
    """Return the table of one task: per method the mean over draws, paired differences to the default (the
    ladder), and per rung how often the ladder took it (outer folds) and its own outer score."""
    import copy

    from passport_kit.model.night import expected_calibration_error
    from passport_kit.onboard.criteria import SE_MULTIPLE
    from passport_kit.onboard.ladder import zero_shot_proba
    from passport_kit.onboard.ladder_inputs import stager_options
    from passport_kit.sleep import classes_to_stages

    t0 = time.perf_counter()
    plain, d = product_features(task, checkpoint, probe_layer=probe_layer)
    randoms = [product_features(task, str(random_base(out / "bases" / f"random-{s}", s, checkpoint)),
                                probe_layer=probe_layer)[0]
               for s in range(random_seeds)]
    sleep = len(task.classes) > 2
    prior = stager_options(task.run.windows, "auto")[0] if sleep and with_yasa else None
    scores: dict[str, list[float]] = {}
    taken: dict[str, list[bool]] = {}
    ece: dict[str, list[float]] = {}
    effects = {"ladder, min effect 0": 0.0, "ladder, min effect x2": 2.0}
    all_draws = draws(task, n_splits, seed)
    for j, folds in enumerate(all_draws):
        rows = np.concatenate([te for _, te in folds])
        probas: dict[str, np.ndarray] = {}

        def put(method: str, te: np.ndarray, proba: np.ndarray) -> None:
            probas.setdefault(method, np.zeros((len(task.y), len(task.classes))))[te] = proba

        for tr, te in folds:
            ladder = ladder_of(task, plain, d, tr, prior, seed)
            result = ladder.climb()
            put("default (the ladder)", te, shipped_proba(task, plain, d, tr, te, result, prior))
            uncalibrated = copy.copy(result)
            uncalibrated.temperature = 1.0
            put("default, no temperature", te, shipped_proba(task, plain, d, tr, te, uncalibrated, prior))
            put("textbook (native rate)", te, textbook_proba(task, tr, te))
            if sleep and prior:  # issue 43's ablation: the same ladder starting from band power, as before
                put("textbook-first ladder (issue 33)", te, shipped_proba(
                    task, plain, d, tr, te, ladder_of(task, plain, d, tr, prior, seed, stager_first=False).climb(),
                    prior))
                put("stager zero-shot, positions' channel", te, zero_shot_proba(  # no choice among options
                    prior[0][1][te], classes_to_stages(task.classes)))
            for rung in result.rungs:
                taken.setdefault(rung.name, []).append(rung.taken)
            for name, cand in ladder.candidates.items():  # every rung's own best candidate, fitted and scored
                if cand.choice is None or cand.smoothed:  # the zero-shot prior; smoothing over the rung below
                    put(f"rung: {name}", te, shipped_proba(task, plain, d, tr, te, _only(result, cand, ladder), prior))
                else:
                    put(f"rung: {name}", te, fitted_proba(task, plain, d, tr, te, cand.choice,
                                                          chosen_prior(prior, ladder.stager_choice)
                                                          if cand.choice.reads_prior
                                                          else None))
            default_effect = ladder.min_effect
            for method, factor in effects.items():  # the same scored candidates (memoised), another threshold
                ladder.min_effect = default_effect * factor
                put(method, te, shipped_proba(task, plain, d, tr, te, ladder.climb(), prior))
            ladder.min_effect = default_effect
            for k in (1.0, 3.0):  # a step up clearing k standard errors instead of the default's
                ladder.se_multiple = k
                put(f"ladder, gain > {k:g} SE", te, shipped_proba(task, plain, d, tr, te, ladder.climb(), prior))
            ladder.se_multiple = SE_MULTIPLE
            for i, r in enumerate(randoms):
                put(f"random backbone {i}", te, shipped_proba(task, r, d, tr, te,
                                                               ladder_of(task, r, d, tr, prior, seed).climb(), prior))
        for method, proba in probas.items():
            scores.setdefault(method, []).append(score(task.y[rows], proba[rows], task.classes))
        for method in ("default (the ladder)", "default, no temperature"):  # outer calibration (issue 33 item 6)
            ece.setdefault(method, []).append(expected_calibration_error(probas[method][rows], task.y[rows]))
        log(f"{task.name} draw {j + 1}/{len(all_draws)}: ladder {scores['default (the ladder)'][-1]:.3f}  textbook "
            f"{scores['textbook (native rate)'][-1]:.3f}  ({time.perf_counter() - t0:.0f} s)")
    if random_seeds:
        scores["random backbone (mean of seeds)"] = list(np.mean([scores[f"random backbone {i}"]
                                                                  for i in range(random_seeds)], axis=0))
    metric = "auroc" if len(task.classes) == 2 else "kappa"
    table = paired_table(task.name, metric, scores, "default (the ladder)", reference_first=True)
    rates = {name: f"{sum(v)}/{len(v)}" for name, v in taken.items()}
    for row in table:
        rung = row["method"].removeprefix("rung: ")
        if row["method"].startswith("rung: ") and rung in rates:
            row["taken (outer folds)"] = rates[rung]
    calibration = {m: f"{np.mean(v):.3f} (draws {min(v):.3f}-{max(v):.3f})" for m, v in ece.items()}
    return {"task": task.name, "metric": metric, "table": table, "scores": scores, "taken": rates,
            "outer_ECE": calibration, "seconds": round(time.perf_counter() - t0, 1)}


def _only(result: Any, cand: Any, ladder: Any) -> Any:
    """Return a copy of ``result`` shipping ``cand`` alone (temperature 1; smoothing only if ``cand`` is the
    smoothing rung): one rung on its own."""
    import copy

    out = copy.copy(result)
    out.chosen, out.temperature = cand, 1.0
    out.stager_choice = ladder.stager_choice
    out.smoothing = ladder._smoothing_spec(cand) if cand.smoothed else None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = protocol_parser(__doc__.split("\n")[0], out=Path("runs/dev-protocol"), splits=10)
    parser.add_argument("--random-seeds", type=int, default=2)
    parser.add_argument("--checkpoint", default=CHECKPOINT, help="base checkpoint of the default (name or folder); "
                        "the random control copies its architecture")
    parser.add_argument("--probe-layer", type=int, default=None,
                        help="the backbone layer the probe head reads, for the base and its random control "
                        "(default: the product's, layer 0)")
    args = parser.parse_args(argv)
    if no_real_data(args.data, "dev_protocol"):
        return 0
    return run_tasks(args, "dev_protocol", argv, note="outer_ECE", run_one=lambda task: run_task(
        task, args.splits, args.random_seeds, args.out, print, args.seed, checkpoint=args.checkpoint,
        probe_layer=args.probe_layer))


if __name__ == "__main__":
    raise SystemExit(main())
