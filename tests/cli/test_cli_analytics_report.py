"""``ragplate analytics report`` on the session's embedded PostgreSQL, over the seeded
records of :mod:`tests.tasks.analytics.test_report` and ragplate's own user
documentation: the figures as JSON and in the terminal, the page written with
``--output``, an empty window said to be one (exit 0), a bad ``--since`` or ``--output``
named before any service starts."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.catalog.settings import Settings
from ragplate.cli import app, main
from ragplate.infra import analytics
from ragplate.infra.models.base import Embedder
from ragplate.infra.stores.base import DocumentStore
from tests.tasks.analytics.test_report import INJECTION, SEED, seed_records
from tests.testing.corpus import index_user_docs

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _session_home(ragplate_home: Path) -> None:
    """The command reads get_settings(): the session's home and database."""
    assert os.environ["RAGPLATE_HOME"] == str(ragplate_home)


@pytest.fixture(scope="module")
def seeded(settings: Settings, engine: sa.Engine, embedder: Embedder,
           developer_index: DocumentStore) -> Iterator[datetime]:
    index_user_docs(settings, embedder)
    now = datetime.now(UTC)
    seed_records(engine, now)
    yield now
    analytics.delete_before(engine, now + timedelta(days=365))


def test_the_report_as_json(seeded: datetime) -> None:
    result = CliRunner().invoke(app, ["analytics", "report", "--since", "7d", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["totals"]["records"] == len(SEED) == 22
    assert data["totals"]["unanswered"] == 15 and data["totals"]["abstention_rate"] == 0.6818
    assert [t["count"] for t in data["topics"]] == [5, 2, 2, 2, 1, 1]
    assert data["topics"][0]["locales"] == {"en": 3, "it": 2}
    assert {t["index"] for t in data["topics"]} == {"user", "developer"}
    assert data["modules"] == [{"module": "ragplate", "unanswered": 11},
                               {"module": "core", "unanswered": 2}]
    assert list(data["latency_ms"]) == ["p50", "p90", "p99", "max"]
    # A window of the last day holds only that day's records.
    day = json.loads(CliRunner().invoke(app, ["analytics", "report", "--since", "1d",
                                              "--json"]).output)
    assert day["totals"]["records"] == 6  # the seeds of index 0, 4, 8 … (0 days back)


def test_the_page_and_the_terminal_summary(seeded: datetime, tmp_path: Path) -> None:
    page = tmp_path / "gap.html"
    result = CliRunner().invoke(app, ["analytics", "report", "--output", str(page)])
    assert result.exit_code == 0, result.output
    assert "22 question(s), 7 answered, 15 unanswered: abstention rate 68.2 %" in result.output
    assert "6 unanswered topic(s)" in result.output and f"Page: {page}" in result.output
    # What people typed is printed as text, not read as Rich markup.
    assert "<script>alert" in result.output
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.count("<svg") == 6
    assert "<script>" not in html and "&lt;script&gt;alert(&quot;gap&quot;)" in html
    assert INJECTION not in html
    # The page is replaced on the next run (a weekly report to one file).
    again = CliRunner().invoke(app, ["analytics", "report", "--output", str(page), "--json"])
    assert again.exit_code == 0 and json.loads(again.output)["totals"]["records"] == 22


def test_an_empty_window_says_so_and_exits_0(seeded: datetime, tmp_path: Path) -> None:
    # The newest seed is 5 minutes before ``seeded``: from 4 minutes before, none.
    after = (seeded - timedelta(minutes=4)).isoformat()
    page = tmp_path / "empty.html"
    result = CliRunner().invoke(app, ["analytics", "report", "--since", after,
                                      "--output", str(page)])
    assert result.exit_code == 0, result.output
    assert "nothing to report: no question was logged in the window" in result.output
    assert "Nothing to report" in page.read_text(encoding="utf-8")
    data = json.loads(CliRunner().invoke(app, ["analytics", "report", "--since", after,
                                               "--json"]).output)
    assert data["totals"]["records"] == 0 and data["topics"] == []


@pytest.mark.parametrize(("args", "named"), [
    (["--since", "last week"], "--since"),
    (["--output", "/nonexistent-dir/gap.html"], "does not exist"),
    (["--output", "/tmp"], "is a directory"),
    (["--since", "9999-12-31T23:59:59-05:00"], "'9999-12-31T23:59:59-05:00' is outside the "
     "calendar"),
    (["--since", "0001-01-01T00:00:00+05:00"], "'0001-01-01T00:00:00+05:00' is outside the "
     "calendar"),
    (["--since", "2999-01-01"], "'2999-01-01' is in the future"),
])
def test_a_bad_option_is_named(args: list[str], named: str, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.argv", ["ragplate", "analytics", "report", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert named in err and err.count("\n") == 1 and "Traceback" not in err
