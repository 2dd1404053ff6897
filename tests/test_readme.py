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


def test_the_tour_predicts_a_night_adapt_never_saw() -> None:
    """Issue 27 item 4: the tour's predict reads a recording outside the folder adapt trained on."""
    import re

    adapt_data = re.search(r"passport-kit adapt .*?--data (\S+)", README).group(1).strip("./")
    predicted = re.search(r"passport-kit predict --adapter \S+ (\S+)", README).group(1)
    assert not predicted.strip("./").startswith(adapt_data)


def test_the_readme_says_where_the_auto_recipe_starts() -> None:
    """Issue 49: the README's account of `--recipe auto` says what it does today: the textbook first or, for sleep
    staging, a pretrained sleep stager; a richer model only on a clear cross-validated gain."""
    import re

    auto = re.search(r"How `adapt` trains \(`--recipe auto`, the default\):(.*?)Where nothing pays", README).group(1)
    assert "starts from the textbook" in auto and "or, for sleep staging, from a pretrained sleep stager" in auto
    assert "climbs only where cross-validation over your own subjects shows a paired gain" in auto


def test_the_tour_stages_a_stream_live() -> None:
    """Issue 59: the tour's live step stages the new night, played as an LSL stream, with the tour's adapter."""
    import re

    tour = re.search(r"## Tour(.*?)## Set-up details", README).group(1)
    assert "passport-kit stream --adapter runs/my-ear --replay new-night/s01.edf" in tour
    assert "docs/live.md" in tour  # where liblsl looks for streams, and a device's --lsl NAME
