"""Channel-quality thresholds on simulated nights: false positives on clean channels, detection of poor contacts, speed.

Simulates subjects in memory (no EDF round trip) for several montages, once clean and once
with three poor contacts (noise, flat, drift on fixed channels), and counts how often
:func:`passport_kit.signals.quality.channel_quality` calls a channel bad::

    .venv/bin/python benchmarks/bench_quality.py --subjects 6 --hours 1
    .venv/bin/python benchmarks/bench_quality.py --speed-hours 8
    .venv/bin/python benchmarks/bench_quality.py --eegmat ../shared/data/eegmat

Output: one line per montage and condition; the numbers in docs/quality.md come from it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from passport_kit.montage import resolve_montage
from passport_kit.signals.quality import channel_quality, neighbour_weights
from passport_kit.signals.simulator.recording import simulate_recording

MONTAGES = ("eesm17-ear", "eesm23-ear", "tuh-standard", "tuh-19", "muse", "ceegrid")
EPOCHS_PER_HOUR = 120


def bad_plan(ch_names: list[str]) -> dict[str, str]:
    """Return the poor contacts of the 'bad' condition: first channel noise, second flat, last drift."""
    return {ch_names[0]: "noise", ch_names[1]: "flat", ch_names[-1]: "drift"}


def uncorrelated(q, threshold: float) -> np.ndarray:
    """Return ``(N, C)`` bool: the channel-windows ``--mask-uncorrelated-channels threshold`` masks (predict's rule)."""
    from passport_kit.contacts import channel_masks

    onsets = np.arange(q.window_score.shape[0]) * q.window_seconds
    return channel_masks(q, onsets, q.window_seconds, mask_uncorrelated=threshold)[0]


def run(montages: tuple[str, ...], subjects: int, hours: float, seed: int, threshold: float) -> None:
    """Print false-positive and detection rates per montage, and the margins of each statistic."""
    epochs = max(1, round(hours * EPOCHS_PER_HOUR))
    for name in montages:
        m = resolve_montage(name)
        plan = bad_plan(m.ch_names)
        fp = fp_win = n_clean = 0
        fp_bad_subj = n_clean_bad_subj = 0
        unc_clean = unc_noise = unc_other = 0.0
        found = {kind: 0 for kind in plan.values()}
        clean_stats: dict[str, list[float]] = {k: [] for k in ("var_z_channels", "line_rel", "drift_rel", "corr")}
        bad_stats: dict[str, list[float]] = {k: [] for k in ("noise var_z", "noise line_rel", "noise corr", "drift_rel")}
        for s in range(subjects):
            clean = simulate_recording(m, seed=seed, subject=s, n_epochs=epochs)
            q = channel_quality(clean.data * 1e-6, clean.sfreq, m)
            fp += int(q.bad.sum())
            fp_win += float(q.window_bad.mean()) * len(m.ch_names)
            unc_clean += float(uncorrelated(q, threshold).mean()) * len(m.ch_names)
            n_clean += len(m.ch_names)
            clean_stats["var_z_channels"].append(float(np.nanmax(q.statistics["var_z_channels"])))
            clean_stats["line_rel"].append(float(np.nanmax(q.statistics["line_rel"])))
            clean_stats["drift_rel"].append(float(np.nanmax(q.statistics["drift_rel"])))
            # Only channels with a neighbour within the radius have their correlation scored.
            near = neighbour_weights(m)[1]
            clean_stats["corr"].append(float(np.nanmin(q.statistics["neighbour_corr"][near])) if near.any() else np.nan)
            corrupt = simulate_recording(m, seed=seed, subject=s, n_epochs=epochs, bad_channels=plan)
            qb = channel_quality(corrupt.data * 1e-6, corrupt.sfreq, m)
            for ch, kind in plan.items():
                found[kind] += int(qb.bad[m.ch_names.index(ch)])
            noisy, drifting = m.ch_names.index(next(iter(plan))), m.ch_names.index(list(plan)[-1])
            bad_stats["noise var_z"].append(float(qb.statistics["var_z_channels"][noisy]))
            bad_stats["noise line_rel"].append(float(qb.statistics["line_rel"][noisy]))
            bad_stats["noise corr"].append(float(qb.statistics["neighbour_corr"][noisy]))
            bad_stats["drift_rel"].append(float(qb.statistics["drift_rel"][drifting]))
            others = [c for c, ch in enumerate(m.ch_names) if ch not in plan]
            fp_bad_subj += int(qb.bad[others].sum())
            n_clean_bad_subj += len(others)
            masked = uncorrelated(qb, threshold)
            unc_noise += float(masked[:, noisy].mean())
            unc_other += float(masked[:, others].mean()) * len(others)
        detect = ", ".join(f"{k} {v}/{subjects}" for k, v in found.items())
        scored_corr = [c for c in clean_stats["corr"] if np.isfinite(c)]
        noise_corr = [c for c in bad_stats["noise corr"] if np.isfinite(c)]
        print(f"{name:13s} clean subjects: {fp}/{n_clean} channels bad (window level {fp_win / n_clean:.2%}) | "
              f"with poor contacts: detected {detect}; other channels bad {fp_bad_subj}/{n_clean_bad_subj}", flush=True)
        print(f"{'':13s} clean max: var_z {max(clean_stats['var_z_channels']):.2f}, line_rel "
              f"{max(clean_stats['line_rel']):.3g}, drift_rel {max(clean_stats['drift_rel']):.3g}; clean min scored corr "
              f"{f'{min(scored_corr):.2f}' if scored_corr else 'none scored'} | bad: noise var_z {min(bad_stats['noise var_z']):.2f}.."
              f"{max(bad_stats['noise var_z']):.2f}, noise line_rel >= {min(bad_stats['noise line_rel']):.3g}, "
              f"noise corr <= {f'{max(noise_corr):.2f}' if noise_corr else 'n/a'}, drift_rel >= {min(bad_stats['drift_rel']):.3g}",
              flush=True)
        print(f"{'':13s} scored r < {threshold:g} (masked by default): clean channel-windows {unc_clean / n_clean:.2%}; "
              f"noise contact {unc_noise / subjects:.1%} of its windows; other channels "
              f"{unc_other / n_clean_bad_subj:.2%}", flush=True)


def speed(hours: float) -> None:
    """Print the time of channel_quality on a random 12-channel recording of ``hours`` at 200 Hz."""
    m = resolve_montage("eesm17-ear")
    data = np.random.default_rng(0).standard_normal((12, int(hours * 3600 * 200))).astype(np.float32) * 1e-5
    start = time.perf_counter()
    channel_quality(data, 200.0, m)
    print(f"channel_quality: {hours:g} h × 12 ch at 200 Hz in {time.perf_counter() - start:.2f} s")


def inject_faults(data: np.ndarray, sfreq: float, names: list[str], rng: np.random.Generator) -> tuple[np.ndarray, dict[str, str]]:
    """Return ``(data with faults, {channel: kind})``: three random channels get noise, flat and drift (volts)."""
    out = data.copy()
    t = np.arange(data.shape[1]) / sfreq
    picks = rng.choice(len(names), 3, replace=False)
    out[picks[0]] += 40e-6 * rng.standard_normal(t.size) + 100e-6 * np.sin(2 * np.pi * 50 * t)
    out[picks[1]] = rng.uniform(-5e-6, 5e-6)
    out[picks[2]] += 250e-6 * np.sin(2 * np.pi * rng.uniform(0.02, 0.1) * t + rng.uniform(0, 2 * np.pi))
    return out, {names[picks[0]]: "noise", names[picks[1]]: "flat", names[picks[2]]: "drift"}


def eegmat(folder: str, seed: int, threshold: float) -> None:
    """Print false positives on the real eegmat recordings (tuh-19, 10-s windows) and detection of injected faults."""
    from pathlib import Path

    from passport_kit.signals import map_channels, read_recording

    m = resolve_montage("tuh-19")
    rng = np.random.default_rng(seed)
    files = sorted(Path(folder).glob("Subject*_*.edf"))
    fp = cells = fp_other = n_other = 0
    unc_clean = unc_noise = unc_other = 0.0
    clean_windows = 0
    found = {"noise": 0, "flat": 0, "drift": 0}
    for path in files:
        raw = read_recording(path)
        data, sfreq = map_channels(raw, m).get_data(), raw.info["sfreq"]
        q = channel_quality(data, sfreq, m, window_seconds=10)
        fp += int(q.bad.sum())
        cells += len(m.ch_names)
        unc_clean += float(uncorrelated(q, threshold).sum())
        clean_windows += q.window_score.size
        faulty, plan = inject_faults(data, sfreq, m.ch_names, rng)
        qf = channel_quality(faulty, sfreq, m, window_seconds=10)
        for ch, kind in plan.items():
            found[kind] += int(qf.bad[m.ch_names.index(ch)])
        others = [c for c, ch in enumerate(m.ch_names) if ch not in plan]
        fp_other += int(qf.bad[others].sum())
        n_other += len(others)
        masked = uncorrelated(qf, threshold)
        unc_noise += float(masked[:, m.ch_names.index(next(iter(plan)))].mean())
        unc_other += float(masked[:, others].mean()) * len(others)
    detect = ", ".join(f"{k} {v}/{len(files)}" for k, v in found.items())
    print(f"eegmat ({len(files)} recordings, tuh-19): clean {fp}/{cells} channels bad | injected faults: "
          f"detected {detect}; other channels bad {fp_other}/{n_other}")
    print(f"scored r < {threshold:g} (masked by default): clean {int(unc_clean)} of {clean_windows} channel-windows; injected noise "
          f"channel {unc_noise / len(files):.1%} of its windows; other channels {unc_other / n_other:.2%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=6)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=100, help="simulator seed (tests use other seeds)")
    parser.add_argument("--montages", nargs="*", default=list(MONTAGES))
    parser.add_argument("--speed-hours", type=float, default=None, help="only time an N-hour recording")
    parser.add_argument("--eegmat", default=None, help="only score the real eegmat folder (with injected faults)")
    parser.add_argument("--uncorrelated", type=float, default=0.2,
                        help="neighbour correlation under which --mask-uncorrelated-channels masks (default 0.2)")
    args = parser.parse_args()
    if args.eegmat:
        eegmat(args.eegmat, args.seed, args.uncorrelated)
        return
    if args.speed_hours:
        speed(args.speed_hours)
        return
    run(tuple(args.montages), args.subjects, args.hours, args.seed, args.uncorrelated)


if __name__ == "__main__":
    main()
