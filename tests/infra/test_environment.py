"""Reading the settings from the environment: errors name the variable, secrets are not
repeated, the default home follows XDG_DATA_HOME, and the test profiles are declared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.profiles import PROFILES, TEST_PROFILES
from ragplate.infra.environment import default_home, get_settings, load_settings


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


def empty(variable: str) -> str:
    return f"{variable} is set but empty: unset it to use the default, or give a value"


@pytest.mark.parametrize("value", ["", " \t"])
def test_an_empty_home_is_refused_not_the_default_home(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, value: str,
) -> None:
    clean_env.setenv("RAGPLATE_HOME", value)
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

    with pytest.raises(ConfigurationError) as error:
        load_settings()
    assert str(error.value) == empty("RAGPLATE_HOME")
    with pytest.raises(ConfigurationError) as error:
        default_home({"XDG_DATA_HOME": "/x", "RAGPLATE_HOME": value})
    assert str(error.value) == empty("RAGPLATE_HOME")


@pytest.mark.parametrize("variable", ["RAGPLATE_DATABASE_URL", "RAGPLATE_APP_KEY",
                                      "RAGPLATE_MIN_SIMILARITY",
                                      "RAGPLATE_SERVERS__CHAT__URL"])
def test_an_empty_setting_is_refused_as_bad_configuration(
    clean_env: pytest.MonkeyPatch, variable: str,
) -> None:
    clean_env.setenv(variable, "")

    with pytest.raises(ConfigurationError) as error:
        load_settings()

    assert str(error.value) == empty(variable)
    assert error.value.exit_code == 2


def test_the_api_refuses_to_start_on_an_empty_variable(clean_env: pytest.MonkeyPatch) -> None:
    # Not on pgvector when the cluster's URL came out empty.
    from ragplate.api.app import create_app

    clean_env.setenv("RAGPLATE_ELASTICSEARCH_URL", "")
    get_settings.cache_clear()
    try:
        with pytest.raises(ConfigurationError) as error:
            create_app()
    finally:
        get_settings.cache_clear()

    assert str(error.value) == empty("RAGPLATE_ELASTICSEARCH_URL")


def test_the_command_line_refuses_an_empty_variable_with_exit_2(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAGPLATE_")}
    environ.update(RAGPLATE_HOME=str(tmp_path / "home"), RAGPLATE_DATABASE_URL="")
    result = subprocess.run([sys.executable, "-m", "ragplate", "servers", "check", "--json"],
                            env=environ, capture_output=True, text=True, timeout=120,
                            check=False)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"Error: {empty('RAGPLATE_DATABASE_URL')}\n"


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
