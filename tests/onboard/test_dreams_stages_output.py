"""Real scored sleep (DREAMS excerpts 1 and 3, no REM in them) through adapt and predict (issue 58 items 1 and 2).

The two excerpts hold no REM; the adapter's own training night, predicted, may hold some (a stager shipped as it is
stages all five). What predict says it cannot output it never outputs, and a night it was trained on is never
"unlike" its training data. Skips cleanly without ../shared/data; one adapt for the module (about 20 s on 2 cores).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.realdata

ROOT = Path(__file__).resolve().parents[2]
DREAMS = ROOT.parent / "shared" / "data" / "dreams-spindles"   # as tests/conftest.py's SHARED_DATA
MONTAGE = ROOT / "benchmarks" / "montages" / "dreams-c3.yaml"


def _dataset(folder: Path) -> Path:
    """Return a dataset folder naming the DREAMS text files where they lie (R&K hypnograms, one value per 5 s)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["task: sleep-staging", "window_seconds: 30", "classes: [W, N1, N2, N3, REM]", "label_map: rk",
             "allow_outside_paths: true", "recordings:"]
    for n, sfreq in ((1, 100), (3, 50)):
        lines += [f"  - subject: excerpt{n}", f"    file: {(DREAMS / f'excerpt{n}.txt').as_posix()}",
                  f"    sfreq: {sfreq}", f"    labels: {(DREAMS / f'Hypnogram_excerpt{n}.txt').as_posix()}"]
    (folder / "dataset.yaml").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="module")
def dreams_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not DREAMS.is_dir():
        pytest.skip("../shared/data/dreams-spindles is not present on this machine")
    import warnings

    import passport_kit as pk

    root = tmp_path_factory.mktemp("dreams")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # excerpt 3 at 50 Hz: its band top lowered, as the warning says
        return pk.adapt(montage=str(MONTAGE), data=str(_dataset(root / "data")), out=str(root / "adapter")).bundle


@pytest.fixture(scope="module")
def excerpt1(dreams_bundle: Path, tmp_path_factory: pytest.TempPathFactory):
    import passport_kit as pk

    return pk.predict(dreams_bundle, [DREAMS / "excerpt1.txt"], tmp_path_factory.mktemp("p"), sfreq=100)[0]


def test_what_predict_says_it_cannot_output_it_never_outputs(excerpt1) -> None:
    summary = excerpt1.summary
    output = {c for c, n in summary["class_counts"].items() if n}
    assert not output & set(summary["classes_not_learned"])
    assert summary["classes_without_training_windows"] == ["REM"]   # the excerpts hold no REM
    # Whichever model the ladder ships: REM is either never output, or output and said to come from the stager.
    assert ("REM" in summary["classes_from_stager_alone"]) == ("REM" in output)


def test_adapt_says_what_the_model_shipped_does_with_the_class_it_had_no_windows_of(dreams_bundle: Path) -> None:
    """Issue 58: adapt warned 'will never be predicted: REM' of a stager, shipped as it is, that outputs REM."""
    from passport_kit.checkpoint import load_adapter_bundle

    model, meta = load_adapter_bundle(dreams_bundle)
    warnings = meta.metrics.warnings
    never = any(w.startswith("classes absent from the training windows will never be predicted: REM")
                for w in warnings)
    stager = any(w.startswith("classes absent from the training windows come from the sleep stager alone") and
                 "REM" in w for w in warnings)
    assert never == (meta.classes.index("REM") not in model.head.stager_classes()) and stager != never


def test_the_adapters_own_training_night_is_never_unlike_its_training_data(excerpt1) -> None:
    summary = excerpt1.summary
    assert summary["in_sample"] is True
    assert summary["distribution"]["in_sample"] is True and summary["distribution"]["outside"] is False
    assert summary["distribution"]["reason"] is None


def test_real_sleep_with_rem_is_not_unlike_sleep_after_nights_without_rem(dreams_bundle: Path) -> None:
    """The training nights' transitions (no REM in them) and a 30-min night of theirs with 5 epochs of REM in its N2:
    N2->REM, REM->REM, REM->N2 are sleep's own (issue 58: '6 of its 59 ... never occur in the training nights')."""
    from passport_kit.checkpoint import read_adapter_meta
    from passport_kit.signals.distribution import sequence_check

    profile = read_adapter_meta(dreams_bundle).metrics.distribution
    stages = profile["transitions"]["classes"]
    assert np.asarray(profile["transitions"]["counts"])[:, stages.index("REM")].sum() == 0
    night = np.full(60, stages.index("N2"))
    night[:6] = stages.index("W")
    night[30:35] = stages.index("REM")
    unseen, total, _ = sequence_check(profile, night, np.arange(60) * 30.0, 30.0)
    assert (unseen, total) == (0, 59)
