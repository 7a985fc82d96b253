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


@pytest.mark.integration
def test_a_pid_file_naming_another_process_is_a_server_that_is_gone(tmp_path: Path) -> None:
    """After an unclean stop the pid file's PID may belong to another program by the time
    the server is started again (or to the killed server's zombie, where nothing reaps
    it): the server is not taken for running, and it starts."""
    import signal
    import subprocess
    import time

    import psutil
    import psycopg

    home = tmp_path / "home"
    first = postgres.start(home)
    os.kill(first.pid, signal.SIGKILL)
    for _ in range(100):  # the server and its children leave
        alive = [p for p in psutil.process_iter(["pid", "ppid", "status"])
                 if first.pid in (p.info["pid"], p.info["ppid"])
                 and p.info["status"] != psutil.STATUS_ZOMBIE]
        if not alive:
            break
        time.sleep(0.1)
    pid_file = postgres.pgdata_dir(home) / "postmaster.pid"
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        lines = pid_file.read_text().splitlines()
        pid_file.write_text("\n".join([str(stranger.pid), *lines[1:]]) + "\n")

        assert postgres.running(home) is None
        again = postgres.start(home)
        assert again.pid not in (first.pid, stranger.pid)
        assert stranger.poll() is None  # the other program is left alone
        with psycopg.connect(again.libpq_url("postgres")) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert postgres.stop(home)
    finally:
        stranger.kill()
