"""passport-kit's warnings point at the user's line, not at the library's internals (issue 58 item 5)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from passport_kit.errors import PassportWarning

HERE = str(Path(__file__).resolve())


def _caught(call) -> list[warnings.WarningMessage]:  # noqa: ANN001 - any call that warns
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, PassportWarning)]


def test_a_warning_from_deep_in_the_library_names_the_callers_line(tmp_path: Path) -> None:
    from passport_kit.signals.dataset_spec import load_dataset_spec

    (tmp_path / "a.edf").touch()
    (tmp_path / "dataset.yaml").write_text("recordings:\n  - {subject: s1, file: a.edf, label: x}\n"
                                           "  - {subject: s2, file: ./a.edf, label: x}\n")
    caught = _caught(lambda: load_dataset_spec(tmp_path))
    assert [Path(w.filename).resolve() for w in caught] == [Path(HERE)]


def test_a_warning_through_pydantic_validation_names_the_callers_line(tmp_path: Path) -> None:
    from passport_kit.montage import Montage

    path = tmp_path / "m.yaml"
    path.write_text("name: m\nunits: mm\nchannels:\n  - {name: A, position: [-80.0, -5.0, 10.0]}\n"
                    "  - {name: B, position: [-80.0, -5.0, 10.0]}\n")
    caught = _caught(lambda: Montage.from_yaml(path))
    assert caught and {str(Path(w.filename).resolve()) for w in caught} == {HERE}


@pytest.mark.parametrize("names", [["n1.edf"], ["n1.edf", "n2.edf"]])
def test_a_warning_of_a_direct_call_names_its_line(names: list[str]) -> None:
    from passport_kit.signals import PreprocessConfig
    from passport_kit.signals.recording import fit_preprocessing

    caught = _caught(lambda: fit_preprocessing(PreprocessConfig(), rate=lambda: (50.0, names)))
    assert len(caught) == 1 and str(Path(caught[0].filename).resolve()) == HERE
