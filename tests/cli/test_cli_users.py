"""``ragplate users`` on the session's embedded PostgreSQL, through the real CLI."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.cli import app
from ragplate.cli.services import exposure_notice
from ragplate.tasks.people.accounts import authenticate
from tests.testing.cli import run_main

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _session_home(ragplate_home: Path) -> None:
    assert os.environ["RAGPLATE_HOME"] == str(ragplate_home)


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_create_token_list_revoke_delete(engine: sa.Engine, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    name = f"ada-{uuid.uuid4().hex[:6]}"
    code, out = run("users", "create", name, "--permission", "docs.developer",
                    "--tenant", "acme", "--locale", "it", "--json")
    assert code == 0, out
    created = json.loads(out)
    assert set(created) == {"id", "name", "tenant", "locale", "permissions", "guest"}
    assert (created["name"], created["tenant"], created["locale"]) == (name, "acme", "it")
    assert created["permissions"] == ["docs.developer"] and created["guest"] is False

    code, out = run("users", "token", name, "--json")
    assert code == 0, out
    token = json.loads(out)["token"]
    assert authenticate(engine, f"Bearer {token}").name == name

    code, out = run("users", "list", "--json")
    listed = {row["name"]: row for row in json.loads(out)}
    assert listed[name]["active_tokens"] == 1 and token not in out

    code, out = run("users", "revoke", name, "--json")
    assert (code, json.loads(out)) == (0, {"revoked": 1})
    code, out = run("users", "delete", name, "--yes", "--json")
    assert code == 0 and json.loads(out)["deleted"]["name"] == name
    code, out = run_main(monkeypatch, capsys, "users", "token", name)
    assert code == 2 and f"no user named '{name}'" in out


def test_a_bad_permission_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_main(monkeypatch, capsys, "users", "create", f"x-{uuid.uuid4().hex[:6]}",
                         "--permission", "Not Valid")

    assert code == 2
    assert "permission 'Not Valid' is not valid" in out and "Traceback" not in out


@pytest.mark.parametrize(("host", "warned"), [("127.0.0.1", False), ("localhost", False),
                                              ("::1", False), ("0.0.0.0", True),
                                              ("192.168.1.5", True), ("api.example", True)])
def test_serve_beyond_loopback_says_so(host: str, warned: bool) -> None:
    notice = exposure_notice(host)

    assert (notice is not None) is warned
    if notice:
        assert host in notice and "\n" not in notice and "bearer token" in notice


@pytest.mark.parametrize("answer", ["n\n", ""], ids=["no", "end-of-input"])
def test_declining_the_delete_deletes_nothing(engine: sa.Engine, answer: str) -> None:
    name = f"keep-{uuid.uuid4().hex[:6]}"
    assert run("users", "create", name)[0] == 0

    # No input at all (``< /dev/null``) answers no, as ``n`` does: exit 1, not an abort.
    result = CliRunner().invoke(app, ["users", "delete", name, "--json"], input=answer)

    assert result.exit_code == 1 and "Nothing deleted." in result.output
    assert name in run("users", "list", "--json")[1]
