"""Ablation of issue 26: probe, LP-FT, the auto recipe and the paper's finetune, on the dev protocol's folds.

Tasks and outer folds are those of ``benchmarks/dev_protocol.py`` (eegmat rest/arithmetic on three
montages, DREAMS sleep, simulated ear-EEG; repeated grouped draws over subjects). Per outer fold, on
the product's model (base checkpoint, contact policy, spectral block), trained on the training
subjects and scored on the held-out ones:

- ``probe``: the ladder without LP-FT (``onboard.ladder.fit_probe``: band power, then frozen features if they pay);
- ``LP-FT (forced)``: the mixture adapter and read-out trained from the probe's LP-FT start for the
  whole step budget (``passport_kit.onboard.lpft``), whatever the inner cross-validation says;
- ``auto``: the default recipe: the probe, then LP-FT only when its inner cross-validation says so
  (gain over the probe > 1 standard error; how often it did is reported); ``auto, rule gain > 0`` and
  ``auto, rule gain > 2 SE``: the same decision with another margin (the rule's ablation);
- ``finetune (paper)``: the paper's recipe (fresh MLP head + adapter, AdamW, early stopping on a
  validation share of the training subjects), ``--finetune`` only (slow on CPU);
- ``textbook``: log absolute and relative band power at each recording's own rate + logistic
  regression (dev_protocol's);
- ``LP-FT (forced), random backbone``: the same on a randomly initialised backbone, ``--random``.

Per task: the mean over draws of every method and the mean and 95 % t-interval over draws of
(method - probe)::

    OMP_NUM_THREADS=1 .venv/bin/python -u benchmarks/lpft_ablation.py --out runs/lpft --splits 3

Skips cleanly (exit 0, one line) when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dev_protocol as dp  # noqa: E402  (benchmarks/ is not a package)
import real_data as rd  # noqa: E402


def base_model(task: Any, checkpoint: str, recipe: str = "probe") -> Any:
    """Return the product's classifier for ``task`` over ``checkpoint`` (adapter policy), as ``adapt`` builds it."""
    from passport_kit.checkpoint import load_base_checkpoint
    from passport_kit.model.spectral import carried_bands
    from passport_kit.onboard.run import build_classifier

    run = task.run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backbone, _ = load_base_checkpoint(checkpoint)
    backbone.add_channels(run.meta.names)
    return build_classifier(backbone, len(task.classes), "adapter", recipe=recipe, n_channels=len(run.meta.names),
                            bands=carried_bands(run.preprocess.h_freq))


def proba_of(model: Any, task: Any, rows: np.ndarray) -> np.ndarray:
    """Return the model's probabilities for ``rows`` (whole recordings in order for context heads)."""
    from passport_kit.engine.forward import predict_proba

    run = task.run
    return predict_proba(model, run.windows.x, run.meta, index=rows, channel_mask=run.channel_mask,
                         distrust=run.distrust)


def lpft_fold(task: Any, template: Any, train: np.ndarray, test: np.ndarray, seed: int, *, decide_too: bool
              ) -> dict[str, Any]:
    """Return the probe's, forced LP-FT's and (``decide_too``) auto's test probabilities of one outer fold."""
    from passport_kit.onboard.lpft import decide, lpft_settings, step_budget
    from passport_kit.onboard.fitting import FitData
    from passport_kit.onboard.lpft import train as train_lpft
    from passport_kit.onboard.ladder import fit_probe
    from passport_kit.onboard.ladder_inputs import CONTEXTS
    from passport_kit.onboard.probe import ReadOutChoice

    run, w = task.run, task.run.windows
    sleep = len(task.classes) > 2
    model = copy.deepcopy(template)
    windows = FitData(w.x, w.y, run.meta, task.classes, channel_mask=run.channel_mask, distrust=run.distrust,
                      sequence=w.recording)
    probe = fit_probe(model, windows, train, w.subject, seed=seed,
                      contexts=CONTEXTS if sleep else (0,), scalings=("none", "recording") if sleep else ("none",))
    out: dict[str, Any] = {"probe": proba_of(model, task, test)}
    # LP-FT's start: the backbone rung's read-out (forced here even where the ladder did not take it: the ablation)
    backbone = probe.result.candidates.get("backbone")
    start = backbone.choice if backbone is not None else ReadOutChoice(0.3, 0.3)
    steps = step_budget(len(train), 64)
    settings = lpft_settings(steps=steps, seed=seed)

    def lpft(with_settings: Any) -> Any:
        """Return a copy of the template trained by LP-FT from ``start`` on the training rows (the product's)."""
        tuned = copy.deepcopy(template)
        data = FitData(w.x, w.y, run.meta, task.classes, channel_mask=run.channel_mask, distrust=run.distrust,
                       sequence=w.recording)
        train_lpft(tuned, data, train, start=start, plain=probe.features, settings=with_settings, seed=seed)
        return tuned

    if start.scaling != "none":  # the product does not try LP-FT on a per-recording scaled read-out
        out["LP-FT (forced)"] = out["probe"]
    else:
        out["LP-FT (forced)"] = proba_of(lpft(settings), task, test)
    if decide_too:
        if probe.result.folds is None or start.scaling != "none":
            out["auto"], out["auto trained"] = out["probe"], False
            out["auto, rule gain > 0"] = out["auto, rule gain > 2 SE"] = out["probe"]
        else:
            data = FitData(w.x, w.y, run.meta, task.classes, channel_mask=run.channel_mask, distrust=run.distrust,
                           sequence=np.asarray(w.recording))
            decision = decide(model, data, train, w.subject, chosen=probe.choice, start=start, plain=probe.features,
                              settings=settings)  # seed: settings' (lpft_settings(seed=seed))
            out["auto trained"] = decision.trained
            out["decision"] = decision.as_dict()
            # The rule's margin, ablated: the product trains when gain > 1 SE; the best step count does not
            # depend on the margin, so the other rules reuse the same trained model or the probe.
            best = max(decision.curve, key=lambda c: c["gain"]) if decision.curve else None
            margins = {"auto, rule gain > 0": 0.0, "auto, rule gain > 2 SE": 2.0}
            out["auto"] = out["probe"]
            for name in margins:
                out[name] = out["probe"]
            if best is not None and best["gain"] > 0:
                trained_proba = proba_of(lpft(settings.model_copy(update={"max_steps": best["steps"]})), task, test)
                if decision.trained:
                    out["auto"] = trained_proba
                for name, k in margins.items():
                    if best["gain"] > k * best["se"]:
                        out[name] = trained_proba
    return out


def finetune_fold(task: Any, checkpoint: str, train: np.ndarray, test: np.ndarray, seed: int) -> np.ndarray:
    """Return the paper's finetune recipe's test probabilities (validation share of the training subjects)."""
    from passport_kit.onboard.recipe import RecipeOptions
    from passport_kit.onboard.splits import SubjectSplit, with_validation

    from passport_kit.onboard.fitting import FitRun
    from passport_kit.onboard.run import train_once
    from passport_kit.checkpoint import load_base_checkpoint

    w = task.run.windows
    subjects = np.asarray(w.subject)
    fold = SubjectSplit(name="outer", train=tuple(sorted(set(subjects[train].tolist()))),
                        test=tuple(sorted(set(subjects[test].tolist()))))
    split = with_validation(fold, fraction=0.2, seed=seed)
    tr = train[np.isin(subjects[train], split.train)]
    va = train[np.isin(subjects[train], split.validation)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backbone, _ = load_base_checkpoint(checkpoint)
        trained = train_once(RecipeOptions(recipe="finetune"), backbone, task.run, tr, va, seed=seed,
                             where=FitRun(device=None, precision="fp32"))
    return proba_of(trained.model, task, test)


def run_task(task: Any, args: argparse.Namespace, log: Any) -> dict[str, Any]:
    """Return one task's table: per method the mean over draws, and paired differences to the probe."""
    t0 = time.perf_counter()
    template = base_model(task, args.checkpoint)
    random_template = base_model(task, str(rd.random_base(args.out / "bases" / "random-0", 0, args.checkpoint))) \
        if args.random else None
    scores: dict[str, list[float]] = {}
    decisions: list[dict[str, Any]] = []
    for j, folds in enumerate(dp.draws(task, args.splits, args.seed)):
        rows = np.concatenate([te for _, te in folds])
        probas: dict[str, np.ndarray] = {}

        def put(method: str, te: np.ndarray, proba: np.ndarray) -> None:
            probas.setdefault(method, np.zeros((len(task.y), len(task.classes))))[te] = proba

        for tr, te in folds:
            out = lpft_fold(task, template, tr, te, args.seed + j, decide_too=True)
            for method in ("probe", "LP-FT (forced)", "auto", "auto, rule gain > 0", "auto, rule gain > 2 SE"):
                if method in out:
                    put(method, te, out[method])
            decisions.append({"draw": j, "trained": out["auto trained"], **(out.get("decision") or {})})
            put("textbook (native rate)", te, dp.textbook_proba(task, tr, te))
            if random_template is not None:
                rnd = lpft_fold(task, random_template, tr, te, args.seed + j, decide_too=False)
                put("probe, random backbone", te, rnd["probe"])
                put("LP-FT (forced), random backbone", te, rnd["LP-FT (forced)"])
            if args.finetune:
                put("finetune (paper)", te, finetune_fold(task, args.checkpoint, tr, te, args.seed + j))
        for method, proba in probas.items():
            scores.setdefault(method, []).append(rd.score(task.y[rows], proba[rows], task.classes))
        log(f"{task.name} draw {j + 1}: " + "  ".join(f"{m} {v[-1]:.3f}" for m, v in scores.items())
            + f"  ({time.perf_counter() - t0:.0f} s)")
    metric = "auroc" if len(task.classes) == 2 else "kappa"
    table = dp.paired_table(task.name, metric, scores, "probe", reference_first=False)
    trained = sum(bool(d["trained"]) for d in decisions)
    return {"task": task.name, "metric": metric, "table": table, "scores": scores, "decisions": decisions,
            "auto_trained": f"{trained} of {len(decisions)} outer folds",
            "seconds": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = dp.protocol_parser(__doc__.split("\n")[0], out=Path("runs/lpft-ablation"), splits=3)
    parser.add_argument("--random", action="store_true", help="also the random-backbone control")
    parser.add_argument("--finetune", action="store_true", help="also the paper's finetune recipe (slow)")
    parser.add_argument("--checkpoint", default=rd.CHECKPOINT, help="base checkpoint (name or folder)")
    args = parser.parse_args(argv)
    if dp.no_real_data(args.data, "lpft_ablation"):
        return 0
    return dp.run_tasks(args, "lpft_ablation", argv, lambda task: run_task(task, args, print), note="auto_trained")


if __name__ == "__main__":
    raise SystemExit(main())
