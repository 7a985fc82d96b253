"""``ragplate users`` on the session's embedded PostgreSQL, through the real CLI."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
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
    issued = json.loads(out)
    assert set(issued) == {"token", "expires_at"}
    token = issued["token"]
    assert authenticate(engine, f"Bearer {token}").name == name
    expires_at = datetime.fromisoformat(issued["expires_at"])
    assert expires_at.utcoffset() == timedelta(0)
    assert timedelta(days=89) < expires_at - datetime.now(UTC) <= timedelta(days=90)

    code, out = run("users", "list", "--json")
    listed = {row["name"]: row for row in json.loads(out)}
    assert listed[name]["active_tokens"] == 1 and token not in out
    assert listed[name]["next_token_expiry"] == issued["expires_at"]

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


def test_expires_in_and_the_ttl_setting_set_the_expiry(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragplate.infra.environment import get_settings

    name = f"ttl-{uuid.uuid4().hex[:6]}"
    assert run("users", "create", name)[0] == 0

    def left(*args: str) -> timedelta:
        code, out = run("users", "token", name, "--json", *args)
        assert code == 0, out
        return datetime.fromisoformat(json.loads(out)["expires_at"]) - datetime.now(UTC)

    assert timedelta(hours=11) < left("--expires-in", "12h") <= timedelta(hours=12)
    assert timedelta(days=399) < left("--expires-in", "400d") <= timedelta(days=400)
    monkeypatch.setenv("RAGPLATE_TOKEN_TTL_DAYS", "7")
    get_settings.cache_clear()
    assert timedelta(days=6) < left() <= timedelta(days=7)

    # Without --json the token alone is on stdout (TOKEN=$(...) keeps working), the expiry
    # on stderr.
    result = CliRunner().invoke(app, ["users", "token", name, "--expires-in", "30m"])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    assert token.startswith("rp_") and "\n" not in token
    assert authenticate(engine, f"Bearer {token}").name == name
    assert result.stderr.startswith("expires 20")

    code, out = run("users", "list")
    assert code == 0 and "next" in out and "expiry" in out


def test_an_impersonation_token_lives_8_hours(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name, operator = f"acted-{uuid.uuid4().hex[:6]}", f"op-{uuid.uuid4().hex[:6]}"
    assert run("users", "create", name)[0] == 0
    assert run("users", "create", operator, "--permission", "tenants.operator")[0] == 0

    code, out = run("users", "token", name, "--impersonated-by", operator, "--json")

    assert code == 0, out
    left = datetime.fromisoformat(json.loads(out)["expires_at"]) - datetime.now(UTC)
    assert timedelta(hours=7) < left <= timedelta(hours=8)
    code, out = run_main(monkeypatch, capsys, "users", "token", name, "--impersonated-by",
                         operator, "--expires-in", "3d")
    assert code == 2 and "--expires-in '3d': a token lives at most 24h" in out


@pytest.mark.parametrize("bad", ["soon", "5w", "0m", "-1d", "1.5h", "3651d", "12 h"])
def test_a_bad_expires_in_is_refused_naming_it_before_anything_starts(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    bad: str,
) -> None:
    home = tmp_path / "home"

    code, out = run_main(clean_env, capsys, "users", "token", "ada", "--expires-in", bad)

    assert code == 2, out
    assert f"--expires-in {bad!r}" in out and "Traceback" not in out
    assert len(out.strip().splitlines()) == 1
    assert not home.exists()  # refused before anything started
