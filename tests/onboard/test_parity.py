"""Train/serve parity (issue 55): every read-out the ladder can ship, folded into a head, written as a bundle and read
back, gives the probabilities its fit gave on the training windows.

The read-outs are not listed here: they are what the registered rungs ask the ladder to score
(:data:`passport_kit.onboard.rungs.RUNGS`), from every template the rungs themselves reach, over the settings grid
the sleep task offers (contexts, scalings, poolings, band power, backbone, stager as offset or block, diagonal). A
new rung or setting is covered without anyone listing it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from passport_kit.model import ChannelMeta, build_backbone, model_config
from passport_kit.onboard.ladder import FALLBACK, zero_shot_proba
from passport_kit.onboard.ladder_inputs import CONTEXTS, POOLINGS
from passport_kit.onboard.parity import (PARITY_ATOL, ParityError, check_parity, fitted_probabilities,
                                         head_probabilities)
from passport_kit.onboard.read_out import ReadOutChoice
from passport_kit.onboard.rungs import RUNGS, STAGER_TEMPLATE, Climb, Scored

#: Rungs that train the head by gradient (no solver fit to compare with): their bundles' round trip is tested in
#: tests/onboard/test_lpft.py; every other registered rung must yield read-outs here.
GRADIENT_RUNGS = {"lpft"}
STAGES = [0, 1, 2, 3, 4]
SPEC = {"name": "yasa", "eeg": "TP9", "eog": None, "emg": None}


class _Recorder:
    """Stands in for the ladder: records what each rung asks it to score."""

    def __init__(self) -> None:
        self.data = SimpleNamespace(sleep=True, contexts=CONTEXTS, scalings=("none", "recording"), poolings=POOLINGS,
                                    backbone=True, prior=np.zeros((1, 5)), prior_reason="", prior_stages=STAGES,
                                    fixed_context=False, stager_options=[(SPEC, None)], stager_first=True)
        self.asked: set[ReadOutChoice] = set()

    def score(self, name: str, choice: ReadOutChoice) -> Scored:
        self.asked.add(choice)
        return Scored(name, choice, np.zeros(1), [])

    def zero_shot(self, option: int | None = None) -> Scored:
        return Scored("zero-shot", None, np.zeros(1), [])

    def smoothed(self, base: Scored) -> Scored:
        return dataclasses.replace(base, smoothed=True)

    def textbook_path(self) -> Scored:
        """The textbook-first order's final model: one of the read-outs its rungs ask for (each recorded here)."""
        return Scored("textbook", FALLBACK, np.zeros(1), [])


def shippable_read_outs() -> tuple[list[ReadOutChoice], set[str]]:
    """Return every read-out the registered rungs score, from every template they reach, and the rungs that gave
    any."""
    ladder, templates, giving = _Recorder(), {FALLBACK, STAGER_TEMPLATE}, set()
    while True:
        before = len(ladder.asked)
        for name, cls in RUNGS.items():
            if name in GRADIENT_RUNGS:
                continue
            for template in sorted(templates, key=repr):
                climb = Climb(incumbent=Scored("x", template, np.zeros(1), []), template=template, rungs=[])
                if cls().skip(ladder, climb) is not None:
                    continue
                got = cls().candidates(ladder, climb)
                if got:
                    giving.add(name)
        templates |= ladder.asked
        if len(ladder.asked) == before:
            return _distinct_heads(ladder.asked), giving


def _distinct_heads(choices: set[ReadOutChoice]) -> list[ReadOutChoice]:
    """Return one read-out per head they fold into: which blocks are read (not their weights: a weight only scales
    a block's columns), context or not (not its width), pooling where the backbone is read, scaling, offset,
    diagonal; at one C (the fold does not depend on it)."""
    kept: dict[tuple, ReadOutChoice] = {}
    for c in sorted(choices, key=repr):
        key = (bool(c.context), c.pooling if c.backbone_weight else "", c.scaling, c.offset, c.diagonal,
               bool(c.backbone_weight), bool(c.prior_weight), bool(c.bandpower_weight))
        kept.setdefault(key, c.with_c(0.1))
    return list(kept.values())


READ_OUTS, GIVING = shippable_read_outs()
#: The read-outs whose bundles are also written and read back: one per set of head settings adapter.json stores
#: (context, pooling, scaling, a prior block); the others differ from one of them only in the weights' values.
ROUND_TRIPPED = {next(c for c in READ_OUTS if (bool(c.context), c.pooling, c.scaling, c.reads_prior) == key)
                 for key in {(bool(c.context), c.pooling, c.scaling, c.reads_prior) for c in READ_OUTS}}


def test_every_registered_rung_is_covered() -> None:
    assert set(RUNGS) - GRADIENT_RUNGS <= GIVING
    # the grid holds the settings issue 55 found broken: per-night scaling with context around the stager
    assert any(c.offset and c.scaling == "recording" and c.context for c in READ_OUTS)
    assert any(c.diagonal for c in READ_OUTS) and any(c.backbone_weight and c.pooling == "meanstd" for c in READ_OUTS)


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three short 'nights' of 4-channel windows with 5 stages, a stager's log-probabilities that half-know them,
    a tiny base saved to disk, and the read-out inputs the ladder sees."""
    from passport_kit.checkpoint import save_base_checkpoint
    from passport_kit.engine.forward import read_out_features
    from passport_kit.montage import get_montage
    from passport_kit.onboard.fitting import FitData
    from passport_kit.onboard.probe import plain_features
    from passport_kit.onboard.run import build_classifier

    rng = np.random.default_rng(0)
    montage = get_montage("muse")
    n_night, n_ch, n_patches = 30, montage.n_channels, 3
    y = np.concatenate([np.repeat(rng.permutation(5), 6) for _ in range(3)])
    rec = np.repeat(["a", "b", "c"], n_night)
    t = np.arange(n_patches * 200) / 200.0
    x = rng.normal(0, 0.3, (len(y), n_ch, n_patches * 200))
    x += 0.3 * (y[:, None, None] + 1) * np.sin(2 * np.pi * (2 + 3 * y)[:, None, None] * t)
    x *= np.where(rec == "b", 2.0, 1.0)[:, None, None]  # a night at another gain: per-night scaling matters
    x = x.reshape(len(y), n_ch, n_patches, 200).astype(np.float32)
    logits = rng.normal(0, 1, (len(y), 5)) + 1.5 * np.eye(5)[y]
    prior = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    torch.manual_seed(0)
    backbone = build_backbone(model_config("cbramod-tiny", "mlp-experts"))
    base = save_base_checkpoint(backbone, tmp_path_factory.mktemp("base") / "tiny", name="tiny")
    model = build_classifier(backbone, 5, "adapter", recipe="probe", n_channels=n_ch)
    meta = ChannelMeta.from_montage(montage)
    windows = FitData(x, y, meta, ["W", "N1", "N2", "N3", "REM"])
    rows = np.arange(len(y))
    z = read_out_features(model, x, meta, rows, pooling="meanstd")
    plain = plain_features(z, model.head.d_model, POOLINGS)
    return {"model": model, "windows": windows, "rows": rows, "rec": list(rec), "y": y, "prior": prior,
            "plain": plain, "base": base, "montage": montage, "tmp": tmp_path_factory}


def _fit(nights: dict[str, Any], choice: ReadOutChoice | None) -> np.ndarray:
    """Give the module's model the read-out ``choice`` (None: the zero-shot stager); return the fit's probabilities."""
    from passport_kit.onboard.ladder import set_zero_shot
    from passport_kit.onboard.probe import fit_head

    head, prior = nights["model"].head, nights["prior"]
    if choice is None:
        set_zero_shot(head, STAGES, SPEC, 5)
        return zero_shot_proba(prior, STAGES)
    return fit_head(head, nights["plain"], nights["y"], choice, 5, recordings=nights["rec"], seed=0, prior=prior,
                    stager_choice=SPEC, stages=STAGES)


def _round_trip(nights: dict[str, Any]) -> Any:
    """Return the module's model written as an adapter bundle and read back."""
    from passport_kit.checkpoint import AdapterMeta, load_adapter_bundle, load_base_checkpoint, save_adapter_bundle

    _, info = load_base_checkpoint(nights["base"])
    montage = nights["montage"]
    meta = AdapterMeta(base_name=info.name, base_sha256=info.weights_sha256, montage=montage,
                       montage_hash=montage.content_hash, classes=list(nights["windows"].classes),
                       preprocessing={"sfreq": 200.0}, window={"seconds": 3.0, "task": "sleep-staging"}, metrics={})
    folder = save_adapter_bundle(nights["model"], nights["tmp"].mktemp("bundle") / "adapter", meta)
    loaded, _ = load_adapter_bundle(folder, base=nights["base"])
    return loaded


def _served(nights: dict[str, Any], model: Any) -> np.ndarray:
    return head_probabilities(model, nights["windows"], nights["rows"], nights["rec"], nights["prior"])


@pytest.mark.parametrize("choice", [None, *READ_OUTS], ids=lambda c: "zero-shot" if c is None else
                         "-".join(f"{k}={v}" for k, v in c.as_dict().items() if k != "C"))
def test_the_bundle_reproduces_its_fit_on_the_training_windows(nights: dict[str, Any],
                                                               choice: ReadOutChoice | None) -> None:
    fit = _fit(nights, choice)
    model = nights["model"]
    model.eval()
    served = _served(nights, model)
    assert check_parity(fit, served, "in memory") <= PARITY_ATOL
    if choice is None or choice in ROUND_TRIPPED:
        np.testing.assert_allclose(_served(nights, _round_trip(nights)), served, atol=1e-6, rtol=0)


@pytest.mark.parametrize("temperature", [1.0, 1.7])
def test_smoothing_and_temperature_keep_parity(nights: dict[str, Any], temperature: float) -> None:
    from passport_kit.model.night import transition_counts, transition_matrix

    choice = ReadOutChoice(0.3, context=2, scaling="recording", prior_weight=1.0, offset=True)
    fit = _fit(nights, choice)
    head = nights["model"].head
    a = transition_matrix(transition_counts(nights["y"], nights["rec"], 5))
    head.smoothing = {"transitions": a.round(6).tolist(), "emission_prior": [0.2] * 5}
    head.temperature = temperature
    try:
        expected = fitted_probabilities(fit, head.smoothing, temperature, nights["rec"])
        assert check_parity(expected, _served(nights, nights["model"]), "smoothed") <= PARITY_ATOL
        np.testing.assert_allclose(_served(nights, _round_trip(nights)), expected, atol=PARITY_ATOL, rtol=0)
    finally:
        head.smoothing, head.temperature = None, 1.0


def test_a_head_that_disagrees_with_its_fit_is_refused_in_one_line(nights: dict[str, Any]) -> None:
    # The issue-55 head: an offset read-out whose identity reads the per-night scaled stager block.
    choice = ReadOutChoice(0.3, context=2, scaling="recording", prior_weight=1.0, offset=True)
    fit = _fit(nights, choice)
    nights["model"].head.scales_prior = True
    try:
        with pytest.raises(ParityError) as caught:
            check_parity(fit, _served(nights, nights["model"]), "context")
    finally:
        nights["model"].head.scales_prior = False
    assert "\n" not in str(caught.value) and "no bundle was written" in str(caught.value)


def test_old_heads_keep_scaling_their_prior_block_and_new_ones_write_the_key() -> None:
    from passport_kit.checkpoint.files import upgraded, written
    from passport_kit.model.heads import ProbeHead

    old = {"kind": "probe", "n_classes": 5, "n_channels": 4, "scaling": "recording", "n_prior": 5,
           "prior": SPEC, "context": 2}
    assert upgraded("head", old)["scales_prior"] is True  # read as it ran
    head = ProbeHead(8, 5, 4, bands=((0.5, 4.0),))
    assert "scales_prior" not in written("head", head.settings())  # no prior block: the form it always had
    head.set_read_out(2, "mean", "recording", prior=SPEC, n_prior=5)
    assert written("head", head.settings())["scales_prior"] is False and head.unscaled_inputs == 5


# -- through adapt and predict ------------------------------------------------------------------------------------
def _adapt(tmp_path: Path, montage_yaml: Path, dataset: Path, checkpoint: str) -> Any:
    from typer.testing import CliRunner

    from passport_kit.cli.app import app

    return CliRunner().invoke(app, ["adapt", "--montage", str(montage_yaml), "--data", str(dataset), "--checkpoint",
                                    checkpoint, "--out", str(tmp_path / "adapter"), "--no-progress", "--recipe",
                                    "probe"])


def test_predict_on_a_training_night_gives_what_the_fit_gave(tmp_path: Path, montage_yaml: Path, checkpoint: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole path: every rung taken but smoothing (so the model shipped stacks band power, backbone, the stager as
    offset, context with per-night scaling), adapt's fit probabilities kept, then predict on a training night; noisy
    nights, so that the probabilities are not all near 0 or 1 (on the clean ones both sides agreed to 1e-69)."""
    import csv

    from passport_kit.cli.app import app
    from passport_kit.onboard import ladder as ladder_module
    from passport_kit.onboard.rungs import ContextRung, SmoothingRung, TextbookPathRung
    from tests.onboard.conftest import make_dataset
    from typer.testing import CliRunner

    dataset = make_dataset(tmp_path / "noisy", noise=40.0)

    kept: dict[str, Any] = {}
    original = ladder_module.fitted_probabilities

    def keep(proba: np.ndarray, smoothing: Any, temperature: float, groups: Any) -> np.ndarray:
        kept["proba"], kept["groups"] = original(proba, smoothing, temperature, groups), list(groups)
        return kept["proba"]

    monkeypatch.setattr(ladder_module, "fitted_probabilities", keep)
    monkeypatch.setattr(ladder_module.Ladder, "clears", lambda self, gain, se: bool(np.isfinite(gain)))
    monkeypatch.setattr(ContextRung, "_variants", staticmethod(lambda d: [(2, "recording")]))
    monkeypatch.setattr(SmoothingRung, "skip", lambda self, ladder, climb: "off in this test")
    monkeypatch.setattr(TextbookPathRung, "skip", lambda self, ladder, climb: "off in this test")
    result = _adapt(tmp_path, montage_yaml, dataset, checkpoint)
    assert result.exit_code == 0, result.output
    sel = json.loads((tmp_path / "adapter" / "adapter.json").read_text())["metrics"]["selection"]
    assert sel["offset"] and sel["scaling"] == "recording" and sel["context"] == 2
    assert 0 <= sel["parity"] <= PARITY_ATOL  # the gap adapt measured before writing, recorded
    assert np.median(kept["proba"].max(axis=1)) < 0.9999  # probabilities that can show a skew (old code: 0.165)
    pred = CliRunner().invoke(app, ["predict", "--adapter", str(tmp_path / "adapter"), str(dataset / "s01.edf"),
                                    "--out", str(tmp_path / "p")])
    assert pred.exit_code == 0, pred.output
    rows = list(csv.DictReader((tmp_path / "p" / "s01" / "s01_predictions.csv").open()))
    served = np.array([[float(r[f"p_{c}"]) for c in ("W", "N1", "N2", "N3", "REM")] for r in rows])
    mine = np.array([k for k, g in enumerate(kept["groups"]) if "s01" in str(g)])
    assert len(mine) == len(served)
    np.testing.assert_allclose(served, kept["proba"][mine], atol=2e-3, rtol=0)  # the CSV's rounding


def test_adapt_refuses_to_write_a_bundle_that_disagrees_with_its_fit(tmp_path: Path, montage_yaml: Path,
                                                                     dataset: Path, checkpoint: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from passport_kit.model.heads import ProbeHead

    read_out = ProbeHead.read_out
    monkeypatch.setattr(ProbeHead, "read_out", lambda self, z, groups=None: read_out(self, z, groups) +
                        torch.tensor([2.0, 0, 0, 0, 0]))  # a head that drifted from the fit it was folded from
    result = _adapt(tmp_path, montage_yaml, dataset, checkpoint)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "does not reproduce its own fit" in lines[0], result.output
    assert not (tmp_path / "adapter" / "adapter.json").exists()


def test_predict_warns_about_a_bundle_written_with_the_skew() -> None:
    from passport_kit.checkpoint.adapter_metrics import read_selection
    from passport_kit.errors import PassportWarning
    from passport_kit.inference.recording import _warn_if_skewed

    def record(offset: bool):  # the selection block of a bundle's adapter.json, as predict reads it
        return read_selection({"metric": "kappa", "offset": offset, "ladder": [{"rung": "stager", "tried": True,
                                                                                "taken": True}]})

    old = SimpleNamespace(n_prior=5, scaling="recording", scales_prior=True)
    with pytest.warns(PassportWarning, match="re-run adapt"):
        _warn_if_skewed(old, record(True), "runs/ear")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_if_skewed(old, record(False), "runs/ear")  # stacked, not an offset: fit and head agreed
        _warn_if_skewed(SimpleNamespace(n_prior=5, scaling="recording", scales_prior=False), record(True), "a")
