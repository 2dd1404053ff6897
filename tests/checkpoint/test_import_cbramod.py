"""`checkpoints import-cbramod`: the official release format, strictly, and equal to braindecode."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from braindecode_harness import import_braindecode_cbramod
from checkpoint_helpers import cbramod_shapes, random_cbramod_state
from typer.testing import CliRunner

from passport_kit.checkpoint import load_base_checkpoint
from passport_kit.cli.app import app
from passport_kit.model import ChannelMeta

runner = CliRunner()


@pytest.fixture(scope="module")
def release_state() -> dict[str, torch.Tensor]:
    return random_cbramod_state(12)


@pytest.fixture
def release_file(tmp_path: Path, release_state: dict[str, torch.Tensor]) -> Path:
    path = tmp_path / "pretrained_weights.pth"
    torch.save(release_state, path)
    return path


def test_release_has_211_tensors(release_state: dict[str, torch.Tensor]) -> None:
    assert len(release_state) == 211


def test_import_writes_an_acpe_base_checkpoint(release_file: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["checkpoints", "import-cbramod", str(release_file), "--name", "cbramod-x"])
    assert result.exit_code == 0, result.output
    assert "imported" in result.output and "cbramod-x" in result.output
    backbone, info = load_base_checkpoint("cbramod-x")
    assert (info.model.arch, info.model.embedding, info.source) == ("cbramod-base", "acpe", "user")
    state = backbone.state_dict()
    for name, tensor in random_cbramod_state(12).items():
        torch.testing.assert_close(state[name], tensor, rtol=0, atol=0)


def test_imported_backbone_equals_braindecode_cbramod(release_file: Path, tmp_path: Path, release_state) -> None:
    cbramod_cls = import_braindecode_cbramod()
    if cbramod_cls is None:
        pytest.skip("braindecode is not importable here (test-only dependency; see Makefile)")
    out = tmp_path / "ckpt"
    result = runner.invoke(app, ["checkpoints", "import-cbramod", str(release_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    ours, _ = load_base_checkpoint(out)
    c, p = 7, 5
    theirs = cbramod_cls(n_chans=c, n_times=p * 200, sfreq=200.0, n_outputs=2)
    # braindecode keeps proj_out in its path: compare with our reconstruction (proj_out output).
    missing, unexpected = theirs.load_state_dict(release_state, strict=False)
    assert set(missing) == {"final_layer.1.weight", "final_layer.1.bias"} and not unexpected
    theirs.eval()
    x = torch.randn(3, c, p * 200)
    mask = torch.rand(3, c, p) < 0.5
    meta = ChannelMeta.create([f"E{i}" for i in range(c)])
    with torch.no_grad():
        for m in (None, mask):
            expected = theirs(x, mask=None if m is None else m.long(), return_features=True)["features"]
            got = ours.reconstruct(x.reshape(3, c, p, 200), meta, m)
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5 * expected.abs().max().item())


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"definitely not a pickle", "not a PyTorch weights file"),
        ({"weights": [1, 2, 3]}, "not a plain state dict"),
        ({"encoder.foo": torch.zeros(2)}, "not a CBraMod state dict"),
    ],
)
def test_foreign_files_are_refused(tmp_path: Path, content: object, message: str) -> None:
    path = tmp_path / "foreign.pth"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        torch.save(content, path)
    result = runner.invoke(app, ["checkpoints", "import-cbramod", str(path), "--name", "foreign"])
    assert result.exit_code == 2
    assert message in result.output


def test_pickled_objects_are_never_unpickled(tmp_path: Path) -> None:
    path = tmp_path / "evil.pth"
    torch.save({"obj": Path("x")}, path)  # an arbitrary class: weights_only refuses it
    result = runner.invoke(app, ["checkpoints", "import-cbramod", str(path), "--name", "evil"])
    assert result.exit_code == 2
    assert "loads safely" in result.output


@pytest.mark.parametrize("change", ["drop", "extra", "reshape"])
def test_state_dict_that_does_not_fit_is_refused_with_names(tmp_path: Path, change: str) -> None:
    state = {k: torch.zeros(s) for k, s in cbramod_shapes(12).items()}
    key = "encoder.layers.3.linear1.weight"
    if change == "drop":
        del state[key]
    elif change == "extra":
        state["head.weight"] = torch.zeros(2)
    else:
        state[key] = torch.zeros(800, 100)
    path = tmp_path / "odd.pth"
    torch.save(state, path)
    result = runner.invoke(app, ["checkpoints", "import-cbramod", str(path), "--name", "odd"])
    assert result.exit_code == 2
    expected = {"drop": f"1 missing ['{key}']", "extra": "1 unexpected ['head.weight']", "reshape": key}[change]
    assert expected in result.output


def test_missing_file_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["checkpoints", "import-cbramod", str(tmp_path / "nope.pth")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_import_refuses_an_existing_folder_without_force(release_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "ckpt"
    assert runner.invoke(app, ["checkpoints", "import-cbramod", str(release_file), "--out", str(out)]).exit_code == 0
    again = runner.invoke(app, ["checkpoints", "import-cbramod", str(release_file), "--out", str(out)])
    assert again.exit_code == 2 and "--force" in again.output
    forced = runner.invoke(app, ["checkpoints", "import-cbramod", str(release_file), "--out", str(out), "--force"])
    assert forced.exit_code == 0
