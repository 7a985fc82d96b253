"""The embedded PostgreSQL's home: paths it cannot use are refused in one line, and a
server whose pid file is still being written counts as not running yet."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragplate.catalog.errors import ConfigurationError
from ragplate.infra import postgres


def test_a_home_under_a_file_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")

    with pytest.raises(ConfigurationError) as error:
        postgres.start(tmp_path / "afile" / "home")

    assert str(error.value).startswith(f"{tmp_path}/afile/home cannot be created (")
    assert error.value.exit_code == 2


def test_a_home_with_a_space_is_refused_before_starting(tmp_path: Path) -> None:
    home = tmp_path / "with space" / "home"

    with pytest.raises(ConfigurationError, match="cannot run under a path with a space"):
        postgres.start(home)

    assert not postgres.pgdata_dir(home).exists()


def test_a_half_written_pid_file_is_a_server_still_starting(tmp_path: Path) -> None:
    pgdata = postgres.pgdata_dir(tmp_path)
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("18\n")
    # The first lines only, as a reader sees it while the postmaster writes the file.
    (pgdata / "postmaster.pid").write_text(f"{os.getpid()}\n{pgdata}\n1796015782"
                                           "\n5432\n")

    assert postgres.running(tmp_path) is None
