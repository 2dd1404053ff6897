"""`--notch 0` is refused instead of silently meaning no notch (issue 28, item 10)."""

from __future__ import annotations

import pytest

from passport_kit.cli.options import notch_frequency
from passport_kit.errors import ConfigError


@pytest.mark.parametrize(("value", "hz"), [("50", 50.0), ("60", 60.0), ("none", None), ("off", None)])
def test_notch_frequency_reads_hz_or_none(value: str, hz: float | None) -> None:
    assert notch_frequency(value) == hz


@pytest.mark.parametrize("value", ["0", "0.0"])
def test_notch_zero_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="--notch 0 is not a mains frequency; give 50 or 60, or 'none'"):
        notch_frequency(value)
