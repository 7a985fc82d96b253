"""``ragplate analytics prune|erase|create-store`` and ``users delete`` on the session's
PostgreSQL: ``{"deleted": N}`` with logging off, nothing to do without a store, and a
deleted person's records erased with them."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.catalog.analytics import user_ref
from ragplate.cli import app, main
from ragplate.infra import analytics
from ragplate.infra.environment import get_settings
from ragplate.tasks.people.accounts import create_person

pytestmark = pytest.mark.integration

KEY = "cli-analytics-key"


@pytest.fixture(autouse=True)
def _keyed(ragplate_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    assert os.environ["RAGPLATE_HOME"] == str(ragplate_home)
    monkeypatch.setenv("RAGPLATE_APP_KEY", KEY)
    yield


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def seed(engine: sa.Engine, user_id: int, *, days_ago: float) -> None:
    analytics.insert_record(engine, {
        "id": uuid.uuid4(), "logged_at": datetime.now(UTC) - timedelta(days=days_ago),
        "user_ref": user_ref(user_id, KEY), "tenant": "global", "profile": "in_app",
        "locale": "en", "query": "q", "retrieved_count": 0, "citation_count": 0,
        "answered": False, "latency_ms": 1.0, "index": "user"})


def count(engine: sa.Engine, user_id: int) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM rag_queries WHERE user_ref = :r"),
                                {"r": user_ref(user_id, KEY)}).scalar_one())


def test_prune_and_erase_answer_deleted_counts_with_logging_off(engine: sa.Engine) -> None:
    person = create_person(engine, name=f"cli-qa-{uuid.uuid4().hex[:10]}", permissions=[])
    seed(engine, person.id, days_ago=400)
    seed(engine, person.id, days_ago=1)
    code, out = run("analytics", "prune", "--json")
    assert code == 0 and json.loads(out)["deleted"] >= 1
    assert count(engine, person.id) == 1
    code, out = run("analytics", "erase", person.name, "--json")
    assert (code, json.loads(out)) == (0, {"deleted": 1})
    seed(engine, person.id, days_ago=1)
    code, out = run("analytics", "erase", str(person.id), "--id", "--json")
    assert (code, json.loads(out)) == (0, {"deleted": 1})
    code, out = run("analytics", "erase", "not-a-number", "--id")
    assert code != 0


def test_deleting_a_person_erases_their_records(engine: sa.Engine) -> None:
    person = create_person(engine, name=f"cli-qa-{uuid.uuid4().hex[:10]}", permissions=[])
    seed(engine, person.id, days_ago=1)
    code, out = run("users", "delete", person.name, "--yes", "--json")
    assert code == 0, out
    assert json.loads(out)["records_erased"] == 1 and "warning" not in json.loads(out)
    assert count(engine, person.id) == 0


def test_without_the_key_erase_is_refused_and_users_delete_says_what_is_left(
        engine: sa.Engine, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Records are found by a reference made with the key: without one, "0 deleted" would
    # claim the person's records were erased while none was even looked for.
    person = create_person(engine, name=f"cli-qa-{uuid.uuid4().hex[:10]}", permissions=[])
    seed(engine, person.id, days_ago=1)
    monkeypatch.delenv("RAGPLATE_APP_KEY")
    # The previous keys alone miss the records logged under the current one: refused too.
    monkeypatch.setenv("RAGPLATE_APP_PREVIOUS_KEYS", '["an-old-key"]')
    get_settings.cache_clear()

    monkeypatch.setattr("sys.argv", ["ragplate", "analytics", "erase", person.name, "--json"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    assert "Error: RAGPLATE_APP_KEY is not set" in capsys.readouterr().err
    assert count(engine, person.id) == 1

    deleted = CliRunner().invoke(app, ["users", "delete", person.name, "--yes", "--json"])
    assert deleted.exit_code == 0, deleted.output
    said = json.loads(deleted.stdout)
    assert said["records_erased"] is None
    assert said["warning"].endswith(f"then run: ragplate analytics erase {person.id} --id")
    assert count(engine, person.id) == 1  # kept, and erasable by id once the key is back
    monkeypatch.setenv("RAGPLATE_APP_KEY", KEY)
    get_settings.cache_clear()
    assert json.loads(run("analytics", "erase", str(person.id), "--id", "--json")[1]) == {
        "deleted": 1}


def test_without_a_store_prune_and_erase_do_nothing_and_create_store_brings_it_back(
        engine: sa.Engine) -> None:
    person = create_person(engine, name=f"cli-qa-{uuid.uuid4().hex[:10]}", permissions=[])
    seed(engine, person.id, days_ago=1)
    code, out = run("analytics", "create-store", "--json")
    assert (code, json.loads(out)) == (0, {"created": False})
    code, out = run("analytics", "create-store", "--force")  # asks first: no answer
    assert code == 1 and count(engine, person.id) == 1
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE rag_queries"))
    try:
        assert json.loads(run("analytics", "prune", "--json")[1]) == {"deleted": 0}
        assert json.loads(run("analytics", "erase", person.name, "--json")[1]) == {
            "deleted": 0}
    finally:
        code, out = run("analytics", "create-store", "--json")
    assert (code, json.loads(out)) == (0, {"created": True})
    code, out = run("analytics", "create-store", "--force", "--yes", "--json")
    assert (code, json.loads(out)) == (0, {"created": True})


def test_a_failing_erasure_still_says_who_was_deleted_and_how_to_erase_them(
        engine: sa.Engine, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The person is gone once deleted: without their id in the output their records could
    never be erased (``analytics erase ID --id``)."""
    person = create_person(engine, name=f"cli-qa-{uuid.uuid4().hex[:10]}", permissions=[])
    seed(engine, person.id, days_ago=1)
    with engine.begin() as conn:  # a broken store: the erasure's DELETE fails
        conn.execute(sa.text("ALTER TABLE rag_queries RENAME COLUMN user_ref TO broken"))
    try:
        monkeypatch.setattr("sys.argv", ["ragplate", "users", "delete", person.name, "--yes",
                                         "--json"])
        with pytest.raises(SystemExit) as exited:
            main()
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE rag_queries RENAME COLUMN broken TO user_ref"))
    out, err = capsys.readouterr()
    said = json.loads(out)
    assert exited.value.code == 3
    assert said["deleted"]["id"] == person.id and said["records_erased"] is None
    erase_later = f"then run: ragplate analytics erase {person.id} --id"
    assert said["warning"].endswith(erase_later) and "ProgrammingError" in said["warning"]
    assert err.count("\n") == 1 and err.startswith("Error: ") and erase_later in err
    assert "Traceback" not in err and count(engine, person.id) == 1
    assert json.loads(run("analytics", "erase", str(person.id), "--id", "--json")[1]) == {
        "deleted": 1}


@pytest.mark.parametrize("bad", ["\u00b2", "\u0663", "4\u0662", "+1", "1e3", " 7"])
def test_erase_by_id_takes_ascii_digits_only_before_anything_starts(
        clean_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        bad: str) -> None:
    clean_env.setenv("RAGPLATE_APP_KEY", KEY)
    clean_env.setattr("sys.argv", ["ragplate", "analytics", "erase", bad, "--id"])
    with pytest.raises(SystemExit) as exited:
        main()
    err = capsys.readouterr().err
    assert exited.value.code == 2 and f"USER: {bad!r} is not a numeric id" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "home").exists()  # no database was started


@pytest.mark.parametrize("args", [["42", "--id"], ["ada"]])
def test_erase_without_the_key_is_refused_before_any_service_starts(
        clean_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        args: list[str]) -> None:
    clean_env.setattr("sys.argv", ["ragplate", "analytics", "erase", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    assert "Error: RAGPLATE_APP_KEY is not set" in capsys.readouterr().err
    assert not (tmp_path / "home").exists()  # no database was started


def test_an_unreachable_elasticsearch_store_still_shows_the_deleted_person(
        engine: sa.Engine, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    person = create_person(engine, name=f"cli-qa-{uuid.uuid4().hex[:10]}", permissions=[])
    # A real failure: nothing listens on port 1.
    monkeypatch.setenv("RAGPLATE_ELASTICSEARCH_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("RAGPLATE_VECTOR_STORE", "pgvector")
    monkeypatch.setattr("sys.argv", ["ragplate", "users", "delete", person.name, "--yes"])
    with pytest.raises(SystemExit) as exited:
        main()
    out, err = capsys.readouterr()
    assert exited.value.code == 3
    assert f"deleted {person.name} (id {person.id}), query records not erased" in out
    assert err.count("\n") == 1 and err.startswith("Error: query records not erased: ")
    assert err.rstrip().endswith(f"then run: ragplate analytics erase {person.id} --id")
