"""The rows a batch tensor was read from (issue 47): noted by both batch makers, dropped when they no longer hold."""

from __future__ import annotations

import numpy as np
import torch

from passport_kit.engine.batch_rows import note, rows_of
from passport_kit.engine.forward import _batches
from passport_kit.onboard.finetune import FinetuneSettings, _training_batch
from passport_kit.onboard.fitting import FitData
from tests.onboard.test_lpft import _meta


def _windows(n: int = 6, c: int = 3) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, c, 2, 200)).astype(np.float32)


def test_rows_hold_for_the_same_array_while_the_tensor_is_unchanged() -> None:
    x = _windows()
    xb = note(torch.from_numpy(x[[4, 1]].copy()), x, np.array([4, 1]))
    assert rows_of(xb, x).tolist() == [4, 1]
    assert rows_of(xb, x.copy()) is None               # another array, however equal
    assert rows_of(torch.from_numpy(x[[4, 1]]), x) is None  # nothing noted
    assert rows_of(xb + 0, x) is None                  # an operation's result is a new tensor
    xb[0, 0, 0, 0] += 1.0                               # changed in place: the rows no longer hold
    assert rows_of(xb, x) is None


def test_an_inference_batch_keeps_its_rows() -> None:
    x = _windows()
    with torch.inference_mode():
        xb = note(torch.from_numpy(x[[2]].copy()), x, np.array([2]))
    assert xb.is_inference() and rows_of(xb, x).tolist() == [2]


def test_the_inference_batch_maker_notes_its_rows() -> None:
    x = _windows()
    model = torch.nn.Linear(1, 1)
    seen = [rows_of(xb, x).tolist() for xb, _, _ in _batches(model, x, _meta(3), np.array([5, 0, 3]), batch_size=2,
                                                             device=torch.device("cpu"), precision="fp32",
                                                             channel_mask=None, distrust=None, gate=False)]
    assert seen == [[5, 0], [3]]


def test_a_training_batch_is_noted_unless_given_synthetic_faults() -> None:
    x = _windows()
    data = FitData(x, np.zeros(len(x), dtype=np.int64), _meta(3), ["a"])
    idx = np.array([0, 2, 5])
    plain, _, _ = _training_batch(data, idx, 0, FinetuneSettings(), torch.device("cpu"))
    assert rows_of(plain, x).tolist() == [0, 2, 5]
    faulty, _, _ = _training_batch(data, idx, 0, FinetuneSettings(corrupt_prob=1.0), torch.device("cpu"))
    assert rows_of(faulty, x) is None and not torch.equal(faulty, plain)
