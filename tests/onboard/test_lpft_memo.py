"""LP-FT's memo of the frozen blocks (issue 47): the same decision and the same trained tensors, to the byte."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import passport_kit.onboard.lpft as lpft
from passport_kit.engine.batch_rows import note
from passport_kit.onboard.fitting import FitData, FitRun
from passport_kit.onboard.lpft import FrozenMemo, decide, lpft_settings
from passport_kit.onboard.probe import fit_head
from tests.onboard.test_lpft import _probed


def _run(monkeypatch: pytest.MonkeyPatch, budget: int, precision: str, mask: np.ndarray | None):
    """Return LP-FT's decision and the trainable tensors after training, with the memo given ``budget`` bytes."""
    monkeypatch.setattr(lpft, "MEMO_BYTES", budget)
    x, y, subjects, meta, model, probe, start = _probed()
    data = FitData(x, y, meta, ["rest", "task"], channel_mask=mask)
    rows, run = np.arange(len(y)), FitRun(precision=precision)
    settings = lpft_settings(steps=8, batch_size=8)
    decision = decide(model, data, rows, subjects, chosen=start, start=start, plain=probe.features,
                      settings=settings, run=run)
    lpft.train(model, data, rows[:-6], start=start, plain={k: v[:-6] for k, v in probe.features.items()},
               settings=settings, val_index=rows[-6:], run=run)
    trained = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    return decision, trained


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("masked", [False, True])
def test_the_memo_changes_no_number_of_lpft(monkeypatch: pytest.MonkeyPatch, precision: str, masked: bool) -> None:
    mask = None
    if masked:  # a few windows with a masked channel: computed as before, never kept
        mask = np.zeros((48, 2), dtype=bool)
        mask[[3, 17, 30], 1] = True
    plain, plain_tensors = _run(monkeypatch, 0, precision, mask)
    memo, memo_tensors = _run(monkeypatch, 2**30, precision, mask)
    for field in ("trained", "steps", "probe_score", "lpft_score", "gain", "standard_error", "curve"):
        assert getattr(memo, field) == getattr(plain, field), field
    assert memo_tensors.keys() == plain_tensors.keys()
    assert all(torch.equal(memo_tensors[n], plain_tensors[n]) for n in plain_tensors)


def _counted(monkeypatch: pytest.MonkeyPatch) -> tuple:
    """Return windows, a model, a memo of the windows, the batch sizes band power is computed for, and band power."""
    import passport_kit.model.heads as heads

    x, y, subjects, meta, model, probe, start = _probed()
    calls: list[int] = []
    plain = heads.band_power_features
    monkeypatch.setattr(heads, "band_power_features", lambda xb, *a: (calls.append(len(xb)), plain(xb, *a))[1])
    return x, model, FrozenMemo(x, np.arange(len(x))), calls, plain


def test_the_memo_serves_a_noted_row_and_computes_each_once(monkeypatch: pytest.MonkeyPatch) -> None:
    x, model, memo, calls, _ = _counted(monkeypatch)
    with memo.installed(model):
        first = model.head.spectral(note(torch.from_numpy(x[[4, 2, 9]]), x, np.array([4, 2, 9])))
        again = model.head.spectral(note(torch.from_numpy(x[[9, 4, 7]].copy()), x, np.array([9, 4, 7])))
        unnoted = torch.from_numpy(x[[1]].copy())  # no rows noted on it: computed, and not kept
        other = model.head.spectral(unnoted)
        assert torch.equal(model.head.spectral(unnoted), other)
        # Row 4 of another array (the same content plus one): never served from x's row 4.
        elsewhere = model.head.spectral(note(torch.from_numpy(x[[4]] + 1.0), x + 1.0, np.array([4])))
    assert calls == [3, 1, 1, 1, 1]  # the second batch computed window 7 alone
    assert "spectral" not in vars(model.head)  # the head's own method again
    expected = model.head.spectral(torch.from_numpy(x[[4, 2, 9, 7]]))
    assert torch.equal(first, expected[:3]) and torch.equal(again, expected[[2, 0, 3]])
    assert torch.equal(other, model.head.spectral(unnoted))
    assert torch.equal(elsewhere, model.head.spectral(torch.from_numpy(x[[4]] + 1.0)))


def test_a_memo_without_room_keeps_nothing() -> None:
    x, *_ = _probed()
    memo = FrozenMemo(x, np.arange(len(x)), budget=0)
    memo._keep("spectral", torch.zeros(3, 5), np.array([0, 1, 2]))
    assert not memo.filled["spectral"].any() and memo.used == 0


def test_a_batch_changed_in_place_is_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    x, model, memo, calls, plain = _counted(monkeypatch)
    batch = note(torch.from_numpy(x[[0, 1]].copy()), x, np.array([0, 1]))
    with memo.installed(model):
        first = model.head.spectral(batch)
        model.head.spectral(batch)          # the same tensor, unchanged: served
        batch[1] = torch.from_numpy(x[5])   # changed in place: its noted rows no longer hold, so computed
        changed = model.head.spectral(batch)
        batch[0] += 1.0                     # not a row of x any more: computed
        model.head.spectral(batch)
    assert calls == [2, 2, 2]
    assert torch.equal(changed, torch.cat([first[:1], plain(torch.from_numpy(x[[5]]), model.head.bands)]))


def test_lpft_batches_are_served_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """LP-FT's own loop (training steps and validation) notes its batches: each window's band power is computed at
    most once, however many steps and validations read it."""
    x, y, subjects, meta, model, probe, start = _probed()
    import passport_kit.model.heads as heads

    windows: list[int] = []
    plain = heads.band_power_features
    monkeypatch.setattr(heads, "band_power_features", lambda xb, *a: (windows.append(len(xb)), plain(xb, *a))[1])
    data = FitData(x, y, meta, ["rest", "task"])
    rows = np.arange(len(y))
    lpft.train(model, data, rows[:-6], start=start, plain={k: v[:-6] for k, v in probe.features.items()},
               settings=lpft_settings(steps=8, batch_size=8), val_index=rows[-6:], run=FitRun())
    assert 0 < sum(windows) <= len(y)  # 8 steps of 8 windows and validations: without the memo many times that
