"""``ragplate audit writes`` on the session's embedded PostgreSQL: the events of an
assistant write as JSON and as a table, narrowed by ``--since``; a bad ``--since`` named."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.settings import Settings
from ragplate.cli import app, main
from ragplate.tasks.people.accounts import create_person
from ragplate.tasks.writes.audit import parse_since
from tests.testing.writes import TICKET_APPROVER, answer, calls, converse, writes_runtime

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _session_home(ragplate_home: Path) -> None:
    assert os.environ["RAGPLATE_HOME"] == str(ragplate_home)


def test_the_events_of_a_proposal_are_listed_as_json_and_as_a_table(
        settings: Settings, engine: sa.Engine) -> None:
    runtime = writes_runtime(settings)
    person = create_person(engine, name=f"audit-{uuid.uuid4().hex[:10]}",
                           permissions=list(TICKET_APPROVER), tenant="audit")
    message, _ = converse(runtime, person, [
        calls(("crud_create_sao_tickets", {"fields": {"title": "Kiwi-secret", "body": "b"}})),
        answer()])
    result = CliRunner().invoke(app, ["audit", "writes", "--since", "10m", "--json"])
    assert result.exit_code == 0, result.output
    mine = [e for e in json.loads(result.output)
            if e["conversation_id"] == str(message.conversation_id)]
    assert [(e["event"], e["tool"], e["entity"], e["operation"], e["outcome"])
            for e in mine] == [("proposed", "crud_create_sao_tickets", "sao.tickets", "create",
                                "proposed")]
    assert len(mine[0]["payload_sha256"]) == 64 and "Kiwi" not in result.output
    future = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    later = CliRunner().invoke(app, ["audit", "writes", "--since", future, "--json"])
    assert later.exit_code == 0 and json.loads(later.output) == []
    table = CliRunner().invoke(app, ["audit", "writes", "--since", "10m"])
    assert table.exit_code == 0 and "assistant write event(s)" in table.output
    assert "proposed" in table.output


def test_a_bad_since_is_named(monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.argv", ["ragplate", "audit", "writes", "--since", "yesterday"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code != 0
    assert "--since" in capsys.readouterr().err


def test_since_reads_dates_times_and_spans() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    assert parse_since("24h", now) == now - timedelta(hours=24)
    assert parse_since("30m", now) == now - timedelta(minutes=30)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("2026-12-01") == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_since("2026-12-01T08:00+01:00").utcoffset() == timedelta(hours=1)
    # Longer than the calendar reaches back: from the beginning.
    assert parse_since("9" * 30 + "d", now) == datetime.min.replace(tzinfo=UTC)
    for bad in ("yesterday", "5w", "", "３h"):
        with pytest.raises(InvalidInputError, match="--since"):
            parse_since(bad)
