"""``ragplate demo seed`` and ``ragplate search`` through Typer's runner."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.cli import app
from ragplate.infra.records.vectors import model_index_exists
from tests.testing.records import reset_content

pytestmark = pytest.mark.integration

DEFAULT = "local:intfloat/multilingual-e5-small"


@pytest.fixture(autouse=True)
def _session_home(ragplate_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands read get_settings(): the session home, no external provider."""
    monkeypatch.delenv("RAGPLATE_EMBEDDINGS_URL", raising=False)
    assert os.environ["RAGPLATE_HOME"] == str(ragplate_home)


@pytest.fixture(scope="module")
def seeded(engine: sa.Engine) -> dict[str, object]:
    reset_content(engine)
    result = CliRunner().invoke(app, ["demo", "seed", "--records", "6", "--locales", "en,it",
                                      "--reset", "--batch-size", "4", "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_demo_seed_adds_records_with_vectors(engine: sa.Engine, seeded: dict[str, object]):
    assert seeded["records"] == 6 and seeded["texts"] == 12
    assert seeded["models"] == [DEFAULT]
    with engine.connect() as conn:
        counts = conn.execute(sa.text(
            "SELECT (SELECT count(*) FROM cms_contents), "
            "(SELECT count(*) FROM cms_content_translations), "
            "(SELECT count(*) FROM model_embeddings WHERE model_key = :k)"), {"k": DEFAULT}).one()
        assert model_index_exists(conn, DEFAULT)
    assert tuple(counts) == (6, 12, 12)


def test_demo_seed_help_has_an_example() -> None:
    result = CliRunner().invoke(app, ["demo", "seed", "--help"])

    assert result.exit_code == 0
    assert "Example: ragplate demo seed --records" in result.output


def test_search_json_finds_a_seeded_record(seeded: dict[str, object]) -> None:
    from ragplate.tasks.records.demo import demo_paragraphs

    first = demo_paragraphs()[0]
    result = CliRunner().invoke(app, ["search", first.body, "--mode", "balanced", "--locale",
                                      "it", "--top-k", "3", "--json"])

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["hits"][0]["id"] == str(seeded["first_key"])
    assert data["hits"][0]["title"] == first.title and data["hits"][0]["locale"] == "it"
    assert data["meta"]["search"]["mode"] == "balanced"
    assert data["meta"]["search"]["degraded_reason"] is None


def test_search_plain_output_shows_the_mode_served(seeded: dict[str, object]) -> None:
    result = CliRunner().invoke(app, ["search", "embedding profile", "--mode", "deep"])

    assert result.exit_code == 0, result.output
    assert "mode balanced (asked deep: reranker_unavailable)" in result.stdout
    assert "[1] #" in result.stdout


def test_search_names_an_unknown_entity(seeded: dict[str, object]) -> None:
    result = CliRunner().invoke(app, ["search", "x", "--entity", "cms.pages"])

    assert result.exit_code != 0
    assert "unknown entity 'cms.pages'" in str(result.exception)


def test_demo_seed_plain_output_counts_one_record_in_the_singular(engine: sa.Engine) -> None:
    try:
        result = CliRunner().invoke(app, ["demo", "seed", "--records", "1", "--locales", "en",
                                          "--tenant", "acme"])

        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[-1].startswith(
            "1 record (1 text) added to cms.contents, keys ")
    finally:  # the other tests count the seeded records: this one leaves none behind
        with engine.begin() as conn:
            conn.execute(sa.text(
                "DELETE FROM model_embeddings WHERE entity = 'cms.contents' AND record_key IN "
                "(SELECT id::text FROM cms_contents WHERE tenant = 'acme')"))
            conn.execute(sa.text("DELETE FROM cms_contents WHERE tenant = 'acme'"))
