"""adapt and predict hand the model bit-identical windows of the same file (issue 29: one recording path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


@pytest.mark.parametrize("instance_norm", [False, True], ids=["plain", "instance-norm"])
def test_adapt_and_predict_give_the_model_the_same_windows(montage_yaml: Path, dataset: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch, instance_norm: bool) -> None:
    import passport_kit.inference.recording as recording
    from passport_kit.inference.predict import predict
    import passport_kit.onboard.run as run_module
    from passport_kit.onboard.adapt import adapt

    trained: list = []
    load_dataset = run_module.load_dataset
    monkeypatch.setattr(run_module, "load_dataset", lambda *a, **k: trained.append(load_dataset(*a, **k)) or trained[-1])
    out = tmp_path / "adapter"
    adapt(montage=str(montage_yaml), data=dataset, out=out, checkpoint="tiny-mlp", recipe="finetune", max_steps=1,
          batch_size=8, instance_norm=instance_norm)
    (windows,) = trained

    given: list[np.ndarray] = []
    predict_proba = recording.predict_proba
    monkeypatch.setattr(recording, "predict_proba",
                        lambda model, x, *a, **k: given.append(np.array(x)) or predict_proba(model, x, *a, **k))
    predict(out, [dataset / "s02.edf"], tmp_path / "pred")

    rows = np.array([Path(r).name == "s02.edf" for r in windows.recording])
    assert rows.any() and len(given) == 1
    assert given[0].dtype == windows.x.dtype == np.float32
    np.testing.assert_array_equal(given[0], windows.x[rows])  # bit for bit, not close
