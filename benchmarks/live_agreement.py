"""Causal staging against offline ``predict`` (issue 59): how often an epoch's live stage, which reads no later epoch
(or K more with ``--look-ahead K``), is the stage ``predict`` gives it with the whole night.

The night (``--recording``, with its scorer's labels ``--labels``: one stage per 30-s epoch) is
staged causally from its file (``passport_kit.live.stage_recording_causally``: the stages a live
stream of it gets, number for number, tests/live/test_stream.py), once per look-ahead in
``--look-ahead`` (each epoch's answer before the night smoothing is computed once and reused: it
does not depend on the look-ahead), and by ``predict`` (forward-backward smoothing over the whole
night). Printed: per look-ahead, the share of epochs and Cohen's kappa against predict's stages, and
each one's kappa against the scorer. Run::

    .venv/bin/python benchmarks/live_agreement.py --adapter runs/my-ear --recording new-night/s01.edf \\
        --labels new-night/s01_hypnogram.csv --look-ahead 0 1 2 4
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adapter", required=True)
    parser.add_argument("--recording", required=True)
    parser.add_argument("--labels", required=True)
    parser.add_argument("--look-ahead", type=int, nargs="+", default=[0, 1, 2, 4])
    args = parser.parse_args()

    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    import passport_kit as pk
    from passport_kit.live import CausalSettings, adapter_scorer, stage_recording_causally

    scorer = adapter_scorer(args.adapter)
    answers: dict[tuple[int, bytes], tuple] = {}
    own = scorer._score

    def once(raw, name, first):  # noqa: ANN001, ANN202 - an epoch is known by its history's length and last samples
        key = (raw.n_times, raw.get_data()[:, -8:].tobytes())
        if key not in answers:
            answers[key] = own(raw, name, first)
        return answers[key]

    scorer._score = once
    with tempfile.TemporaryDirectory() as out:
        offline = pk.predict(args.adapter, [args.recording], out=out)[0]
    classes = offline.classes
    predicted = offline.proba.argmax(1)
    values = [line.split(",")[0].strip() for line in Path(args.labels).read_text().splitlines() if line.strip()]
    values = values[1:] if values and values[0] not in classes else values   # a header line
    truth = np.array([classes.index(v) if v in classes else -1 for v in values[: len(predicted)]])
    scored = truth >= 0
    rows = {"predict (whole night)": {"kappa_vs_scorer": float(cohen_kappa_score(truth[scored], predicted[scored]))}}
    for k in args.look_ahead:
        staged = np.array([int(np.argmax(e.proba)) for e in
                           stage_recording_causally(args.recording, scorer, settings=CausalSettings(look_ahead=k))])
        n = min(len(staged), len(predicted))
        rows[f"causal, look-ahead {k}"] = {
            "same_stage_as_predict": float((staged[:n] == predicted[:n]).mean()),
            "kappa_vs_predict": float(cohen_kappa_score(predicted[:n], staged[:n])),
            "kappa_vs_scorer": float(cohen_kappa_score(truth[:n][scored[:n]], staged[:n][scored[:n]]))}
    print(json.dumps({"recording": args.recording, "adapter": args.adapter, "epochs": int(len(predicted)),
                      "history_epochs": scorer.history, "smoothing": scorer.smoothing is not None, "rows": rows},
                     indent=2))


if __name__ == "__main__":
    main()
