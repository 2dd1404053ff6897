"""docs/formats.md's tables of the prediction summary and adapter.json's metrics are generated from the models' JSON
schema (issue 60): the checked-in file holds what scripts/formats_doc.py writes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "formats_doc.py"


def _script():  # noqa: ANN202 - the module
    spec = importlib.util.spec_from_file_location("formats_doc", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_formats_md_holds_the_generated_tables() -> None:
    script = _script()
    text = script.DOC.read_text(encoding="utf-8")
    assert script.BEGIN in text and script.END in text
    assert script.rewritten(text) == text, "docs/formats.md is out of date: run scripts/formats_doc.py"


def test_every_summary_field_is_described() -> None:
    from passport_kit.inference.night_summary import NightSummary

    text = _script().generated()
    for name, field in NightSummary.model_fields.items():
        assert field.description, name
        assert f"| `{name}` |" in text
