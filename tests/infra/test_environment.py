"""Reading the settings from the environment: errors name the variable, secrets are not
repeated, the default home follows XDG_DATA_HOME, and the test profiles are declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.profiles import PROFILES, TEST_PROFILES
from ragplate.infra.environment import default_home, load_settings


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("RAGPLATE_EMBEDDINGS_TIMEOUT", "abc",
     "invalid setting: RAGPLATE_EMBEDDINGS_TIMEOUT: Input should be a valid number"),
    ("RAGPLATE_API_PORT", "0", "RAGPLATE_API_PORT: Input should be greater than or equal "
     "to 1 (got '0')"),
    ("RAGPLATE_SWITCH_RETRY_DELAYS", "abc",
     "invalid setting: RAGPLATE_SWITCH_RETRY_DELAYS is not valid JSON"),
])
def test_a_value_that_does_not_parse_names_its_variable(
    clean_env: pytest.MonkeyPatch, variable: str, value: str, expected: str,
) -> None:
    clean_env.setenv(variable, value)

    with pytest.raises(ConfigurationError) as error:
        load_settings()

    assert expected in str(error.value)
    assert "pydantic" not in str(error.value)


def test_a_validators_message_comes_without_pydantics_value_error_prefix(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("RAGPLATE_SERVERS__RERANK__URL", "ftp://rerank.example")

    with pytest.raises(ConfigurationError) as error:
        load_settings()

    assert str(error.value) == ("invalid setting: RAGPLATE_SERVERS__RERANK__URL: a server URL "
                                "starts with http:// or https://")


def test_a_rejected_secret_is_not_repeated(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RAGPLATE_SERVERS", '{"embeddings": {"key": 20251130}}')

    with pytest.raises(ConfigurationError) as error:
        load_settings()

    assert "RAGPLATE_SERVERS__EMBEDDINGS__KEY: Input should be a valid string" in str(
        error.value)
    assert "20251130" not in str(error.value)


def test_the_default_home_follows_xdg_data_home(clean_env: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    clean_env.delenv("RAGPLATE_HOME")
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

    assert load_settings().home == (tmp_path / "data" / "ragplate").resolve()
    assert default_home({"XDG_DATA_HOME": "/x", "RAGPLATE_HOME": "/y"}) is None
    assert default_home({"XDG_DATA_HOME": "/x"}) == Path("/x/ragplate")
    assert default_home({}) is None


def test_an_empty_variable_is_unset_not_refused(clean_env: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    clean_env.setenv("RAGPLATE_MIN_SIMILARITY", "")
    clean_env.setenv("RAGPLATE_HOME", "")
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

    settings = load_settings()

    assert settings.min_similarity is None
    assert settings.home == (tmp_path / "data" / "ragplate").resolve()
    assert default_home({"XDG_DATA_HOME": "/x", "RAGPLATE_HOME": ""}) == Path("/x/ragplate")


def test_ragplate_home_wins_over_xdg_data_home(clean_env: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

    assert load_settings().home == (tmp_path / "home").resolve()


def test_without_either_the_home_is_under_the_user_directory(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clean_env.delenv("RAGPLATE_HOME")
    clean_env.delenv("XDG_DATA_HOME", raising=False)
    clean_env.setenv("HOME", str(tmp_path / "user"))

    assert load_settings().home == (tmp_path / "user" / ".local" / "share" / "ragplate")


def test_test_profiles_are_declared_when_the_settings_ask_for_them(
    clean_env: pytest.MonkeyPatch
) -> None:
    for key in TEST_PROFILES:
        clean_env.delitem(PROFILES, key, raising=False)
    load_settings()
    assert not set(TEST_PROFILES) & set(PROFILES)

    clean_env.setenv("RAGPLATE_TEST_PROFILES", "true")
    load_settings()

    assert set(TEST_PROFILES) <= set(PROFILES)
