"""Fast (keyword-only) application search answers a plain question, as the README shows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.cli import app
from tests.testing.records import reset_content

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _session_home(ragplate_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGPLATE_EMBEDDINGS_URL", raising=False)
    assert os.environ["RAGPLATE_HOME"] == str(ragplate_home)


@pytest.fixture(scope="module")
def seeded(engine: sa.Engine) -> None:
    reset_content(engine)
    result = CliRunner().invoke(app, ["demo", "seed", "--records", "100", "--reset", "--json"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("query", ["how do I rebuild the index", "rebuild the index"])
def test_a_plain_question_finds_records_in_fast_mode(seeded: None, query: str) -> None:
    result = CliRunner().invoke(app, ["search", query, "--mode", "fast", "--json"])

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    hits = data["hits"]
    assert len(hits) >= 3
    assert data["meta"]["search"]["strategies"] == ["keyword"]
    texts = [f"{h['title']} {h['excerpt']}".lower() for h in hits]
    # Every hit holds a word of the question, stemmed ("indexes" counts for "index").
    assert all("index" in t or "rebuil" in t for t in texts)
    assert any("indexes" in t for t in texts)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
