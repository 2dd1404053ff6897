"""One run pipeline (issue 17): adapt and check read every recording once (issue 20), counted at MNE's EDF
reader; adapt builds its model as evaluate does."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import make_dataset


@pytest.mark.parametrize("recipe", [{}, {"max_steps": 2, "batch_size": 8}], ids=["probe", "finetune"])
def test_adapt_reads_each_recording_once(tmp_path: Path, montage_yaml: Path, checkpoint: str, reads: Counter,
                                         recipe: dict) -> None:
    from passport_kit.onboard.adapt import adapt

    data = make_dataset(tmp_path / "data", n_subjects=3, n_epochs=6)
    recordings = {f"s{i:02d}.edf" for i in (1, 2, 3)}
    # Default contact options (distrust, uncorrelated) need the raw recordings' quality scores,
    # and dataset.yaml sets no h_freq, so the band is fitted to the recordings' rates (headers).
    result = adapt(montage=str(montage_yaml), data=data, out=tmp_path / "first", checkpoint=checkpoint, **recipe)
    assert result.metrics.poor_contacts.distrusted is not None
    assert reads == Counter({name: 1 for name in recordings})
    # Windows from the cache now: the one read left is the quality scores'.
    reads.clear()
    adapt(montage=str(montage_yaml), data=data, out=tmp_path / "second", checkpoint=checkpoint, **recipe)
    assert reads == Counter({name: 1 for name in recordings})


def test_evaluate_reads_each_recording_once_for_two_checkpoints_of_one_contract(
        tmp_path: Path, montage_yaml: Path, reads: Counter) -> None:
    from passport_kit.onboard.evaluate import evaluate

    data = make_dataset(tmp_path / "data", n_subjects=3, n_epochs=6)
    evaluate(montage=str(montage_yaml), data=data, out=tmp_path / "eval", checkpoints=("tiny-mlp", "tiny-acpe"),
             test_subjects=("s01",))
    assert reads == Counter({f"s{i:02d}.edf": 1 for i in (1, 2, 3)})


def test_check_reads_each_recording_once(tmp_path: Path, montage_yaml: Path, checkpoint: str, reads: Counter) -> None:
    from passport_kit.onboard.check import check

    data = make_dataset(tmp_path / "data", n_subjects=3, n_epochs=6)
    check(str(montage_yaml), data, checkpoint)
    assert reads == Counter({f"s{i:02d}.edf": 1 for i in (1, 2, 3)})


def test_adapt_adds_channel_id_rows_for_unseen_channels(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                        make_tiny_checkpoint) -> None:
    # adapt and evaluate build their model the same way (train_once): a channel-id base that has
    # never seen the montage's channels gets rows for them, and predict finds them in the bundle.
    from passport_kit.checkpoint import load_adapter_bundle
    from passport_kit.inference.predict import predict
    from passport_kit.onboard.adapt import adapt

    name = make_tiny_checkpoint("tiny-channel-id", "channel-id")

    result = adapt(montage=str(montage_yaml), data=dataset, out=tmp_path / "bundle", checkpoint=name, max_steps=2,
                   batch_size=8)
    model, meta = load_adapter_bundle(result.bundle)
    assert meta.model.channel_vocab == ["EL1", "ER1", "EL2"]
    assert len(predict(result.bundle, dataset / "s01.edf", tmp_path / "pred")) == 1


@pytest.mark.parametrize("train", ["head", "adapter"])
def test_channel_id_bundle_predicts_what_adapt_fitted(tmp_path: Path, montage_yaml: Path, dataset: Path,
                                                      make_tiny_checkpoint, monkeypatch: pytest.MonkeyPatch,
                                                      train: str) -> None:
    # Under --train head the rows drawn for unseen channels are not trained, yet the bundle must
    # store them: each load used to draw other rows, and other probabilities (issue 17).
    import copy

    import numpy as np

    import passport_kit.checkpoint as checkpoint
    import passport_kit.inference.recording as recording
    from passport_kit.inference.predict import predict
    from passport_kit.onboard.adapt import adapt

    fitted = {}
    save = checkpoint.save_adapter_bundle

    def keep_fitted(classifier, *args, **kwargs):
        fitted["model"] = copy.deepcopy(classifier)  # the model at the end of adapt
        return save(classifier, *args, **kwargs)

    probabilities, of_fitted = [], []
    predict_proba = recording.predict_proba

    def record(model, *args, **kwargs):
        of_fitted.append(predict_proba(fitted["model"], *args, **kwargs))
        probabilities.append(predict_proba(model, *args, **kwargs))
        return probabilities[-1]

    monkeypatch.setattr(checkpoint, "save_adapter_bundle", keep_fitted)
    monkeypatch.setattr(recording, "predict_proba", record)
    name = make_tiny_checkpoint(f"tiny-channel-id-{train}", "channel-id")  # a name of its own: the home is shared
    result = adapt(montage=str(montage_yaml), data=dataset, out=tmp_path / "bundle", checkpoint=name, train=train)
    for run in ("first", "second"):  # each loads the bundle afresh
        predict(result.bundle, dataset / "s01.edf", tmp_path / run)
    assert len(probabilities) == 2
    np.testing.assert_array_equal(probabilities[0], probabilities[1])
    np.testing.assert_array_equal(probabilities[0], of_fitted[0])
