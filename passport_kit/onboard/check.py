"""``check``: push one real batch through every contract before anyone spends hours training.

Contracts checked, in data-flow order (a failure stops the checks that depend on it):

1. **montage**: resolves; every channel has a position when the embedding needs positions.
2. **checkpoint**: loads strictly with its SHA-256 verified; its preprocessing contract.
3. **channels**: every recording maps onto the montage (names, aliases, bipolar derivations).
4. **sampling & shapes**: windows are ``(N, C, P, 200)`` with C = montage channels and
   P = window seconds at 200 Hz.
5. **amplitude**: the raw scale against the checkpoint's expectation: CBraMod-style
   backbones were pretrained on µV/100 (CBraMod: windows under 100 µV; a passport-kit
   checkpoint records its own limit), so typical EEG has a window standard deviation of a few
   to a few tens of µV. A median far outside 0.5–200 µV means a unit problem (volts stored as
   µV, or the reverse).
6. **quality flags**: NaN / flat / clipped / over-limit windows, and channels flagged in most
   windows (poor contact).
7. **channel quality**: every channel of every recording scored from its windows
   (:mod:`passport_kit.signals.quality`: flat, variance against the other channels,
   correlation with neighbours); bad channels are listed per recording (a warning: adapt can
   still run, see ``adapt --quality-gate`` and ``predict --mask-bad-channels``).
8. **labels**: labeled windows per class and per subject (empty classes, too few subjects
   for a subject-disjoint validation split).
   **recording metadata**: where each recording holds one class (rest vs task), the headers'
   sampling rate, prefilters and units must not differ between classes, within a subject or
   across the dataset: a model learns such a difference instead of the task (eegmat subjects
   08, 10, 11: LP 45 Hz vs LP 250 Hz between rest and arithmetic). Prefilters outside the
   band-pass that preprocessing applies do not count.
9. **forward/backward**: one batch through the classifier under the ``adapter`` policy:
   logits ``(B, n_classes)`` finite, and every trainable tensor receives a finite gradient
   (the mixture adapter sits *before* the frozen backbone, so its gradient must cross it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from passport_kit.checkpoint import DEFAULT_CHECKPOINT
from passport_kit.errors import ConfigError, DataError, PassportError, PassportWarning
from passport_kit.onboard.confounds import header_confound, recording_classes
from passport_kit.wording import counted

Status = Literal["ok", "warn", "fail"]
_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}

#: Window standard deviation (µV) outside which the amplitude scale looks wrong.
STD_RANGE_UV = (0.5, 200.0)
#: The amplitude bound of CBraMod pretraining windows (µV), assumed when a checkpoint records none.
PRETRAIN_LIMIT_UV = 100.0


@dataclass
class CheckItem:
    """One contract's verdict."""

    name: str
    status: Status
    detail: str


@dataclass
class CheckReport:
    """Every verdict of a check run; ``render()`` gives the printed report."""

    items: list[CheckItem] = field(default_factory=list)

    def add(self, name: str, status: Status, detail: str) -> None:
        """Record one verdict."""
        self.items.append(CheckItem(name, status, detail))

    @property
    def failures(self) -> list[CheckItem]:
        """Return the failing contracts."""
        return [i for i in self.items if i.status == "fail"]

    def render(self) -> str:
        """Return the report, one line per contract."""
        lines = [f"[{_MARK[i.status]}] {i.name}: {i.detail}" for i in self.items]
        n_warn = sum(i.status == "warn" for i in self.items)
        verdict = "FAILED" if self.failures else "passed"
        lines.append(f"check {verdict}: {counted(len(self.items), 'contract')}, {len(self.failures)} failing, "
                     f"{counted(n_warn, 'warning')}")
        return "\n".join(lines)

    def raise_for_failures(self) -> None:
        """Raise DataError naming the failing contracts, if any."""
        if self.failures:
            names = ", ".join(i.name for i in self.failures)
            raise DataError(f"check failed for: {names}; fix these before running adapt (details above)")


def _guard(report: CheckReport, name: str, fn: Callable[[], Any]) -> Any:
    """Return ``fn()``; on a user error record a failure under ``name`` (a label file's: under ``labels``, issue 57:
    a NaN label was reported under the channels check) and return None."""
    from passport_kit.errors import LabelError

    try:
        return fn()
    except PassportError as exc:
        report.add("labels" if isinstance(exc, LabelError) else name, "fail", str(exc))
        return None


def check(
    montage: str,
    data: str | Path,
    checkpoint: str = DEFAULT_CHECKPOINT,
    *,
    instance_norm: bool | None = None,
    notch_freq: float | None | str = 50.0,
    batch_size: int = 8,
    h_freq: float | None = None,
    l_freq: float | None = None,
) -> CheckReport:
    """Return the report of every contract between a montage, a dataset and a base checkpoint.

    ``h_freq``/``l_freq``: the band-pass top and bottom in Hz (None: dataset.yaml's, else the checkpoint's), as adapt.
    """
    if batch_size < 1:  # issue 28: a batch of 0 windows crashed in the model
        raise ConfigError(f"batch_size (--batch-size) must be at least 1, got {batch_size}")
    return _Check(montage, data, checkpoint, instance_norm, notch_freq, batch_size, h_freq, l_freq).run()


@dataclass
class _Check:
    """One check run: its options, what each step read for the next, and the report the steps fill."""

    montage: str
    data: str | Path
    checkpoint: str
    instance_norm: bool | None
    notch_freq: float | None | str
    batch_size: int
    h_freq: float | None
    l_freq: float | None
    report: CheckReport = field(default_factory=CheckReport)
    #: Filled by the steps, in order: the montage, the base (backbone, info), the dataset spec and its reader, the
    #: preprocessing, the headers and the recordings without labels (None: not readable), the windows, the batch.
    mont: Any = None
    base: Any = None
    spec: Any = None
    reader: Any = None
    preprocess: Any = None
    headers: dict[str, dict[str, Any]] | None = None
    unlabelled: str | None = None
    windows: Any = None
    batch: Any = None

    def run(self) -> CheckReport:
        """Return the report after the steps in data-flow order; a step that fails stops those that depend on it."""
        steps = (self._montage_and_checkpoint, self._preprocessing, self._headers, self._windows, self._shapes,
                 self._amplitude, self._flags, self._labels, self._forward_backward, self._probe_read_out)
        for step in steps:
            if step() is False:
                break
        return self.report

    def _montage_and_checkpoint(self) -> bool:
        """Resolve the montage and load the base; the montage's positions against what its embedding reads."""
        from passport_kit.checkpoint import load_base_checkpoint
        from passport_kit.model.config import EMBEDDINGS
        from passport_kit.montage import resolve_montage

        report = self.report
        mont = self.mont = _guard(report, "montage", lambda: resolve_montage(self.montage))
        if mont is None:
            return False
        self.base = _guard(report, "checkpoint", lambda: load_base_checkpoint(self.checkpoint))
        if self.base is None:
            return False
        info = self.base[1]
        kind = info.model.embedding
        missing_pos = [c.name for c, p in zip(mont.channels, mont.positions) if not np.isfinite(p).all()]
        if missing_pos and EMBEDDINGS[kind].positions:
            report.add("montage", "fail", f"the {kind} embedding needs positions; {missing_pos} have none")
        else:
            report.add("montage", "ok", f"'{mont.name}': {counted(len(mont.channels), 'channel')} "
                       f"({', '.join(mont.ch_names[:6])}{'...' if len(mont.channels) > 6 else ''}), "
                       f"hash {mont.content_hash[:12]}")
        report.add("checkpoint", "ok", f"'{info.name}': {info.model.arch}, {kind} embedding, "
                   f"{info.n_parameters:,} parameters, SHA-256 {info.weights_sha256[:12]} verified")
        return True

    def _preprocessing(self) -> bool:
        """Parse the spec once and fit adapt's preprocessing to it; its warnings become report lines."""
        from passport_kit.signals.dataset import RecordingReader
        from passport_kit.signals.dataset_spec import load_dataset_spec
        from passport_kit.signals.recording import with_high_pass
        from passport_kit.onboard.run import dataset_preprocess

        # The spec is parsed once and each recording opened once (its header for the rate, then its samples).
        spec = self.spec = _guard(self.report, "preprocessing", lambda: load_dataset_spec(Path(self.data)))
        if spec is None:
            return False
        reader = self.reader = RecordingReader(spec)
        with warnings.catch_warnings(record=True) as caught:
            # Said in the report instead (a lowered band-pass top in 'sampling & shapes', below), not twice.
            warnings.simplefilter("always", PassportWarning)
            preprocess = self.preprocess = _guard(self.report, "preprocessing", lambda: with_high_pass(
                dataset_preprocess(self.base[1], spec, instance_norm=self.instance_norm, notch_freq=self.notch_freq,
                                   h_freq=self.h_freq, reader=reader), self.l_freq, spec))
        if preprocess is None:
            return False
        for w in caught:
            if not issubclass(w.category, PassportWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            elif str(w.message) != preprocess.h_freq_note:
                self.report.add("preprocessing", "warn", str(w.message))
        return True

    def _headers(self) -> None:
        """Read the headers and the recordings without labels before the windows, while the recordings are open.

        A recording that cannot be opened is reported once, by the channels step, not here too.
        """
        from passport_kit.signals.dataset import missing_labels

        try:
            self.headers = {rec.file: self.reader.header(rec, self.mont) for rec in self.spec.recordings}
        except PassportError:
            self.headers = None
        try:  # from the spec and the headers just read: adapt's own words, before the windows are read
            self.unlabelled = missing_labels(self.spec, self.reader)
        except PassportError:
            self.unlabelled = None

    def _windows(self) -> bool:
        """Read every recording's windows onto the montage, without instance normalisation (the raw scale is
        checked; the batch below is normalised as adapt would)."""
        from passport_kit.signals import load_dataset

        raw_config = self.preprocess.model_copy(update={"instance_norm": False})
        mont = self.mont
        windows = self.windows = _guard(self.report, "channels",
                                        lambda: load_dataset(self.spec, mont, raw_config, reader=self.reader))
        if windows is None:
            return False
        n_rec = len(set(windows.recording.tolist()))
        self.report.add("channels", "ok", f"{counted(n_rec, 'recording')} map{'s' if n_rec == 1 else ''} onto "
                                          f"'{mont.name}' ({counted(len(mont.channels), 'channel')} each)")
        return True

    def _shapes(self) -> None:
        """The windows' shape against the montage and the window length, and the preprocessing that made them."""
        preprocess = self.preprocess
        n, c, p, s = self.windows.x.shape
        expected = (len(self.mont.channels), int(preprocess.window_seconds), 200)
        if (c, p, s) != expected:
            self.report.add("sampling & shapes", "fail", f"windows are {(n, c, p, s)}, expected (N, {expected[0]}, "
                            f"{expected[1]}, {expected[2]})")
        else:
            self.report.add("sampling & shapes", "warn" if preprocess.h_freq_note else "ok",
                            f"{n} windows of shape ({c}, {p}, {s}) = {p} s at {preprocess.sfreq:g} Hz; band-pass "
                            f"{preprocess.l_freq:g}-{preprocess.h_freq:g} Hz, {_notch_words(preprocess)}, "
                            f"instance norm {'on' if preprocess.instance_norm else 'off'}"
                            + (f"; {preprocess.h_freq_note}" if preprocess.h_freq_note else ""))

    def _amplitude(self) -> None:
        """The raw amplitude of a sample of windows against the scale the base was pretrained on."""
        preprocess, x = self.preprocess, self.windows.x
        n = x.shape[0]
        sample = np.asarray(x[np.linspace(0, n - 1, min(n, 256)).astype(int)], dtype=np.float64)
        std_uv = sample.std(axis=(2, 3)) * preprocess.scale_uv  # (n_sample, C)
        peak_uv = np.abs(sample).max(axis=(2, 3)) * preprocess.scale_uv
        med = float(np.median(std_uv))
        limit = pretraining_limit_uv(self.base[1])
        over = float(np.mean(peak_uv.max(axis=1) > (limit or PRETRAIN_LIMIT_UV)))
        detail = (f"median window SD {med:.1f} µV, {100 * over:.0f}% of windows peak above "
                  f"{limit or PRETRAIN_LIMIT_UV:g} µV " + (f"(pretraining kept windows under {limit:g} µV)" if limit else
                                                          "(this checkpoint was pretrained without an amplitude limit)"))
        if not STD_RANGE_UV[0] <= med <= STD_RANGE_UV[1]:
            hint = "volts read as µV?" if med < STD_RANGE_UV[0] else "µV read as volts, or heavy artefacts?"
            self.report.add("amplitude", "warn", f"{detail}; expected {STD_RANGE_UV[0]:g}-{STD_RANGE_UV[1]:g} µV "
                            f"({hint}) - check the unit in the recording header"
                            + ("" if preprocess.instance_norm else ", or use --instance-norm"))
        else:
            self.report.add("amplitude", "warn" if limit and over > 0.5 else "ok", detail)

    def _flags(self) -> None:
        """The windows' quality flags, and the channels flagged in most windows."""
        from passport_kit.signals.windows import FLAG_NAMES

        flags = np.asarray(self.windows.flags)
        counts = {name: int(np.count_nonzero((flags & bit).any(axis=1))) for bit, name in FLAG_NAMES.items()}
        bad_channels = [self.mont.ch_names[i] for i in range(flags.shape[1]) if np.mean(flags[:, i] != 0) > 0.5]
        flagged = float(np.mean(flags.any(axis=1)))
        text = ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "none"
        status: Status = "warn" if flagged > 0.05 or bad_channels else "ok"
        self.report.add("quality flags", status, f"{100 * flagged:.1f}% of windows flagged ({text})"
                        + (f"; channels flagged in most windows (poor contact?): {bad_channels}"
                           if bad_channels else ""))

    def _labels(self) -> bool:
        """Each channel's quality, the labels (the steps after need labeled windows) and the recordings' metadata."""
        _check_quality(self.report, self.windows)
        if not _check_labels(self.report, self.windows, self.unlabelled):
            return False
        if self.headers is not None:
            _check_metadata(self.report, self.windows, self.spec, self.headers, self.preprocess)
        return True

    def _forward_backward(self) -> bool:
        """One batch of labeled windows through the classifier under the ``adapter`` policy, and back."""
        import torch

        from passport_kit.model import ChannelMeta
        from passport_kit.signals.windows import instance_normalise
        from passport_kit.onboard.run import build_classifier

        windows = self.windows
        labeled = np.flatnonzero(windows.y >= 0)
        pick = labeled[np.linspace(0, len(labeled) - 1, min(self.batch_size, len(labeled))).astype(int)]
        xb = np.array(windows.x[pick], dtype=np.float32)
        if self.preprocess.instance_norm:
            xb = instance_normalise(xb)
        self.batch = xb
        try:
            model = build_classifier(self.base[0], len(windows.classes), "adapter")
            model.train()
            logits = model(torch.from_numpy(xb), ChannelMeta.from_montage(self.mont))
            loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(windows.y[pick]))
            loss.backward()
        except PassportError as exc:
            self.report.add("forward/backward", "fail", str(exc))
            return False
        no_grad = [name for name, prm in model.named_parameters()
                   if prm.requires_grad and (prm.grad is None or not torch.isfinite(prm.grad).all())]
        zero = [name for name, prm in model.named_parameters()
                if prm.requires_grad and prm.grad is not None and float(prm.grad.abs().sum()) == 0.0]
        n_train = sum(prm.numel() for prm in model.parameters() if prm.requires_grad)
        if tuple(logits.shape) != (len(pick), len(windows.classes)) or not torch.isfinite(logits).all():
            self.report.add("forward/backward", "fail", f"logits {tuple(logits.shape)} (finite: "
                            f"{bool(torch.isfinite(logits).all())}), expected ({len(pick)}, {len(windows.classes)})")
        elif no_grad:
            self.report.add("forward/backward", "fail", f"no finite gradient for {no_grad[:4]}")
        else:
            self.report.add("forward/backward", "warn" if zero else "ok",
                            f"batch {tuple(xb.shape)} -> logits {tuple(logits.shape)}, loss {loss.item():.3f}; "
                            f"{n_train:,} trainable parameters get gradients"
                            + (f" (zero gradient: {zero[:3]})" if zero else ""))
        return True

    def _probe_read_out(self) -> None:
        """The same batch through the probe recipe's read-out: pooled features and band powers, finite."""
        import torch

        from passport_kit.model import ChannelMeta
        from passport_kit.onboard.run import build_classifier

        # The default recipe (probe) reads pooled features and band powers instead: check them too.
        probe = build_classifier(self.base[0], len(self.windows.classes), "adapter", recipe="probe",
                                 n_channels=len(self.mont.channels))
        with torch.no_grad():
            z = probe.read_out_features(torch.from_numpy(self.batch), ChannelMeta.from_montage(self.mont))
        finite = bool(torch.isfinite(z).all())
        self.report.add("probe read-out", "ok" if finite else "fail",
                        f"batch -> read-out inputs {tuple(z.shape)} (pooled features + band powers)"
                        + ("" if finite else ": not finite; check the recordings for flat or NaN channels"))


def pretraining_limit_uv(info: Any) -> float | None:
    """Return the amplitude limit (µV) the checkpoint's pretraining windows obeyed, if any.

    Checkpoints written by ``pretrain`` record their preprocessing under
    ``training.preprocess``; an imported CBraMod release follows CBraMod's 100 µV rule.
    """
    recorded = dict(getattr(info, "training", {}) or {}).get("preprocess")
    if isinstance(recorded, dict) and "amplitude_limit_uv" in recorded:
        value = recorded["amplitude_limit_uv"]
        return float(value) if value is not None else None
    return PRETRAIN_LIMIT_UV


def _check_quality(report: CheckReport, windows: Any) -> None:
    """Record the channel-quality verdict: bad channels per recording (from the windows, before normalisation)."""
    from passport_kit.signals.quality import quality_line
    from passport_kit.onboard.run import dataset_quality

    summary = dataset_quality(windows)
    bad = any(entry["bad_channels"] for entry in summary.values())
    line = quality_line(summary).removeprefix("channel quality: ")
    report.add("channel quality", "warn" if bad else "ok", line + (
        " - by default adapt and predict distrust such channels and mask the windows where one shares nothing"
        " with its neighbours; inspect them with `passport-kit data quality`" if bad else ""))


def _check_metadata(report: CheckReport, windows: Any, spec: Any, headers: dict[str, dict[str, Any]],
                    preprocess: Any) -> None:
    """Record whether the recordings' headers (rate, prefilters, units) differ between classes."""
    classes = recording_classes(windows)
    if len(set(classes.values())) < 2:
        report.add("recording metadata", "ok", "classes vary within recordings; no header to compare between them")
        return
    confound = header_confound(windows, spec, headers, preprocess)
    if confound is None:
        report.add("recording metadata", "ok", f"sampling rate, prefilters and units agree between classes "
                   f"({len(classes)} one-class recordings)")
        return
    report.add("recording metadata", "warn", confound)


def _notch_words(preprocess: Any) -> str:
    """Return the notch as the report lists it: 'notch 50 Hz', 'notch off', or off because the band stops below it."""
    if preprocess.notch_freq is None:
        return "notch off"
    if preprocess.notch_freq >= preprocess.h_freq:
        # The band-pass already removes the mains frequency: a notch there changes nothing worth listing.
        return f"no notch needed ({preprocess.notch_freq:g} Hz mains lies above the band's top)"
    return f"notch {preprocess.notch_freq:g} Hz"


def _check_labels(report: CheckReport, windows: Any, unlabelled: str | None = None) -> bool:
    """Record the label-coverage verdict; return whether training can use the labels at all.

    ``unlabelled``: :func:`~passport_kit.signals.dataset.missing_labels`' line when the data set gives no labels.
    """
    counts = windows.class_counts()
    total = sum(counts.values())
    if total == 0:
        report.add("labels", "fail", unlabelled or "no labeled windows; point labels: in dataset.yaml at the "
                   "hypnograms/labels")
        return False
    subjects = sorted({str(s) for s in windows.subject[windows.y >= 0].tolist()})
    empty = [k for k, v in counts.items() if v == 0]
    rare = [k for k, v in counts.items() if 0 < v < 0.01 * total]
    problems = []
    if empty:
        problems.append(f"classes without windows: {empty}")
    if rare:
        problems.append(f"classes under 1%: {rare}")
    if len(subjects) < 3:
        problems.append(f"only {len(subjects)} labeled subject(s): a subject-disjoint validation split needs 3+")
    dist = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in counts.items())
    report.add("labels", "warn" if problems else "ok",
               f"{counted(total, 'labeled window')} from {counted(len(subjects), 'subject')} ({dist})"
               + ("; " + "; ".join(problems) if problems else ""))
    return True
