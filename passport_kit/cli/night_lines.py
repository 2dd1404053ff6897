"""What ``predict`` prints for one recording: its lines, read from the attributes of its typed summary.

:func:`night_lines` gives the lines of one :class:`~passport_kit.inference.night_report.PredictionResult`
(its :class:`~passport_kit.inference.night_summary.NightSummary`): the statistics or the class, the
stager and the channels it read, the scorer's agreement, the classes the adapter cannot output or
outputs from its stager alone, the low-confidence windows, the channels bad, masked or dead, and
the folder written.
"""

from __future__ import annotations

from typing import Any

from passport_kit.wording import counted


def night_lines(result: Any) -> list[str]:
    """Return predict's lines for one recording's ``result`` (a PredictionResult)."""
    s, n = result.summary, result.n_windows
    in_sample = " (in-sample: the adapter was trained on this recording)" if s.in_sample else ""
    lines = [f"{result.recording}: {counted(n, 'window')}; {_answer_line(s)}{in_sample}"]
    if s.zero_shot is not None:
        stager = s.zero_shot
        lines.append(f"  staged by {stager['stager']} on channel {_in_file(stager, 'eeg')} (EOG: "
                     f"{_in_file(stager, 'eog')}, EMG: {_in_file(stager, 'emg')})")
    lines += _scorer_lines(s.scorer_agreement) + _class_notes(s)
    if s.low_confidence_windows:
        marked = "the CSV, TSV and plot" if "hypnogram_plot" in result.files else "the CSV and TSV"
        lines.append(f"  low confidence: {s.low_confidence_windows} of {counted(n, 'window')} (top probability "
                     f"under {s.low_confidence_below:.2f}; marked in {marked})")
    lines += _quality_lines(s.channel_quality, n)
    lines.append(f"  files in {result.files['summary'].parent}")
    return lines


def _answer_line(s: Any) -> str:
    """Return the recording's answer: its sleep statistics, its class, or why they are withheld."""
    stats = s.sleep_statistics
    if s.statistics_withheld:
        return f"{'statistics' if s.staged else 'class'} withheld: {s.statistics_withheld}"
    if not stats:
        return class_line(s)
    line = (f"TST {stats['TST']:.1f} min, SE {stats['SE']:.1f} %, SOL {_minutes(stats['SOL'])} (persistent sleep "
            f"{_minutes(stats.get('LPS'))}), WASO {_minutes(stats['WASO'])}, REM latency "
            f"{_minutes(stats['REM_latency'])}")
    if s.statistics_meaningful is False and s.statistics_note:
        line += f" ({s.statistics_note})"
    return line


def class_line(s: Any) -> str:
    """Return predict's answer for a classified recording (summary ``s``): its class, mean probability and the
    windows' classes."""
    chosen = s.recording_class
    if chosen is None:
        return "no windows to classify"
    mean = s.recording_probabilities or {}
    windows = ", ".join(f"{n} {c}" for c, n in sorted(s.class_counts.items(), key=lambda kv: -kv[1]))
    p = mean.get(chosen, float("nan"))
    # A mean this close to chance is a guess over windows that disagree: said so, as a window's low confidence is.
    doubt = "; uncertain" if p < (s.low_confidence_below or 0.0) else ""
    return f"class {chosen} (mean probability {p:.2f}{doubt}; windows: {windows})"


def _scorer_lines(scored: dict[str, Any] | None) -> list[str]:
    """Return the lines of a scorer's agreement (--labels): kappa, accuracy and the confusion table."""
    if scored is None:
        return []
    if scored["kappa"] is None:
        return [f"  scorer ({scored['labels']}): no window scored by both"]
    from passport_kit.inference.agreement import confusion_lines

    kind = "in-sample (a training recording, not a held-out score): " if scored.get("in_sample") else ""
    return [f"  scorer ({scored['labels']}): {kind}kappa {scored['kappa']:.3f}, accuracy "
            f"{100 * scored['accuracy']:.1f} % over {counted(scored['windows'], 'window')}",
            *(f"    {row}" for row in confusion_lines(scored["confusion"]))]


def _class_notes(s: Any) -> list[str]:
    """Return the notes on classes without training windows: those the adapter cannot output, those from its stager."""
    lines = []
    if s.classes_not_learned:
        missing = s.classes_not_learned
        rem = " (so REM latency is n/a)" if "REM" in missing and s.sleep_statistics else ""
        lines.append(f"  this adapter cannot output {', '.join(missing)}: it had no training windows of "
                     f"{'it' if len(missing) == 1 else 'them'}{rem}; adapt on recordings that contain them")
    if s.classes_from_stager_alone:
        extra = s.classes_from_stager_alone
        them = "it" if len(extra) == 1 else "them"
        lines.append(f"  {', '.join(extra)}: no training windows of {them}, yet this adapter outputs {them}: its "
                     f"sleep stager stages all five, so {them} come{'s' if len(extra) == 1 else ''} from the stager "
                     f"alone, unchecked against your labels; adapt on recordings that contain {them} to check")
    return lines


def _quality_lines(quality: dict[str, Any] | None, n_windows: int) -> list[str]:
    """Return the lines of the channel quality block: bad channels, where they were masked, dead channels."""
    if quality is None:
        return []
    bad = ", ".join(quality["bad_channels"]) or "none"
    masking = quality.get("masking")
    masked = ("" if not masking else
              f"; masked ({_mask_rule(masking)}) in {counted(masking['windows_with_masked_channels'], 'window')}")
    lines = [f"  bad channels: {bad}{masked}"]
    dead = quality.get("dead_channels") or {}
    if dead.get("windows"):  # issue 46: said, so a dead contact is not read as a clean night
        lines.append("  dead (flat, NaN or near-dead) channels: "
                     + ", ".join(f"{name} in {k} of {n_windows} windows" for name, k in dead["windows"].items())
                     + ("; the read-out read their band power from the nearest live channel"
                        if dead.get("band_power_from_neighbour") else ""))
    return lines


def _in_file(stager: dict[str, Any], role: str) -> str:
    """Return the montage channel a zero-shot stager read as ``role``, with the file's name for it where it differs:
    ``C3-A1 (CZ-A1 in the file)``; 'none' where it read none."""
    name = stager.get(role)
    if name is None:
        return "none"
    in_file = stager.get(f"{role}_in_file")
    return name if in_file is None else f"{name} ({in_file} in the file)"


def _mask_rule(masking: dict[str, Any]) -> str:
    """Return the rule of a summary's masking block in words: 'quality below 0.5, neighbour r below 0.2'."""
    rules = []
    if masking.get("threshold") is not None:
        rules.append(f"quality below {masking['threshold']:g}")
    if masking.get("uncorrelated_below") is not None:
        rules.append(f"neighbour r below {masking['uncorrelated_below']:g}")
    return ", ".join(rules)


def _minutes(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} min"


__all__ = ["class_line", "night_lines"]
