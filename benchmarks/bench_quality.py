"""Channel-quality thresholds on simulated nights: false positives on clean channels, detection of poor contacts, speed.

Simulates subjects in memory (no EDF round trip) for several montages, once clean and once
with three poor contacts (noise, flat, drift on fixed channels), and counts how often
:func:`passport_kit.signals.quality.channel_quality` calls a channel bad::

    .venv/bin/python benchmarks/bench_quality.py --subjects 6 --hours 1
    .venv/bin/python benchmarks/bench_quality.py --speed-hours 8

Output: one line per montage and condition; the numbers in docs/quality.md come from it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from passport_kit.montage import resolve_montage
from passport_kit.signals.quality import channel_quality
from passport_kit.signals.simulator.recording import simulate_recording

MONTAGES = ("eesm17-ear", "eesm23-ear", "tuh-standard", "tuh-19", "muse", "ceegrid")
EPOCHS_PER_HOUR = 120


def bad_plan(ch_names: list[str]) -> dict[str, str]:
    """Return the poor contacts of the 'bad' condition: first channel noise, second flat, last drift."""
    return {ch_names[0]: "noise", ch_names[1]: "flat", ch_names[-1]: "drift"}


def run(montages: tuple[str, ...], subjects: int, hours: float, seed: int) -> None:
    """Print false-positive and detection rates per montage."""
    epochs = max(1, round(hours * EPOCHS_PER_HOUR))
    for name in montages:
        m = resolve_montage(name)
        plan = bad_plan(m.ch_names)
        fp = fp_win = n_clean = 0
        fp_bad_subj = n_clean_bad_subj = 0
        found = {kind: 0 for kind in plan.values()}
        min_score_clean = 1.0
        for s in range(subjects):
            clean = simulate_recording(m, seed=seed, subject=s, n_epochs=epochs)
            q = channel_quality(clean.data * 1e-6, clean.sfreq, m)
            fp += int(q.bad.sum())
            fp_win += float(q.window_bad.mean()) * len(m.ch_names)
            n_clean += len(m.ch_names)
            min_score_clean = min(min_score_clean, float(q.score.min()))
            corrupt = simulate_recording(m, seed=seed, subject=s, n_epochs=epochs, bad_channels=plan)
            qb = channel_quality(corrupt.data * 1e-6, corrupt.sfreq, m)
            for ch, kind in plan.items():
                found[kind] += int(qb.bad[m.ch_names.index(ch)])
            others = [c for c, ch in enumerate(m.ch_names) if ch not in plan]
            fp_bad_subj += int(qb.bad[others].sum())
            n_clean_bad_subj += len(others)
        detect = ", ".join(f"{k} {v}/{subjects}" for k, v in found.items())
        print(f"{name:13s} clean subjects: {fp}/{n_clean} channels bad (window level {fp_win / n_clean:.3%}), "
              f"lowest score {min_score_clean:.2f} | with poor contacts: detected {detect}; "
              f"other channels bad {fp_bad_subj}/{n_clean_bad_subj}", flush=True)


def speed(hours: float) -> None:
    """Print the time of channel_quality on a random 12-channel recording of ``hours`` at 200 Hz."""
    m = resolve_montage("eesm17-ear")
    data = np.random.default_rng(0).standard_normal((12, int(hours * 3600 * 200))).astype(np.float32) * 1e-5
    start = time.perf_counter()
    channel_quality(data, 200.0, m)
    print(f"channel_quality: {hours:g} h × 12 ch at 200 Hz in {time.perf_counter() - start:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=6)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=100, help="simulator seed (tests use other seeds)")
    parser.add_argument("--montages", nargs="*", default=list(MONTAGES))
    parser.add_argument("--speed-hours", type=float, default=None, help="only time an N-hour recording")
    args = parser.parse_args()
    if args.speed_hours:
        speed(args.speed_hours)
        return
    run(tuple(args.montages), args.subjects, args.hours, args.seed)


if __name__ == "__main__":
    main()
