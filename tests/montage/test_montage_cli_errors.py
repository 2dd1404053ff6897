"""Every bad montage input exits with code 2 and one line that says what is wrong and how to fix it.

Each case also checks that the registry is unchanged afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
from typer.testing import CliRunner

from passport_kit.cli.app import app
from passport_kit.montage import register_montage, user_montage_dir

runner = CliRunner()


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(d: dict[str, Any]) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return apply


_DELETE = object()

# (id, change to the newcomer's ear montage, expected part of the one-line message)
BAD_DICTS = [
    ("missing-name", _set(["name"], _DELETE), "has no `name:`"),
    ("bad-name-key", _set(["name"], "My Ear"), "name is invalid; use lowercase letters, digits and single '-' (for example 'my-ear')"),
    ("unknown-field", _set(["chanels"], []), "unknown field(s) 'chanels'"),
    ("missing-units", _set(["units"], _DELETE), "has no `units:`; add `units: m`, `units: cm` or `units: mm`"),
    ("unknown-units", _set(["units"], "inch"), "unknown units 'inch'; use one of: m, cm, mm"),
    ("unknown-frame", _set(["coordinate_frame"], "ctf-ish"), "unknown coordinate_frame 'ctf-ish'; the only supported frame is 'head'"),
    ("unsupported-frame", _set(["coordinate_frame"], "mri"), "coordinate_frame 'mri' is not supported; convert the positions to the MNE head frame"),
    ("empty-montage", _set(["channels"], []), "has no channels; list at least one under `channels:`"),
    ("channels-not-list", _set(["channels"], "ELA"), "`channels` must be a list"),
    ("duplicate-name", _set(["channels", 1, "name"], "ELA"), "channel name 'ELA' appears twice (names are case-insensitive); give every channel its own name"),
    ("duplicate-name-case", _set(["channels", 1, "name"], "ela"), "channel name 'ela' appears twice"),
    ("alias-clashes-other-channel", _set(["channels", 0, "aliases"], ["elb"]), "name 'ELB' of channel 'ELB' clashes with alias 'elb' of channel 'ELA' (names and aliases are case-insensitive); rename one or drop the alias"),
    ("alias-twice", _set(["channels", 0, "aliases"], ["X", "X"]), "channel 'ELA' lists 'X' twice; remove the duplicate alias"),
    ("missing-position", _set(["channels", 1, "position"], _DELETE), "channel 'ELB' has no `position:`; give `position: [x, y, z]` in mm"),
    ("nan-position", _set(["channels", 1, "position"], [float("nan"), 0.0, 80.0]), "channel 'ELB': `position` contains NaN or infinity"),
    ("inf-position", _set(["channels", 1, "position"], [float("inf"), 0.0, 80.0]), "contains NaN or infinity"),
    ("non-numeric-position", _set(["channels", 1, "position"], ["12mm", 0, 80]), "`position` value '12mm' is not a number"),
    ("two-numbers", _set(["channels", 1, "position"], [1.0, 2.0]), "`position` must be three numbers [x, y, z] in mm"),
    ("zero-position", _set(["channels", 1, "position"], [0, 0, 0]), "position is (0, 0, 0), which means 'unknown' in MNE"),
    ("mm-declared-as-m", _set(["units"], "m"), "the numbers look like millimetres: set `units: mm`"),
    ("unknown-kind", _set(["channels", 1, "kind"], "brain"), "unknown kind 'brain'; use one of: eeg, eog, emg, ecg, misc"),
    ("ref-equals-position", _set(["channels", 3, "reference_position"], [-85.5, -8.0, 12.0]), "reference_position equal to its position"),
    ("nan-reference", _set(["channels", 3, "reference_position"], [float("nan"), 1, 1]), "`reference_position` contains NaN"),
]


def _metres_as_mm(d: dict[str, Any]) -> None:
    for ch in d["channels"]:
        for key in ("position", "reference_position"):
            if key in ch:
                ch[key] = [v / 1000 for v in ch[key]]


def _cm_as_mm(d: dict[str, Any]) -> None:
    for ch in d["channels"]:
        ch["position"] = [v / 10 for v in ch["position"]]
        ch.pop("reference_position", None)


BAD_DICTS += [
    ("m-declared-as-mm", _metres_as_mm, "the numbers look like metres: set `units: m`"),
    ("cm-declared-as-mm", _cm_as_mm, "the numbers look like centimetres: set `units: cm`"),
]

BAD_TEXTS = [
    ("malformed-yaml", "name: x\nunits: mm\nchannels: [\n  {name: A, position: [1, 2\n", "is not valid YAML at line"),
    ("tab-indented-yaml", "name: x\n\tunits: mm\n", "is not valid YAML"),
    ("not-a-mapping", "- a\n- b\n", "is a list, not a mapping"),
    ("empty-file", "", "is empty, not a mapping"),
    ("duplicate-key", "name: x\nunits: mm\nunits: m\nchannels: []\n", "key 'units' appears twice in one mapping"),
]


def _registry_snapshot() -> dict[str, bytes]:
    folder = user_montage_dir()
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*"))} if folder.is_dir() else {}


@pytest.fixture
def registry_with_one(ear_dict: dict[str, Any]) -> dict[str, bytes]:
    """Return a snapshot of a registry that already holds one user montage."""
    from passport_kit.montage import Montage

    register_montage(Montage.from_dict({**ear_dict, "name": "existing-ear"}))
    return _registry_snapshot()


def _assert_one_line_exit_2(args: list[str], expected: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("case,change,expected", BAD_DICTS, ids=[c[0] for c in BAD_DICTS])
def test_bad_montage_exits_2_and_leaves_registry(
    case: str, change: Callable[[dict[str, Any]], None], expected: str, ear_dict: dict[str, Any],
    write_yaml: Callable[..., Path], registry_with_one: dict[str, bytes],
) -> None:
    change(ear_dict)
    path = write_yaml(ear_dict)
    _assert_one_line_exit_2(["register-montage", str(path)], expected)
    assert _registry_snapshot() == registry_with_one


@pytest.mark.parametrize("case,text,expected", BAD_TEXTS, ids=[c[0] for c in BAD_TEXTS])
def test_bad_yaml_file_exits_2_and_leaves_registry(
    case: str, text: str, expected: str, write_yaml: Callable[..., Path], registry_with_one: dict[str, bytes],
) -> None:
    path = write_yaml(text)
    _assert_one_line_exit_2(["register-montage", str(path)], expected)
    assert _registry_snapshot() == registry_with_one


def test_missing_file_exits_2(tmp_path: Path) -> None:
    _assert_one_line_exit_2(["register-montage", str(tmp_path / "nope.yaml")], "does not exist; check the path")


def test_builtin_name_cannot_be_shadowed(ear_dict: dict[str, Any], write_yaml: Callable[..., Path],
                                         registry_with_one: dict[str, bytes]) -> None:
    path = write_yaml({**ear_dict, "name": "tuh-19"})
    _assert_one_line_exit_2(["register-montage", str(path), "--force"],
                            "montage 'tuh-19' is a built-in and cannot be replaced; choose another `name:`")
    assert _registry_snapshot() == registry_with_one


def test_existing_user_montage_needs_force(ear_dict: dict[str, Any], write_yaml: Callable[..., Path],
                                           registry_with_one: dict[str, bytes]) -> None:
    path = write_yaml({**ear_dict, "name": "existing-ear", "description": "changed"})
    _assert_one_line_exit_2(["register-montage", str(path)], "is already registered")
    assert _registry_snapshot() == registry_with_one


@pytest.mark.parametrize("command", [["montages", "show", "nope"], ["montages", "plot", "nope", "--out", "x.png"]])
def test_unknown_montage_name_lists_known_ones(command: list[str]) -> None:
    _assert_one_line_exit_2(command, "unknown montage 'nope'; known montages: ceegrid, eesm17-ear")


def test_unknown_name_suggests_a_close_one() -> None:
    _assert_one_line_exit_2(["montages", "show", "tuh19"], "did you mean 'tuh-19'?")


def test_removing_a_builtin_exits_2() -> None:
    _assert_one_line_exit_2(["montages", "remove", "muse"], "montage 'muse' is a built-in and cannot be removed")


def test_removing_an_unknown_user_montage_exits_2(registry_with_one: dict[str, bytes]) -> None:
    _assert_one_line_exit_2(["montages", "remove", "nope"], "no user montage 'nope' to remove; user montages: existing-ear")
    assert _registry_snapshot() == registry_with_one


def test_plot_to_an_unknown_image_format_exits_2(tmp_path: Path) -> None:
    _assert_one_line_exit_2(["montages", "plot", "muse", "--out", str(tmp_path / "x.txt")],
                            "cannot write a plot to 'x.txt'; use one of: .png")


def test_unwritable_registry_exits_2(ear_yaml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("PASSPORT_KIT_HOME", str(blocker))
    _assert_one_line_exit_2(["register-montage", str(ear_yaml)],
                            "cannot write to the montage registry")
    assert blocker.read_text() == "x"


@pytest.mark.parametrize("command", [
    ["montages", "plot", "muse", "--out"],
    ["montages", "import", "colin27_1005", "--name", "cap", "-c", "Cz", "--out"],
])
def test_unwritable_output_exits_2(tmp_path: Path, command: list[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _assert_one_line_exit_2([*command, str(blocker / "out.png" if "plot" in command else blocker / "m.yaml")],
                            "cannot write")


def test_registering_identical_content_again_exits_0_and_says_unchanged(
        ear_dict: dict[str, Any], write_yaml: Callable[..., Path], registry_with_one: dict[str, bytes]) -> None:
    path = write_yaml({**ear_dict, "name": "existing-ear"})
    result = runner.invoke(app, ["register-montage", str(path)])
    assert result.exit_code == 0, result.output
    assert "montage already registered, unchanged 'existing-ear'" in result.output
    assert _registry_snapshot() == registry_with_one
