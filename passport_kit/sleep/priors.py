"""The sleep-prior interface: a pretrained stager's per-epoch log-probabilities for one recording's windows.

A prior is a class registered by its ``name`` (as channel embeddings are): it says which
channels it wants, its licence, its own sampling rate (``native_rate``), whether it can run
here (:meth:`SleepPrior.unavailable`), and gives ``(n_epochs, 5)`` log-probabilities of
:data:`STAGES` for one continuous night (:meth:`SleepPrior.night_log_proba`).
:func:`prior_log_proba` returns one row per window of a recording (``onset_s``: each window's
onset in seconds): each window gets the 30-s epoch that holds its middle.

What the stager reads (issue 55): the recording as its authors trained it, the file's own
samples of the channels the spec names (mapped, renamed, derivations and unit corrections as
the windows get them), in µV, resampled to the stager's ``native_rate`` and never band-passed,
notched or scaled by us (the stager filters itself): ``raw`` of :func:`prior_log_proba`,
:mod:`passport_kit.signals.stager_input`. ``adapt``, ``evaluate`` and ``predict`` (with or
without ``--zero-shot``) all read it so, from the same file through the same reader, so
training and prediction give the stager the very same signal.

History: until issue 55 the stager read the package's 200-Hz windows laid end to end
(:func:`night_signal`, band-passed, notch-filtered, in 100 µV), so that it saw what the
read-out's other blocks see, a recording was read once, and an in-memory recording worked the
same way. The price, measured on the hidden PSG nights of issue 55 (Cz-A1 at 50 Hz): the
product's zero-shot YASA scored kappa 0.532 where YASA on the files scored 0.542 (a recording too
slow for the 75-Hz band top reached the stager band-passed below its Nyquist frequency, 22 Hz at
50 Hz, notched, and upsampled to 200 Hz before YASA's own resampling). The windows remain the
fallback where only windows exist (a WindowSet or RecordingWindows built without its
recording: ``raw`` None), and with per-window instance normalisation they still hold
normalised amplitudes: the file does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from passport_kit.errors import ConfigError
from passport_kit.registry import Registry

#: The stages every prior scores, in this order (AASM).
STAGES: tuple[str, ...] = ("W", "N1", "N2", "N3", "REM")
#: Each probability is floored at this before its log is taken (a stager's exact zeros would be -inf).
PROBABILITY_FLOOR = 1e-4
#: Names a dataset's classes may use for each stage (case-insensitive).
_STAGE_NAMES = {"W": ("w", "wake", "awake"), "N1": ("n1", "s1"), "N2": ("n2", "s2"), "N3": ("n3", "s3", "sws"),
                "REM": ("rem", "r")}
#: Central sites, where the stagers' own training channels (C3/C4 against a mastoid) sit: MNE head frame, metres,
#: from MNE's standard_1005 template (rounded).
_CENTRAL_SITES = {"C3": (-0.0653, 0.0, 0.0604), "C4": (0.0653, 0.0, 0.0604), "Cz": (0.0, 0.0, 0.0880)}


#: Joins the names of several stagers whose log-probabilities are averaged (``"yasa+gssc"``).
ENSEMBLE_SEPARATOR = "+"


@dataclass(frozen=True)
class StagerChoice:
    """The choice of stager: which stager(s) a read-out stacks or a night is staged with, and on which montage
    channels (stored as a dict in adapter.json's head block).

    One name in the code for this value (issue 60): ``StagerChoice``, and ``stager_choice`` for a variable
    that holds one or its dict (:meth:`as_dict`). The formats keep their names: the options ``--prior`` and
    ``--prior-channels`` (``RecipeOptions.prior``), the head's ``prior`` key in adapter.json and the head's
    ``prior`` setting. "Prior" alone names the stacked block of the stager's log-probabilities (``n_prior``
    columns) and, in the night HMM, the emission prior.

    ``eeg_ref`` / ``eog_ref``: a second montage channel subtracted from ``eeg`` / ``eog`` (a derivation,
    e.g. ear to ear); None reads the channel as it is. ``name`` may join several stagers with
    :data:`ENSEMBLE_SEPARATOR`: their log-probabilities are averaged (:func:`combine_log_proba`).
    """

    name: str
    eeg: str
    eog: str | None = None
    emg: str | None = None
    eeg_ref: str | None = None
    eog_ref: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the spec as adapter.json stores it (the references only where there is one)."""
        out: dict[str, Any] = {"name": self.name, "eeg": self.eeg, "eog": self.eog, "emg": self.emg}
        out |= {k: v for k, v in (("eeg_ref", self.eeg_ref), ("eog_ref", self.eog_ref)) if v is not None}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StagerChoice:
        """Return the spec adapter.json stored."""
        return cls(str(data["name"]), str(data["eeg"]), data.get("eog"), data.get("emg"), data.get("eeg_ref"),
                   data.get("eog_ref"))

    def channels(self) -> str:
        """Return what the stager reads, as adapt and predict say it (``"EEG ELA-ERA, EOG E1"``)."""
        def one(a: str | None, ref: str | None) -> str | None:
            return None if a is None else a if ref is None else f"{a}-{ref}"

        parts = [f"{kind} {ch}" for kind, ch in (("EEG", one(self.eeg, self.eeg_ref)), ("EOG", one(self.eog, self.eog_ref)),
                                                  ("EMG", self.emg)) if ch is not None]
        return ", ".join(parts)

    def with_name(self, name: str) -> StagerChoice:
        """Return this channel choice for the prior ``name``."""
        return StagerChoice(name, self.eeg, self.eog, self.emg, self.eeg_ref, self.eog_ref)


#: The sleep priors by name, filled by subclassing :class:`SleepPrior` (the shipped plugins once
#: :func:`available_priors` or :func:`get_prior` has loaded them); an unknown name is a ConfigError naming them.
PRIORS: Registry[type[SleepPrior]] = Registry("sleep prior", unknown=ConfigError)


class SleepPrior:
    """A pretrained sleep stager used as a prior (subclass, set ``name``, implement :meth:`night_log_proba`)."""

    #: Registry key (``--prior NAME``, ``--zero-shot NAME``).
    name: ClassVar[str] = ""
    licence: ClassVar[str] = ""
    #: Where the stager comes from and its terms, as every help text that lists the stagers says it
    #: (:func:`stager_help`): ``"built in, BSD-3"``.
    origin: ClassVar[str] = ""
    #: Its place in what ``--prior auto`` tries where it runs (lower first, :func:`auto_stagers`); None: only by name.
    auto_order: ClassVar[int | None] = None
    #: Lowest rate (Hz) the stager reads; slower signals are given to it upsampled.
    min_rate: ClassVar[float] = 100.0
    #: The rate (Hz) the stager's networks or features were trained at: a recording reaches it resampled to this.
    native_rate: ClassVar[float] = 100.0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):
            PRIORS.add(cls.name, cls)

    @classmethod
    def unavailable(cls) -> str | None:
        """Return why this prior cannot run here (e.g. its package is not installed), None when it can."""
        return None

    def night_log_proba(self, eeg_uv: np.ndarray, sfreq: float, *, eog_uv: np.ndarray | None = None,
                        emg_uv: np.ndarray | None = None) -> np.ndarray:
        """Return ``(floor(T / 30 s), 5)`` log-probabilities of :data:`STAGES` for a night ``eeg_uv`` ``(T,)`` in µV."""
        raise NotImplementedError

    def stagers(self) -> list[SleepPrior]:
        """Return the stagers this prior runs, each on its own signal (itself; an average: its members)."""
        return [self]


def native_rates(prior: SleepPrior | str) -> tuple[float, ...]:
    """Return the rates (Hz) the stagers of ``prior`` (or of the prior so named: ``"yasa+gssc"``, both) read, for
    reading a recording."""
    stager = get_prior(prior) if isinstance(prior, str) else prior
    return tuple(sorted({s.native_rate for s in stager.stagers()}))


def available_priors() -> dict[str, str | None]:
    """Return ``{name: None if it can run here, else why not}`` for every registered prior."""
    _load_builtins()
    return {name: cls.unavailable() for name, cls in sorted(PRIORS.items())}


def get_prior(name: str) -> SleepPrior:
    """Return an instance of the prior ``name`` (ConfigError naming the known ones, or why it cannot run);
    ``"a+b"``: the average of several (:class:`MeanPrior`)."""
    _load_builtins()
    if ENSEMBLE_SEPARATOR in name:
        return MeanPrior([get_prior(part) for part in name.split(ENSEMBLE_SEPARATOR)])
    cls = PRIORS.lookup(name)
    reason = cls.unavailable()
    if reason is not None:
        raise ConfigError(f"sleep prior {name!r} cannot run here: {reason}")
    return cls()


class MeanPrior(SleepPrior):
    """Several stagers as one: the mean of their (floored) log-probabilities, renormalised (not registered)."""

    def __init__(self, members: list[SleepPrior]) -> None:
        self.members = members
        self.min_rate = max(m.min_rate for m in members)  # type: ignore[misc]

    def night_log_proba(self, eeg_uv: np.ndarray, sfreq: float, *, eog_uv: np.ndarray | None = None,
                        emg_uv: np.ndarray | None = None) -> np.ndarray:
        return combine_log_proba([m.night_log_proba(eeg_uv, sfreq, eog_uv=eog_uv, emg_uv=emg_uv)
                                  for m in self.members])

    def stagers(self) -> list[SleepPrior]:
        return [s for m in self.members for s in m.stagers()]


def combine_log_proba(parts: list[np.ndarray]) -> np.ndarray:
    """Return the average of several stagers' log-probabilities ``(n, 5)`` each, renormalised to log-probabilities
    (a geometric mean of their probabilities: on the hidden nights the mean of YASA and GSSC scored κ 0.604
    against 0.542 and 0.611 alone, issue 43). Nights of different lengths are cut to the shortest."""
    n = min(len(p) for p in parts)
    mean = np.mean([np.asarray(p, dtype=np.float64)[:n] for p in parts], axis=0)
    top = mean.max(axis=1, keepdims=True)
    return mean - top - np.log(np.exp(mean - top).sum(axis=1, keepdims=True))


def auto_stagers() -> list[str]:
    """Return the stagers ``--prior auto`` tries: every registered one that declares an ``auto_order`` and can run
    here, in that order (YASA built in, then GSSC where the user installed it)."""
    _load_builtins()
    ready = [cls for cls in PRIORS.values() if cls.auto_order is not None and cls.unavailable() is None]
    return [cls.name for cls in sorted(ready, key=lambda cls: (cls.auto_order, cls.name))]


def stager_help(*, quote: str = "") -> str:
    """Return the registered stagers as the help texts list them, the ``auto`` ones first in their order:
    ``yasa (built in, BSD-3) or gssc (if you installed it; AGPL-3.0)``; ``quote`` around each name."""
    _load_builtins()
    ordered = sorted(PRIORS.values(), key=lambda cls: (cls.auto_order is None, cls.auto_order or 0, cls.name))
    named = [f"{quote}{cls.name}{quote}" + (f" ({cls.origin})" if cls.origin else "") for cls in ordered]
    return ", ".join(named[:-1]) + " or " + named[-1] if len(named) > 1 else "".join(named)


def _load_builtins() -> None:
    """Import the stager modules shipped with the package: every module of :mod:`passport_kit.sleep.stagers`
    registers the stagers it defines (a new stager is one file there; GSSC's runs only where it is installed)."""
    import importlib
    import pkgutil

    from passport_kit.sleep import stagers

    for module in pkgutil.iter_modules(stagers.__path__):
        importlib.import_module(f"{stagers.__name__}.{module.name}")


def classes_to_stages(classes: list[str]) -> list[int] | None:
    """Return the :data:`STAGES` index of every class, or None when a class is not one of the five stages.

    Example::

        >>> classes_to_stages(["W", "N1", "N2", "N3", "R"])
        [0, 1, 2, 3, 4]
        >>> classes_to_stages(["rest", "task"]) is None
        True
    """
    out = []
    for c in classes:
        found = [i for i, s in enumerate(STAGES) if c.strip().lower() in _STAGE_NAMES[s]]
        if not found:
            return None
        out.append(found[0])
    return out if len(set(out)) == len(out) else None


def pick_channels(names: list[str], positions: np.ndarray, kinds: list[str]) -> StagerChoice | None:
    """Return the montage channels a stager reads: the EEG channel named after a central site (C4, C3, Cz), else the
    one nearest such a site, and the first EOG and EMG.

    ``positions`` ``(C, 3)`` in metres (MNE head frame; a bipolar channel's active electrode).
    The stagers were trained on central scalp EEG (C3/C4 against a mastoid), so the channel
    closest to C3, C4 or Cz is the one most like what they know. None without an EEG channel
    with a finite position. The name of the prior is filled in by the caller.
    """
    named = _central_by_name(names, kinds)
    if named is not None:
        first = {k: next((n for n, kk in zip(names, kinds) if kk == k), None) for k in ("eog", "emg")}
        return StagerChoice("", named, first["eog"], first["emg"])
    sites = np.asarray(list(_CENTRAL_SITES.values()))
    best, best_d = None, np.inf
    for name, pos, kind in zip(names, np.asarray(positions, dtype=float), kinds):
        if kind != "eeg" or not np.isfinite(pos).all():
            continue
        d = float(np.min(np.linalg.norm(sites - pos, axis=1)))
        if d < best_d:
            best, best_d = name, d
    if best is None:
        return None
    first = {k: next((n for n, kk in zip(names, kinds) if kk == k), None) for k in ("eog", "emg")}
    return StagerChoice("", best, first["eog"], first["emg"])


#: A derivation's two electrodes must be at least this far apart (m) to be offered: closer pairs cancel the signal.
MIN_DERIVATION_SPAN = 0.05
#: At most this many channel choices are scored zero-shot on the user's nights (each costs a stager run per night).
MAX_CHANNEL_OPTIONS = 4


def prior_channel_options(names: list[str], positions: np.ndarray, kinds: list[str]) -> list[StagerChoice]:
    """Return the channel choices a stager may read on this montage, best guess by positions first.

    1. the EEG channel nearest a central site as it is (:func:`pick_channels`; the montage's first EOG);
    2. that channel against the EEG electrode farthest from it (a mastoid-like reference, as C3-A2);
    3. the widest left-right pair (ear to ear, across the head), where it differs from 2;
    4. where the montage has no EOG channel: choice 1 with the widest pair of frontal electrodes (left minus
       right, in front of the ears) as an EOG-like channel.
    Derivations need electrodes at least :data:`MIN_DERIVATION_SPAN` apart. The name is filled in by the caller;
    ``adapt`` scores each zero-shot on the user's labelled nights and keeps the best (``--prior-channels``
    overrides).
    """
    first = pick_channels(names, positions, kinds)
    if first is None:
        return []
    pos = {n: np.asarray(p, dtype=float) for n, p, k in zip(names, positions, kinds) if k == "eeg"
           and np.isfinite(np.asarray(p, dtype=float)).all()}
    options = [first]

    def electrodes(spec: StagerChoice) -> tuple[frozenset, frozenset]:
        # A derivation and its reverse give the stager the same night with the sign flipped: one of them.
        return frozenset((spec.eeg, spec.eeg_ref)), frozenset((spec.eog, spec.eog_ref))

    def add(spec: StagerChoice) -> None:
        if electrodes(spec) not in map(electrodes, options) and len(options) < MAX_CHANNEL_OPTIONS:
            options.append(spec)

    centre = pos[first.eeg]
    far = max(pos, key=lambda n: float(np.linalg.norm(pos[n] - centre)))
    if float(np.linalg.norm(pos[far] - centre)) >= MIN_DERIVATION_SPAN:
        add(StagerChoice("", first.eeg, first.eog, first.emg, eeg_ref=far))
    pair = _widest_pair(pos, lambda p: True)
    if pair is not None:
        add(StagerChoice("", pair[0], first.eog, first.emg, eeg_ref=pair[1]))
    if first.eog is None:
        frontal = _widest_pair(pos, lambda p: p[1] > 0.03 and p[2] < 0.06)  # in front of the ears, below the vertex
        if frontal is not None:
            add(StagerChoice("", first.eeg, frontal[0], first.emg, eeg_ref=first.eeg_ref, eog_ref=frontal[1]))
    return options


def _widest_pair(pos: dict[str, np.ndarray], where: Any) -> tuple[str, str] | None:
    """Return the (left, right) electrodes farthest apart left to right (ear to ear, temple to temple) among those
    ``where`` accepts; of pairs as wide, the one farthest apart."""
    left = [n for n, p in pos.items() if p[0] < 0 and where(p)]
    right = [n for n, p in pos.items() if p[0] > 0 and where(p)]
    pairs = [(round(float(pos[b][0] - pos[a][0]), 3), float(np.linalg.norm(pos[a] - pos[b])), a, b)
             for a in left for b in right]
    if not pairs:
        return None
    _, span, a, b = max(pairs)
    return (a, b) if span >= MIN_DERIVATION_SPAN else None


def parse_prior_channels(text: str, names: list[str], kinds: list[str]) -> StagerChoice:
    """Return the channel choice ``--prior-channels`` names: ``EEG[-REF][,EOG[-REF]]`` in montage channel names.

    Example: ``ELA-ERA`` (a derivation), ``C3`` (a channel as it is), ``Fpz-M1,E1`` (EEG and EOG). A name that
    itself holds a dash (``Cz-A1``) is read as that channel. Refused, in one line each (issue 57): a channel
    less its own (``ELA-ELA``: a signal of zeros), the same channels as EEG and EOG (``ELA,ELA``), a name the
    montage lacks; a long value is cut in the message.
    """
    from passport_kit.errors import DataError

    shown = _cut(str(text))
    parts = [p.strip() for p in str(text).split(",")]
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise ConfigError(f"--prior-channels takes EEG[-REF][,EOG[-REF]] in montage channel names, got {shown}")

    def one(part: str) -> tuple[str, str | None]:
        if part in names:
            return part, None
        splits = [(part[:i], part[i + 1:]) for i, ch in enumerate(part) if ch == "-"]
        for a, b in splits:
            if a in names and a == b:
                raise ConfigError(f"--prior-channels: {_cut(part)} subtracts channel {a!r} from itself, which leaves "
                                  f"a signal of zeros for the stager; give two channels, e.g. {a}-<another channel>")
            if a in names and b in names:
                return a, b
        listed = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        raise DataError(f"--prior-channels: {_cut(part)} is neither a channel of this montage nor two of them joined "
                        f"by '-'; the montage has {listed}")

    eeg, eeg_ref = one(parts[0])
    eog, eog_ref = one(parts[1]) if len(parts) == 2 else (None, None)
    if eog is not None and {eeg, eeg_ref} == {eog, eog_ref}:
        raise ConfigError(f"--prior-channels {shown} gives the stager the same channel{'s' if eeg_ref else ''} as EEG "
                          "and as EOG; give the EOG another channel (or none: EEG alone)")
    emg = next((n for n, k in zip(names, kinds) if k == "emg"), None)
    return StagerChoice("", eeg, eog, emg, eeg_ref, eog_ref)


def _cut(text: str, limit: int = 60) -> str:
    """Return ``text`` quoted, cut to ``limit`` characters with the length said (a 100,000-character value was echoed
    whole: issue 57)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text):,} characters)"


def _central_by_name(names: list[str], kinds: list[str]) -> str | None:
    """Return the EEG channel named after a central site (C4, C3, Cz, in the order the stagers prefer; ``C4``,
    ``C4-M1``, ``EEG C4-REF`` alike), None when there is none. Names say it where templates' positions may not:
    a montage in another head frame put T8 nearer the C4 template than C4 itself."""
    import re

    for site in ("C4", "C3", "Cz"):
        for name, kind in zip(names, kinds):
            tokens = re.split(r"[\s\-_:/]+", name.strip().lower())
            if kind == "eeg" and site.lower() in tokens[:2]:
                return name
    return None


def night_signal(x: np.ndarray, onset_s: np.ndarray, channel: int, *, sfreq: float = 200.0) -> np.ndarray:
    """Return channel ``channel`` of windows ``x`` ``(N, C, P, n)`` (100 µV) laid out at their onsets, in µV.

    Gaps between windows (windows a reader dropped) are zeros; overlapping windows are written in
    order (the later one wins).
    """
    n = x.shape[2] * x.shape[3]
    starts = np.round(np.asarray(onset_s, dtype=float) * sfreq).astype(np.int64)
    out = np.zeros(int(starts.max()) + n if len(starts) else 0, dtype=np.float64)
    for k, start in enumerate(starts):
        out[start:start + n] = np.asarray(x[k, channel], dtype=np.float64).reshape(-1) * 100.0
    return out


def prior_log_proba(prior: SleepPrior, x: np.ndarray | None, onset_s: np.ndarray, names: list[str], spec: StagerChoice,
                    *, window_seconds: float, sfreq: float = 200.0, raw: Callable[[float], Any] | None = None
                    ) -> np.ndarray:
    """Return ``(N, 5)`` log-probabilities of :data:`STAGES` for the ``N`` windows of one recording.

    ``onset_s`` ``(N,)`` each window's onset from the recording's first sample, ``names`` the
    montage's channel names. ``raw(rate)``: what a stager reads of the recording at ``rate`` Hz
    (an object with ``sfreq`` and ``channel(name)`` in µV from the first sample:
    :class:`~passport_kit.signals.stager_input.StagerSignal`); each stager of ``prior`` reads it at
    its ``native_rate`` and is mapped onto the windows alone, an average of several then taken
    per window (:func:`combine_log_proba`), as ``adapt`` averages them. Without ``raw`` (a caller
    that holds only windows) the stager reads the windows ``x`` ``(N, C, P, 200)`` in 100 µV at
    ``sfreq`` laid out at their onsets (:func:`night_signal`): the fallback, not what the
    stager was trained on. The stager scores the night in 30-s epochs from the start; each
    window gets the epoch that holds its middle (30-s windows from 0: exactly one each). A window
    past the last scored epoch gets the last one's.
    """
    onsets = np.asarray(onset_s, dtype=float)
    if len(onsets) == 0:
        return np.zeros((0, len(STAGES)))
    if abs(window_seconds - 30.0) > 1e-6:
        raise ConfigError(f"sleep priors score 30-s epochs; these windows are {window_seconds:g} s")
    channels = [c for c in (spec.eeg, spec.eog, spec.emg, spec.eeg_ref, spec.eog_ref) if c is not None]
    missing = [c for c in channels if c not in names]
    if missing:
        raise ConfigError(f"the sleep prior reads channel(s) {', '.join(missing)}, which this montage lacks")
    epochs = ((onsets + window_seconds / 2) // 30.0).astype(np.int64)
    if raw is None:
        logp = _windows_log_proba(prior, x, onsets, names, spec, sfreq=sfreq)
        return logp[np.clip(epochs, 0, len(logp) - 1)]
    parts = []
    for stager in prior.stagers():
        signal = raw(stager.native_rate)
        unread = [c for c in channels if c not in signal.names]
        if unread:
            raise ConfigError(f"the sleep prior reads channel(s) {', '.join(unread)}, which are not EEG, EOG or EMG "
                              "channels of the montage; name others (--prior-channels) or give them that kind")
        read = {kind: None if ch is None else signal.channel(ch) - (signal.channel(ref) if ref is not None else 0.0)
                for kind, ch, ref in (("eeg", spec.eeg, spec.eeg_ref), ("eog", spec.eog, spec.eog_ref),
                                      ("emg", spec.emg, None))}
        logp = stager.night_log_proba(read["eeg"], signal.sfreq, eog_uv=read["eog"], emg_uv=read["emg"])
        parts.append(logp[np.clip(epochs, 0, len(logp) - 1)])
    return parts[0] if len(parts) == 1 else combine_log_proba(parts)


def _windows_log_proba(prior: SleepPrior, x: np.ndarray | None, onsets: np.ndarray, names: list[str],
                       spec: StagerChoice, *, sfreq: float) -> np.ndarray:
    """Return the stager's ``(n_epochs, 5)`` log-probabilities of windows ``x`` laid out at their ``onsets`` (the
    fallback of :func:`prior_log_proba`)."""
    if x is None:
        raise ValueError("prior_log_proba needs the windows x or the recording (raw)")
    index = {n: i for i, n in enumerate(names)}
    order = np.argsort(onsets, kind="stable")
    in_order = bool((order == np.arange(len(order))).all())  # a recording read in time order: no copy of its windows
    xs, starts = (x, onsets) if in_order else (x[order], onsets[order])

    def read(channel: str | None, ref: str | None = None) -> np.ndarray | None:
        if channel is None:
            return None
        out = night_signal(xs, starts, index[channel], sfreq=sfreq)
        return out if ref is None else out - night_signal(xs, starts, index[ref], sfreq=sfreq)

    signal = {"eeg": read(spec.eeg, spec.eeg_ref), "eog": read(spec.eog, spec.eog_ref), "emg": read(spec.emg)}
    return prior.night_log_proba(signal["eeg"], sfreq, eog_uv=signal["eog"], emg_uv=signal["emg"])


def floored_log(proba: np.ndarray) -> np.ndarray:
    """Return log-probabilities of ``proba`` ``(n, K)`` floored at :data:`PROBABILITY_FLOOR` and renormalised."""
    p = np.maximum(np.asarray(proba, dtype=np.float64), PROBABILITY_FLOOR)
    return np.log(p / p.sum(axis=1, keepdims=True))


__all__ = ["ENSEMBLE_SEPARATOR", "MAX_CHANNEL_OPTIONS", "PRIORS", "PROBABILITY_FLOOR", "STAGES", "MeanPrior",
           "SleepPrior", "StagerChoice", "auto_stagers", "available_priors", "classes_to_stages", "combine_log_proba",
           "floored_log", "get_prior", "native_rates", "night_signal", "parse_prior_channels", "pick_channels",
           "prior_channel_options", "prior_log_proba", "stager_help"]
