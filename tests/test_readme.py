"""The README gets a newcomer from `make demo` to their own recordings (issue 27)."""

from __future__ import annotations

from pathlib import Path

README = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8").split())


def test_readme_says_how_to_put_the_command_on_path() -> None:
    assert "source .venv/bin/activate" in README


def test_readme_points_at_every_way_in() -> None:
    assert "docs/data.md` § Every way in" in README
    data = (Path(__file__).resolve().parents[1] / "docs" / "data.md").read_text(encoding="utf-8")
    assert "### Every way in" in data
