"""``ragplate.infra.home``: the home the CLI's entry point computes before any command
(to place Prefect's files) is the one the settings read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragplate.infra.environment import load_settings
from ragplate.infra.home import ragplate_home


@pytest.mark.parametrize("variables", [
    {"RAGPLATE_HOME": "{tmp}/explicit"},
    {"ragplate_home": "{tmp}/lower-case"},
    {"XDG_DATA_HOME": "{tmp}/xdg"},
    {"RAGPLATE_HOME": "{tmp}/explicit", "XDG_DATA_HOME": "{tmp}/xdg"},
    {"RAGPLATE_HOME": "relative/home"},
    {"RAGPLATE_HOME": ""},
    {"RAGPLATE_HOME": "", "XDG_DATA_HOME": "{tmp}/xdg"},
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
