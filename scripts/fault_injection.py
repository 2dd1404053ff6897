"""Feed the CLI the bad inputs of issue 28 and print what happens to each, as the table in docs/reliability.md.

    .venv/bin/python scripts/fault_injection.py [--out docs/figures/fault_injection.md]

Everything runs in a temporary folder with its own ``PASSPORT_KIT_HOME`` (a tiny random base
checkpoint, a 4-subject, 5-minute oscillation dataset on a 3-channel ear montage, one 2-step
adapter bundle), in-process through typer's runner, so the whole set takes a minute or two on
two CPU cores. Each row: the bad input, the exit code, and the first line the user sees. A
traceback (exit 1) would be a finding; the tests under ``tests/`` pin every row.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import edfio
import numpy as np

CLASSES = ["W", "N1", "N2", "N3", "REM"]
FREQ = {"W": 10.0, "N1": 6.0, "N2": 13.0, "N3": 1.5, "REM": 4.0}
MONTAGE = """\
name: fi-ear
coordinate_frame: head
units: mm
channels:
  - name: EL1
    position: [-80.0, -5.0, 10.0]
  - name: ER1
    position: [80.0, -5.0, 10.0]
  - name: EL2
    position: [-78.0, 2.0, -3.0]
"""
DEEP = "[" * 20_000 + "]" * 20_000
BOMB = 'metadata:\n  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
HOLD = ("import sys\nfrom passport_kit.output_lock import output_lock\nwith output_lock(sys.argv[1], sys.argv[2]):\n"
        "    print('held', flush=True)\n    sys.stdin.readline()\n")


def edf(path: Path, labels: list[str], *, sfreq: float = 200.0, noise_only: bool = False, seed: int = 0) -> Path:
    """Write an EDF on the montage's channels: per-stage oscillations, or white noise of 30 µV."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(30 * sfreq)) / sfreq
    base = np.concatenate([20 * np.sin(2 * np.pi * FREQ[lab] * t + rng.uniform(0, 6)) for lab in labels])
    signals = []
    for i, name in enumerate(("EL1", "ER1", "EL2")):
        x = 30 * rng.standard_normal(base.size) if noise_only else base * (0.8 + 0.2 * i) + 3 * rng.standard_normal(base.size)
        signals.append(edfio.EdfSignal(x, sampling_frequency=sfreq, label=name, physical_dimension="uV",
                                       physical_range=(-500, 500)))
    edfio.Edf(signals).write(path)
    return path


def dataset(root: Path, n_subjects: int = 4, *, shift: int = 0) -> Path:
    """Write a labeled 4-subject dataset folder (EDF + CSV + dataset.yaml)."""
    root.mkdir(parents=True, exist_ok=True)
    lines = ["task: sleep-staging", "window_seconds: 30", f"classes: [{', '.join(CLASSES)}]", "recordings:"]
    for s in range(n_subjects):
        labels = [CLASSES[(i + s + shift) % 5] for i in range(10)]
        edf(root / f"s{s + 1:02d}.edf", labels, seed=s + shift)
        (root / f"s{s + 1:02d}.csv").write_text("\n".join(labels) + "\n")
        lines += [f"  - subject: s{s + 1:02d}", f"    file: s{s + 1:02d}.edf", f"    labels: s{s + 1:02d}.csv"]
    (root / "dataset.yaml").write_text("\n".join(lines) + "\n")
    return root


def one_recording_dataset(root: Path, labels_line: str, *, extra: str = "") -> Path:
    """Write a dataset folder of one recording whose entry ends with ``labels_line``."""
    root.mkdir(parents=True, exist_ok=True)
    edf(root / "s01.edf", CLASSES * 2)
    (root / "dataset.yaml").write_text(f"{extra}task: sleep-staging\nrecordings:\n  - subject: s01\n    file: s01.edf\n"
                                       f"    {labels_line}\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="passport-fi-"))
    os.environ["PASSPORT_KIT_HOME"] = str(work / "home")
    import torch
    from typer.testing import CliRunner

    from passport_kit.checkpoint import save_base_checkpoint, user_checkpoint_dir
    from passport_kit.cli.app import app
    from passport_kit.model import build_backbone, model_config

    torch.manual_seed(0)
    save_base_checkpoint(build_backbone(model_config("cbramod-tiny", "mlp-experts")), user_checkpoint_dir() / "fi-tiny",
                         name="fi-tiny", card="fault injection")
    runner = CliRunner()
    montage = work / "fi-ear.yaml"
    montage.write_text(MONTAGE)
    data = dataset(work / "data")
    adapt = ["adapt", "--montage", str(montage), "--checkpoint", "fi-tiny", "--batch-size", "8", "--max-steps", "2",
             "--no-progress"]
    bundle = work / "bundle"
    assert runner.invoke(app, [*adapt, "--data", str(data), "--out", str(bundle)]).exit_code == 0

    def predict(adapter: Path, recording: Path, out: str, *extra: str) -> list[str]:
        return ["predict", "--adapter", str(adapter), str(recording), "--out", str(work / out), *extra]

    def edited_bundle(name: str, edit: Callable[[Path], None]) -> Path:
        copy = shutil.copytree(bundle, work / name)
        edit(copy)
        return copy

    def nan_weights(folder: Path) -> None:
        from safetensors.torch import load_file, save_file

        tensors = load_file(folder / "adapter.safetensors")
        first = sorted(tensors)[0]
        tensors[first] = torch.full_like(tensors[first], float("nan"))
        save_file(tensors, folder / "adapter.safetensors")

    def json_edit(change: Callable[[dict], object]) -> Callable[[Path], None]:
        def edit(folder: Path) -> None:
            meta = json.loads((folder / "adapter.json").read_text())
            change(meta)
            (folder / "adapter.json").write_text(json.dumps(meta))
        return edit

    def montage_file(name: str, text: str) -> Path:
        path = work / name
        path.write_text(text)
        return path

    def summary_note(out: str, stem: str) -> str:
        s = json.loads((work / out / stem / f"{stem}_summary.json").read_text())
        return f"{s['flagged_windows']} of {s['n_windows']} windows flagged; statistics withheld: {s['statistics_withheld']}"

    # A dataset whose labels changed after the bundle was trained (same settings rerun).
    changed = shutil.copytree(data, work / "data-changed")
    changed_bundle = work / "bundle-changed"
    assert runner.invoke(app, [*adapt, "--data", str(changed), "--out", str(changed_bundle)]).exit_code == 0
    (changed / "s02.csv").write_text("\n".join(reversed((changed / "s02.csv").read_text().split())) + "\n")
    # Label-file oddities, one dataset folder each.
    (work / "secret.txt").write_text("root:x:0:0:root:/root:/bin/bash\n")
    escape = one_recording_dataset(work / "escape", "labels: ../secret.txt")
    link = one_recording_dataset(work / "link", "labels: s01.csv")
    (link / "s01.csv").symlink_to(work / "secret.txt")
    devzero = one_recording_dataset(work / "devzero", "labels: /dev/zero", extra="allow_outside_paths: true\n")
    fifo = one_recording_dataset(work / "fifo", "labels: s01.csv")
    os.mkfifo(fifo / "s01.csv")
    folder_labels = one_recording_dataset(work / "folderlabels", "labels: s01.csv")
    (folder_labels / "s01.csv").mkdir()
    utf16 = one_recording_dataset(work / "utf16", "labels: s01.csv")
    (utf16 / "s01.csv").write_bytes("\n".join(CLASSES * 2).encode("utf-16"))
    huge = one_recording_dataset(work / "huge", "labels: s01.csv")
    with (huge / "s01.csv").open("wb") as f:
        f.truncate(3 * 2**30)  # 3 GiB, sparse
    unknown_key = one_recording_dataset(work / "unknownkey", "labelz: s01.csv")
    deep_ds = one_recording_dataset(work / "deepds", "label: W", extra=f"h_freq: {DEEP}\n")
    twice = one_recording_dataset(work / "twice", "label: W")
    (twice / "dataset.yaml").write_text((twice / "dataset.yaml").read_text() + "  - {subject: s02, file: s01.edf, label: W}\n")
    # Issue 57's faults: a label file far longer than the night, channels at 1 % gain or dead, a sealed bundle edited.
    big_labels = work / "big-labels.csv"
    with big_labels.open("w") as f:
        f.write("W\n" * (28 * 2**20))  # 56 MiB
    quiet = _scaled_channels(data / "s01.edf", work / "quiet.edf", [2], 0.01)
    two_dead = _scaled_channels(data / "s01.edf", work / "twodead.edf", [0, 1], 0.0)
    probe = work / "bundle-probe"
    adapted = runner.invoke(app, ["adapt", "--montage", str(montage), "--checkpoint", "fi-tiny", "--no-progress",
                                  "--recipe", "probe", "--prior", "none", "--data", str(data), "--out", str(probe)])
    assert adapted.exit_code == 0, adapted.output

    def resealed(change: Callable[[dict], object]) -> Callable[[Path], None]:
        def edit(folder: Path) -> None:
            from passport_kit.checkpoint.seal import reseal_bundle

            json_edit(change)(folder)
            reseal_bundle(folder)
        return edit

    def out_of_range(meta: dict) -> None:  # a key the head has, outside its declared range
        meta["head"].update({"dropout": 1.5} if "dropout" in meta["head"] else {"context": -2})

    def quality_note(out: str, stem: str) -> str:
        s = json.loads((work / out / stem / f"{stem}_summary.json").read_text())["channel_quality"]
        return (f"bad channels: {', '.join(s['bad_channels']) or 'none'}; imputation_unvouched: "
                f"{(s['dead_channels'] or {}).get('imputation_unvouched')}")

    noise = edf(work / "noise.edf", CLASSES * 2, noise_only=True)
    slow = edf(work / "slow.edf", CLASSES * 2, sfreq=10.0)
    run_file = montage_file("deep-run.yaml", f"montage: {DEEP}\n")
    # A holder of an output folder's lock: another process, as a concurrent adapt or predict would be.
    held = work / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(held), "adapt"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    predicted = work / "pred-once"
    assert runner.invoke(app, predict(bundle, data / "s01.edf", "pred-once")).exit_code == 0
    # An adapt interrupted after its first evaluation, rerun with another learning rate.
    interrupted = work / "interrupted"

    def interrupt() -> list[str]:
        from passport_kit.onboard.adapt import adapt as run_adapt

        def stop(step: int, total: int, info: dict) -> None:
            if step == 5:
                raise KeyboardInterrupt

        try:
            run_adapt(montage=str(montage), data=data, out=interrupted, checkpoint="fi-tiny", batch_size=8,
                      max_steps=8, recipe="finetune", progress=stop)  # state saved after the first epoch
        except KeyboardInterrupt:
            pass
        return [*adapt[:-3], "--max-steps", "8", "--recipe", "finetune", "--lr", "1e-3", "--data", str(data),
                "--out", str(interrupted), "--no-progress"]

    cases: list[tuple[str, Callable[[], list[str]], Callable[[], str] | None]] = [
        ("fine-tune diverges (--lr 1e12 --head-lr 1e12)",
         lambda: [*adapt, "--max-steps", "10", "--lr", "1e12", "--head-lr", "1e12", "--data", str(data), "--out",
                  str(work / "lrhuge")], None),
        ("bundle with NaN tensors", lambda: predict(edited_bundle("nan", nan_weights), data / "s01.edf", "p-nan"), None),
        ("adapt into an --out another process writes", lambda: [*adapt, "--data", str(data), "--out", str(held)], None),
        ("predict into an --out another process writes", lambda: predict(bundle, data / "s01.edf", "held"), None),
        ("predict again into the same --out", lambda: predict(bundle, data / "s01.edf", "pred-once"), None),
        ("30 µV Gaussian noise", lambda: predict(bundle, noise, "p-noise"), lambda: summary_note("p-noise", "noise")),
        ("a 10 Hz recording", lambda: predict(bundle, slow, "p-slow"), lambda: summary_note("p-slow", "slow")),
        ("rerun of a finished adapt after its labels changed",
         lambda: [*adapt, "--data", str(changed), "--out", str(changed_bundle)], None),
        ("resumed adapt with another --lr", interrupt, None),
        ("montage with an alias bomb", lambda: ["montages", "show", str(montage_file("bomb.yaml", MONTAGE + BOMB))],
         None),
        ("montage nested 20,000 deep",
         lambda: ["montages", "show", str(montage_file("deep.yaml", MONTAGE + f"metadata:\n  x: {DEEP}\n"))], None),
        ("montage with a 400-digit position", lambda: ["montages", "show", str(montage_file(
            "digits.yaml", MONTAGE.replace("-80.0", "-8" + "0" * 400)))], None),
        ("montage with a position of 1e308", lambda: ["montages", "show", str(montage_file(
            "e308.yaml", MONTAGE.replace("-80.0", "-1e308")))], None),
        ("montage with two channels at one position", lambda: ["montages", "show", str(montage_file(
            "same.yaml", MONTAGE.replace("[80.0, -5.0, 10.0]", "[-80.0, -5.0, 10.0]")))], None),
        ("dataset.yaml nested 20,000 deep", lambda: ["check", "--montage", str(montage), "--data", str(deep_ds),
                                                     "--checkpoint", "fi-tiny"], None),
        ("run file nested 20,000 deep", lambda: ["adapt", "--config", str(run_file)], None),
        ("adapter.json nested 100,000 deep", lambda: predict(edited_bundle(
            "deepjson", lambda f: (f / "adapter.json").write_text("[" * 100_000 + "]" * 100_000)),
            data / "s01.edf", "p-deepjson"), None),
        ("adapter.json classes cut to 2 names", lambda: predict(edited_bundle(
            "twoclasses", json_edit(lambda m: m.update(classes=["W", "S"]))), data / "s01.edf", "p-two"), None),
        ("predict --batch-size 0", lambda: predict(bundle, data / "s01.edf", "p-b0", "--batch-size", "0"), None),
        ("check --batch-size 0", lambda: ["check", "--montage", str(montage), "--data", str(data), "--checkpoint",
                                          "fi-tiny", "--batch-size", "0"], None),
        ("--notch 0", lambda: [*adapt, "--notch", "0", "--data", str(data), "--out", str(work / "notch0")], None),
        ("labels: ../secret.txt", lambda: ["check", "--montage", str(montage), "--data", str(escape), "--checkpoint",
                                           "fi-tiny"], None),
        ("labels: a symlink out of the folder", lambda: ["check", "--montage", str(montage), "--data", str(link),
                                                         "--checkpoint", "fi-tiny"], None),
        ("labels: /dev/zero (outside paths allowed)", lambda: ["check", "--montage", str(montage), "--data",
                                                               str(devzero), "--checkpoint", "fi-tiny"], None),
        ("labels: a FIFO", lambda: ["check", "--montage", str(montage), "--data", str(fifo), "--checkpoint",
                                    "fi-tiny"], None),
        ("labels: a folder", lambda: ["check", "--montage", str(montage), "--data", str(folder_labels),
                                      "--checkpoint", "fi-tiny"], None),
        ("labels in UTF-16", lambda: ["check", "--montage", str(montage), "--data", str(utf16), "--checkpoint",
                                      "fi-tiny"], None),
        ("a 3 GiB label file", lambda: ["check", "--montage", str(montage), "--data", str(huge), "--checkpoint",
                                        "fi-tiny"], None),
        ("unknown dataset.yaml key", lambda: ["check", "--montage", str(montage), "--data", str(unknown_key),
                                              "--checkpoint", "fi-tiny"], None),
        ("one EDF under two subjects", lambda: ["check", "--montage", str(montage), "--data", str(twice),
                                                "--checkpoint", "fi-tiny"], None),
        ("a recording that is a folder", lambda: predict(bundle, _folder_recording(work), "p-folder"), None),
        ("predict --labels a 56 MiB label file",
         lambda: predict(bundle, data / "s01.edf", "p-biglabels", "--labels", str(big_labels)), None),
        ("adapter.json: seal deleted and classes reordered", lambda: predict(edited_bundle(
            "noseal", json_edit(lambda m: (m.pop("seal"), m.update(classes=m["classes"][::-1])))), data / "s01.edf",
            "p-noseal"), None),
        ("adapter.json: a head key outside its range, re-sealed", lambda: predict(edited_bundle(
            "outofrange", resealed(out_of_range)), data / "s01.edf", "p-range"), None),
        ("a channel at 1 % gain", lambda: predict(bundle, quiet, "p-quiet"), lambda: quality_note("p-quiet", "quiet")),
        ("two of three channels zeroed (probe bundle)", lambda: predict(probe, two_dead, "p-twodead"),
         lambda: quality_note("p-twodead", "twodead")),
    ]
    rows = []
    try:
        for name, argv, note in cases:
            result = runner.invoke(app, argv())
            # check lists each failing contract ([FAIL] ...) before its closing error line: show the contract.
            lines = [ln for ln in result.output.splitlines() if ln.startswith("[FAIL]")]
            lines += [ln for ln in result.output.splitlines() if ln.startswith(("error:", "warning:"))]
            shown = lines[0] if lines else (result.output.strip().splitlines() or [""])[-1]
            if result.exit_code not in (0, 2):
                shown = f"TRACEBACK: {type(result.exception).__name__}: {result.exception}"
            if note is not None and result.exit_code == 0:
                shown = note()
            rows.append((name, result.exit_code, shown[:200]))
    finally:
        holder.communicate("\n", timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    table = ["| bad input | exit | what the user sees |", "|---|---|---|"]
    table += [f"| {name} | {code} | {text.replace('|', '/')} |" for name, code, text in rows]
    counts = (f"{len(rows)} bad inputs: {sum(c == 2 for _, c, _ in rows)} exit 2 with one line, "
              f"{sum(c == 0 for _, c, _ in rows)} exit 0 with a warning or withheld statistics, "
              f"{sum(c not in (0, 2) for _, c, _ in rows)} tracebacks")
    text = "\n".join([counts, "", *table]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


def _scaled_channels(source: Path, path: Path, channels: list[int], gain: float) -> Path:
    """Return a copy of EDF ``source`` at ``path`` with ``channels`` (indices) multiplied by ``gain``."""
    recording = edfio.read_edf(source)
    for c in channels:
        recording.signals[c].update_data(recording.signals[c].data * gain)
    recording.write(path)
    return path


def _folder_recording(work: Path) -> Path:
    folder = work / "night.edf"
    folder.mkdir()
    (folder / "x.txt").write_text("not a recording\n")
    return folder


if __name__ == "__main__":
    main()
