"""BIDS datasets (``dataset_description.json``) through MNE-BIDS, labels from ``*_events.tsv``.

Every EEG recording (``sub-*/[ses-*/]eeg/*_eeg.<edf|bdf|set|vhdr|fif>``) becomes one recording
of subject ``sub``; its labels are the rows of the ``*_events.tsv`` next to it, taken from
``label_column`` (default ``trial_type``): each window gets the value of the event that covers
its midpoint. A ``dataset.yaml`` in the BIDS root may set the task, classes, label map,
``label_column`` and ``window_seconds`` (not ``recordings``: those come from BIDS).

Example ``dataset.yaml`` for the EESM ear-EEG releases (scoring in column ``staging``)::

    task: sleep-staging
    label_map: eesm
    label_column: staging
"""

from __future__ import annotations

import warnings
from pathlib import Path

import mne

from passport_kit.errors import DataError
from passport_kit.signals.dataset_spec import DatasetSpec, RecordingSpec, spec_from_dict

#: Data files MNE-BIDS reads for EEG.
BIDS_EXTENSIONS = [".edf", ".bdf", ".set", ".vhdr", ".fif"]


def discover_bids(root: Path, options: dict) -> DatasetSpec:
    """Return the spec of a BIDS dataset at ``root`` (options: the root's dataset.yaml, or {})."""
    import mne_bids

    if "recordings" in options:
        raise DataError(
            f"{root / 'dataset.yaml'}: a BIDS dataset's recordings come from BIDS; remove 'recordings' "
            f"(keep task, classes, label_map, label_column, window_seconds)"
        )
    try:
        paths = mne_bids.find_matching_paths(root, datatypes="eeg", suffixes="eeg", extensions=BIDS_EXTENSIONS)
    except Exception as exc:  # noqa: BLE001 - a malformed tree is the user's to fix
        raise DataError(f"cannot scan BIDS dataset '{root}' ({' '.join(str(exc).split())[:160]}); validate it with the BIDS validator") from None
    recordings = []
    for bp in sorted(paths, key=lambda p: str(p.fpath)):
        events = bp.copy().update(suffix="events", extension=".tsv")
        has_events = events.fpath.is_file()
        recordings.append(RecordingSpec(
            subject=f"sub-{bp.subject}",
            file=str(Path(bp.fpath).relative_to(root)),
            labels=str(Path(events.fpath).relative_to(root)) if has_events else None,
        ))
    if not recordings:
        raise DataError(f"BIDS dataset '{root}' holds no EEG recordings ({', '.join(BIDS_EXTENSIONS)} under sub-*/eeg/)")
    data = {"task": "classification", **options, "recordings": [r.model_dump() for r in recordings]}
    return spec_from_dict(data, root=root, origin="bids", source=f"BIDS dataset '{root}'")


def read_bids_recording(path: Path) -> mne.io.BaseRaw:
    """Return the recording at ``path`` inside a BIDS dataset, read by :func:`mne_bids.read_raw_bids`."""
    import mne_bids

    try:
        bids_path = mne_bids.get_bids_path_from_fname(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sidecar nits (missing optional fields) are not errors here
            return mne_bids.read_raw_bids(bids_path, verbose="error")
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file, said in one line
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise DataError(f"cannot read BIDS recording '{path}' ({reason}); check the file and its sidecars") from None
