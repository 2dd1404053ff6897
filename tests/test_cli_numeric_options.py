"""Numeric options are validated in every command: `--notch 0`, `check --batch-size 0` (issue 28, items 5 and 10)."""

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


def test_check_batch_size_0_is_one_line() -> None:
    from passport_kit.onboard.check import check

    with pytest.raises(ConfigError, match="batch_size \\(--batch-size\\) must be at least 1"):
        check("tuh-standard", ".", batch_size=0)
