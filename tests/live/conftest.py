"""Fixtures for live staging: liblsl kept on this machine, a real LSL stream, a tiny onboarded adapter, short nights.

liblsl reads its configuration once, when it is first used: ``LSLAPICFG`` is set here, at
import time, to a machine-scope configuration (:mod:`passport_kit.live.lsl_scope`), so no
discovery packet of these tests leaves the loopback interface. The tests that need a stream
skip cleanly where LSL cannot open a socket (the ``lsl`` fixture).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from passport_kit.live.lsl_scope import CONFIG_VARIABLE, write_machine_scope_config

_CONFIG = write_machine_scope_config(Path(tempfile.mkdtemp(prefix="passport-kit-lsl-")) / "lsl_api.cfg")
os.environ[CONFIG_VARIABLE] = str(_CONFIG)

CHANNELS = ["EL1", "ER1", "EL2"]


@pytest.fixture(scope="session")
def lsl() -> None:
    """Skip unless an LSL outlet and inlet can talk on this machine (a socket may be refused in a sandbox)."""
    import numpy as np

    try:
        from mne_lsl.lsl import StreamInfo, StreamInlet, StreamOutlet, resolve_streams
    except Exception as exc:  # noqa: BLE001 - a missing or broken liblsl is a skip, whatever it raises
        pytest.skip(f"mne-lsl cannot load liblsl here: {exc}")
    try:
        outlet = StreamOutlet(StreamInfo("passport-kit-probe", "EEG", 1, 10.0, "float64", "passport-kit-probe"))
        found = resolve_streams(timeout=5.0, name="passport-kit-probe")
        if not found:
            pytest.skip("LSL cannot resolve a stream on this machine (no socket)")
        inlet = StreamInlet(found[0])
        inlet.open_stream(timeout=5.0)
        outlet.push_chunk(np.zeros((5, 1)))
        data, _ = inlet.pull_chunk(timeout=5.0)
        inlet.close_stream()
        del outlet
    except Exception as exc:  # noqa: BLE001 - no socket, no loopback: skipped, not failed
        pytest.skip(f"LSL cannot open a socket here: {exc}")


@pytest.fixture(scope="session")
def live_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PASSPORT_KIT_HOME holding the tiny base checkpoint the adapter is built on."""
    from tests.onboard.conftest import save_tiny_checkpoint

    home = tmp_path_factory.mktemp("live_home")
    previous = os.environ.get("PASSPORT_KIT_HOME")
    os.environ["PASSPORT_KIT_HOME"] = str(home)
    try:
        save_tiny_checkpoint("tiny-mlp")
    finally:
        os.environ["PASSPORT_KIT_HOME"] = previous or ""
    return home


@pytest.fixture(autouse=True)
def _live_home(live_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PASSPORT_KIT_HOME", str(live_home))
    return live_home


@pytest.fixture(scope="session")
def montage_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.onboard.conftest import TINY_MONTAGE

    path = tmp_path_factory.mktemp("montage") / "tiny-ear.yaml"
    path.write_text(TINY_MONTAGE)
    return path


@pytest.fixture(scope="session")
def onboarded(live_home: Path, montage_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An adapter bundle onboarded (3 steps) onto 'tiny-mlp' from a tiny labelled dataset of the tiny ear montage."""
    from passport_kit.onboard.adapt import adapt
    from tests.onboard.conftest import make_dataset

    previous = os.environ.get("PASSPORT_KIT_HOME")
    os.environ["PASSPORT_KIT_HOME"] = str(live_home)
    try:
        data = make_dataset(tmp_path_factory.mktemp("data") / "tiny")
        out = tmp_path_factory.mktemp("bundle") / "adapter"
        adapt(montage=str(montage_file), data=data, out=out, checkpoint="tiny-mlp", max_steps=3, batch_size=8)
    finally:
        os.environ["PASSPORT_KIT_HOME"] = previous or ""
    return out


def night(path: Path, n_epochs: int, *, seed: int = 7) -> Path:
    """Write a night of ``n_epochs`` 30-s epochs of the tiny ear montage (stages in runs of 6 epochs), 200 Hz EDF."""
    from tests.onboard.conftest import CLASSES, write_recording

    labels = [CLASSES[(i // 6) % len(CLASSES)] for i in range(n_epochs)]
    return write_recording(path, labels, CHANNELS, seed=seed)


@pytest.fixture(scope="session")
def short_night(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 6-minute night (12 epochs)."""
    return night(tmp_path_factory.mktemp("night") / "short.edf", 12)


class Replay:
    """A recording played as an LSL stream in a thread (:func:`passport_kit.live.replay.replay`)."""

    def __init__(self, raw, name: str, **plan) -> None:  # noqa: ANN001 - an MNE Raw
        from passport_kit.live.replay import ReplayPlan, replay

        self.thread = threading.Thread(target=replay, args=(raw, name),
                                       kwargs={"source_id": name, "plan": ReplayPlan(**plan)}, daemon=True)
        self.thread.start()

    def join(self) -> None:
        self.thread.join(timeout=120)


@pytest.fixture
def replayed() -> Iterator:
    """Return ``play(raw, name, **plan)`` starting a replay; every replay started is joined after the test."""
    started: list[Replay] = []

    def play(raw, name: str, **plan) -> Replay:  # noqa: ANN001
        started.append(Replay(raw, name, **plan))
        return started[-1]

    yield play
    for r in started:
        r.join()
