"""How long a token lives: ``RAGPLATE_TOKEN_TTL_DAYS``, ``--expires-in`` and the short
default of a token acting as someone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.people import (
    DEFAULT_TOKEN_TTL_DAYS,
    IMPERSONATION_TOKEN_LIFETIME,
    MAX_TOKEN_TTL_DAYS,
    check_locale,
    check_name,
    check_permissions,
    check_tenant,
    token_lifetime,
)
from ragplate.catalog.settings import Settings
from ragplate.catalog.text import parse_span


def test_the_setting_and_the_catalog_agree_on_the_default_and_the_bounds(
    clean_env: pytest.MonkeyPatch,
) -> None:
    assert Settings().token_ttl_days == DEFAULT_TOKEN_TTL_DAYS == 90
    clean_env.setenv("RAGPLATE_TOKEN_TTL_DAYS", str(MAX_TOKEN_TTL_DAYS))
    assert Settings().token_ttl_days == MAX_TOKEN_TTL_DAYS
    for bad in ("0", str(MAX_TOKEN_TTL_DAYS + 1), "-5", "ninety"):
        clean_env.setenv("RAGPLATE_TOKEN_TTL_DAYS", bad)
        with pytest.raises(ValidationError, match="token_ttl_days"):
            Settings()


def test_the_default_lifetime_is_the_setting_and_acting_as_someone_is_8_hours() -> None:
    assert token_lifetime() == timedelta(days=90)
    assert token_lifetime(ttl_days=7) == timedelta(days=7)
    assert token_lifetime(ttl_days=7, impersonated=True) == timedelta(hours=8)
    assert token_lifetime(impersonated=True) == IMPERSONATION_TOKEN_LIFETIME


@pytest.mark.parametrize(("given", "impersonated", "lifetime"), [
    ("12h", False, timedelta(hours=12)),
    ("30d", False, timedelta(days=30)),
    (" 1m ", False, timedelta(minutes=1)),
    ("3650d", False, timedelta(days=3650)),
    ("5256000m", False, timedelta(days=3650)),  # the most, counted in minutes
    ("400d", False, timedelta(days=400)),  # longer than the setting: one token's choice
    ("30m", True, timedelta(minutes=30)),
    ("24h", True, timedelta(hours=24)),
])
def test_expires_in_overrides_the_default(given: str, impersonated: bool,
                                          lifetime: timedelta) -> None:
    assert token_lifetime(given, ttl_days=90, impersonated=impersonated) == lifetime


@pytest.mark.parametrize(("given", "impersonated", "reason"), [
    ("soon", False, "is not a duration"),
    ("", False, "is not a duration"),
    ("5w", False, "is not a duration"),
    ("-1d", False, "is not a duration"),
    ("1.5h", False, "is not a duration"),
    ("0d", False, "at least 1m"),
    ("0m", True, "at least 1m"),
    ("3651d", False, "at most 3650d"),
    ("999999d", False, "at most 3650d"),
    ("99999999999999999999d", False, "at most 3650d"),  # beyond any timedelta
    ("３d", False, "is not a duration"),  # full-width digit: not a count
    ("٣d", False, "is not a duration"),  # Arabic-Indic digit
    ("25h", True, "at most 24h for a token acting as someone"),
    ("2d", True, "at most 24h for a token acting as someone"),
])
def test_a_bad_expires_in_is_refused_naming_it(given: str, impersonated: bool,
                                               reason: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        token_lifetime(given, impersonated=impersonated)

    assert str(refused.value).startswith(f"--expires-in {given!r}")
    assert reason in str(refused.value)


def test_a_ttl_out_of_bounds_is_refused_even_past_the_settings() -> None:
    for bad in (0, MAX_TOKEN_TTL_DAYS + 1):
        with pytest.raises(InvalidInputError, match="RAGPLATE_TOKEN_TTL_DAYS"):
            token_lifetime(ttl_days=bad)


def test_spans_are_what_since_reads_too() -> None:
    assert parse_span("30m") == timedelta(minutes=30)
    assert parse_span("24h") == timedelta(hours=24)
    assert parse_span("7d") == timedelta(days=7)
    assert parse_span("1234567d") == timedelta(days=1234567)
    assert parse_span("9" * 30 + "m") == timedelta.max  # a span, too long for any bound
    for bad in ("7", "d", "7 d", "7D", "+7d", "３d", "yesterday"):
        assert parse_span(bad) is None, bad


def test_a_trailing_newline_is_no_part_of_a_valid_value() -> None:
    # "$" alone matches before a final newline: "acme\n" would pass as a tenant.
    for check, value in ((check_tenant, "acme\n"), (check_locale, "en\n"),
                         (check_name, "ada\n"), (check_permissions, ["docs.developer\n"])):
        with pytest.raises(InvalidInputError):
            check(value)  # type: ignore[operator]
