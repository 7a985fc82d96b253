"""``ragplate.infra.home``: the home the CLI's entry point computes before any command
(to place Prefect's files) is the one the settings read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragplate.catalog.errors import ConfigurationError
from ragplate.infra.environment import load_settings
from ragplate.infra.home import ragplate_home


@pytest.mark.parametrize("variables", [
    {"RAGPLATE_HOME": "{tmp}/explicit"},
    {"ragplate_home": "{tmp}/lower-case"},
    {"XDG_DATA_HOME": "{tmp}/xdg"},
    {"RAGPLATE_HOME": "{tmp}/explicit", "XDG_DATA_HOME": "{tmp}/xdg"},
    {"RAGPLATE_HOME": "relative/home"},
    {},
])
def test_the_entry_points_home_is_the_settings_home(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, variables: dict[str, str],
) -> None:
    clean_env.delenv("RAGPLATE_HOME")
    clean_env.delenv("XDG_DATA_HOME", raising=False)
    clean_env.chdir(tmp_path)
    for key, value in variables.items():
        clean_env.setenv(key, value.format(tmp=tmp_path))

    assert ragplate_home(os.environ) == load_settings().home


@pytest.mark.parametrize("variables", [
    {"RAGPLATE_HOME": ""},
    {"RAGPLATE_HOME": " ", "XDG_DATA_HOME": "{tmp}/xdg"},
    {"ragplate_home": "", "XDG_DATA_HOME": "{tmp}/xdg"},
])
def test_an_empty_home_is_refused_as_the_settings_refuse_it(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, variables: dict[str, str],
) -> None:
    clean_env.delenv("RAGPLATE_HOME")
    for key, value in variables.items():
        clean_env.setenv(key, value.format(tmp=tmp_path))
    message = ("RAGPLATE_HOME is set but empty: unset it to use the default, or give a "
               "value")

    with pytest.raises(ConfigurationError) as error:
        ragplate_home(os.environ)
    assert str(error.value) == message
    with pytest.raises(ConfigurationError) as error:
        load_settings()
    assert str(error.value) == message


def test_the_entry_point_refuses_an_empty_home_with_exit_2(tmp_path: Path) -> None:
    # Before any command, so that Prefect's files are not put under the working directory
    # or another home.
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_HOME"}
    environ.update(RAGPLATE_HOME="", XDG_DATA_HOME=str(tmp_path / "xdg"))
    result = subprocess.run([sys.executable, "-m", "ragplate", "servers", "check", "--json"],
                            env=environ, cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, check=False)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == ("Error: RAGPLATE_HOME is set but empty: unset it to use the "
                             "default, or give a value\n")
