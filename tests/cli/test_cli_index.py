"""``ragplate index create`` on Elasticsearch (the noida-db emulator, or a real cluster)
with the session's PostgreSQL naming the serving profile: created with the mapping and the
alias, left alone when it exists, recreated with ``--force``; and on pgvector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.catalog.errors import InvalidInputError
from ragplate.cli import app
from ragplate.infra.elasticsearch import indexes, mappings
from ragplate.infra.models.base import Embedder
from tests.testing.elasticsearch import Target

pytestmark = pytest.mark.integration


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_create_then_exists_then_force(
    es_target: Target, es_client: object, engine: sa.Engine, ragplate_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in es_target.settings_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("RAGPLATE_ELASTICSEARCH_INDEX_PREFIX", "rpclitest")
    code, out = run("index", "create", "--profile", "all", "--json")
    assert code == 0, out
    rows = {r["index"]: r for r in json.loads(out)["indexes"]}
    assert {r["outcome"] for r in rows.values()} == {"created"}
    user = rows["user"]
    assert user["store"] == "elasticsearch" and user["alias"] == "rpclitest_docs_user"
    assert indexes.alias_targets(es_client, user["alias"]) == [user["name"]]  # type: ignore[arg-type]
    meta = indexes.index_meta(es_client, user["name"])  # type: ignore[arg-type]
    assert meta is not None and meta["dimensions"] == 384
    assert meta["mapping_version"] == mappings.MAPPING_VERSION
    found = es_client.indices.get_mapping(index=user["name"])  # type: ignore[attr-defined]
    properties = found[user["name"]]["mappings"]["properties"]
    assert properties["source_type"] == {"type": "keyword"}

    code, out = run("index", "create", "--profile", "user")
    assert code == 0 and "user: exists" in out
    code, out = run("index", "create", "--profile", "user", "--force", "--yes", "--json")
    assert [r["outcome"] for r in json.loads(out)["indexes"]] == ["recreated"]
    for row in rows.values():
        indexes.delete_index(es_client, row["name"])  # type: ignore[arg-type]


def test_a_bad_profile_is_refused() -> None:
    result = CliRunner().invoke(app, ["index", "create", "--profile", "everything"])
    assert isinstance(result.exception, InvalidInputError)  # main() prints it, exit 2
    assert result.exception.exit_code == 2 and "developer, user or all" in str(
        result.exception)


def test_on_pgvector_there_is_nothing_to_create(engine: sa.Engine) -> None:
    code, out = run("index", "create", "--profile", "developer", "--json")
    assert code == 0
    assert json.loads(out)["indexes"][0]["outcome"] == "exists"


def test_force_asks_first_and_no_answer_changes_nothing(
    engine: sa.Engine, embedder: Embedder, tmp_path: Path
) -> None:
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.indexing.read import read_sources, user_corpus
    from tests.testing.corpus import index_documents, write_corpus

    runtime = Runtime(get_settings())
    store = runtime.store("user")
    page = ("---\naudience: user\nmodule: warehouse\nlocale: en\ncanonical_source: help/a.md\n"
            "safe_source_label: \"Help · A\"\nversion: \"1\"\npolicy_classification: user_safe\n"
            "policy_classification_version: in-app-docs-v1\nrequired_permissions: []\n"
            "tenant_scope: global\n---\n\n# A\n\nScanners are reset from the settings page.\n")
    root = write_corpus(tmp_path / "help", {"a.md": page})
    index_documents(store, embedder, user_corpus(read_sources({"help": root}), runtime.policy))
    before = store.count()
    assert before > 0
    # No answer (the end of the input) is a no, as "n" is.
    for answer in ("", "n\n"):
        result = CliRunner().invoke(app, ["index", "create", "--profile", "user", "--force"],
                                    input=answer)
        assert result.exit_code == 1, result.output
        assert "Empty the user documentation index?" in result.output
        assert "Nothing changed." in result.output
    assert store.count() == before
    result = CliRunner().invoke(app, ["index", "create", "--profile", "user", "--force"],
                                input="y\n")
    assert result.exit_code == 0, result.output
    assert store.count() == 0
