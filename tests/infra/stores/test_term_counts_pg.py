"""``rag_term_counts`` (migration 0016): the per-(index, model) word counts the triggers on
``rag_chunks`` keep, whatever path deletes chunks, and the counts of chunks stored before
the migration."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ragplate.infra import database, postgres
from ragplate.infra.stores.pg_sources import remove_sources
from ragplate.infra.stores.pgvector import PgvectorStore, prune_other_models
from ragplate.infra.stores.word_counts import counted_terms
from tests.testing.document_store_contract import OTHER, TINY, load, records
from tests.testing.keyword_search_contract import chunk

pytestmark = pytest.mark.integration

Counts = dict[tuple[str, str, str], int]


@pytest.fixture
def own_engine(ragplate_home: Path) -> Iterator[tuple[sa.Engine, str]]:
    """A database of its own at ``0015`` (pruning a model touches every index), and its
    name; the test upgrades it."""
    import psycopg

    server = postgres.start(ragplate_home)
    name = f"ragplate_terms_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.libpq_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    engine = sa.create_engine(server.url(name), poolclass=sa.NullPool)
    try:
        database.ensure_pgvector(engine)
        database.upgrade(engine, "0015")
        yield engine, name
    finally:
        engine.dispose()
        with psycopg.connect(server.libpq_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def stored_counts(engine: sa.Engine) -> Counts:
    with engine.connect() as conn:
        return {(r.index_name, r.model_key, r.term): int(r.chunks) for r in conn.execute(
            sa.text("SELECT index_name, model_key, term, chunks FROM rag_term_counts"))}


def recounted(engine: sa.Engine) -> Counts:
    """The counts read afresh from every chunk's text, as the writers read it."""
    counted: Counter[tuple[str, str, str]] = Counter()
    with engine.connect() as conn:
        for r in conn.execute(sa.text(
                "SELECT index_name, model_key, source, text, metadata FROM rag_chunks")):
            metadata = r.metadata if isinstance(r.metadata, dict) else {}
            counted.update((r.index_name, r.model_key, term)
                           for term in counted_terms(r.source, r.text, metadata))
    return dict(counted)


def test_every_path_that_deletes_chunks_keeps_the_counts(
        own_engine: tuple[sa.Engine, str]) -> None:
    engine, _ = own_engine
    database.upgrade(engine)
    stores = {(index, profile.key): PgvectorStore(index, profile, engine)
              for index in ("developer", "user") for profile in (TINY, OTHER)}
    for (index, _), store in stores.items():
        load(store, [chunk("a.md", 0, f"Rebuild the {index} index", locale="en"),
                     chunk("a.md", 1, "The index again, in docs/api.md", locale="en"),
                     chunk("b.md", 0, "Ricostruire l'indice", locale="it")])
    assert stored_counts(engine) == recounted(engine)
    assert stored_counts(engine)[("user", TINY.key, "rebuild")] == 1

    with engine.begin() as conn:
        remove_sources(conn, ["developer"], ["a.md"])
    assert stored_counts(engine) == recounted(engine)
    assert ("developer", TINY.key, "rebuild") not in stored_counts(engine)

    with engine.begin() as conn:
        prune_other_models(conn, TINY.key)
    assert stored_counts(engine) == recounted(engine)
    assert {model for _, model, _ in stored_counts(engine)} == {TINY.key}

    # No writer updates a chunk today; one that does keeps the counts as well.
    terms = counted_terms("b.md", "Pages only", {"locale": "en"})
    with engine.begin() as conn:
        conn.execute(sa.text(
            "UPDATE rag_chunks SET text = 'Pages only', metadata = '{\"locale\": \"en\"}', "
            "terms = :terms WHERE source = 'b.md' AND index_name = 'user'"), {"terms": terms})
    assert stored_counts(engine) == recounted(engine)
    assert stored_counts(engine)[("user", TINY.key, "page")] == 1

    stores[("user", TINY.key)].reset()
    assert stored_counts(engine) == recounted(engine)
    assert {index for index, _, _ in stored_counts(engine)} == {"developer"}


def test_the_migration_counts_the_chunks_stored_before_it(
        own_engine: tuple[sa.Engine, str]) -> None:
    """Chunks written by a release before 0016 (no ``terms``) are read once by the
    upgrade; the index's counts then equal a driver's that wrote them itself."""
    engine, _ = own_engine
    rows = [("developer", TINY.key, "a.md", 0, "Rebuild the index, see docs/api.md",
             {"locale": "en", "heading_breadcrumb": ["Index", "Rebuild"]}),
            ("developer", TINY.key, "b.md", 0, "Upgrade notes for v2.4.1", {"locale": "en"}),
            ("user", OTHER.key, "c.md", 0, "Ricostruire la città", {"locale": "it"})]
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO rag_chunks (index_name, model_key, source, ordinal, text, metadata, "
            "embedding) VALUES (:i, :k, :s, :o, :t, CAST(:m AS jsonb), '[1,0,0,0]')"),
            [{"i": i, "k": k, "s": s, "o": o, "t": t, "m": json.dumps(m)}
             for i, k, s, o, t, m in rows])

    database.upgrade(engine)

    assert stored_counts(engine) == recounted(engine)
    assert stored_counts(engine)[("developer", TINY.key, "doc")] == 1
    with engine.connect() as conn:
        assert conn.execute(sa.text(
            "SELECT count(*) FROM rag_chunks WHERE terms IS NULL")).scalar_one() == 0
    # Written after the upgrade, through the driver, by the triggers.
    load(PgvectorStore("developer", TINY, engine),
         [chunk("d.md", 0, "Another index page", locale="en")])
    assert stored_counts(engine)[("developer", TINY.key, "index")] == 2
    assert stored_counts(engine) == recounted(engine)


def test_the_migration_goes_back_and_forth(own_engine: tuple[sa.Engine, str]) -> None:
    """Down to 0015 drops the counts, the column and the triggers (a chunk written then is
    not counted by anything); up again counts every chunk, that one included."""
    from alembic import command

    engine, _ = own_engine
    database.upgrade(engine)
    load(PgvectorStore("developer", TINY, engine),
         [chunk("a.md", 0, "Rebuild the index", locale="en")])
    with engine.begin() as conn:
        config = database._alembic_config(engine)
        config.attributes["connection"] = conn
        command.downgrade(config, "0015")
    assert "rag_term_counts" not in sa.inspect(engine).get_table_names()
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO rag_chunks (index_name, model_key, source, ordinal, text, metadata, "
            "embedding) VALUES ('developer', :k, 'b.md', 0, 'Another index', "
            "'{\"locale\": \"en\"}', '[1,0,0,0]')"), {"k": TINY.key})

    database.upgrade(engine)

    assert stored_counts(engine)[("developer", TINY.key, "index")] == 2
    assert stored_counts(engine) == recounted(engine)


def _insert(conn: sa.Connection, source: str, text: str) -> None:
    conn.execute(sa.text(
        "INSERT INTO rag_chunks (index_name, model_key, source, ordinal, text, metadata, "
        "embedding, terms) VALUES ('developer', :k, :s, 0, :t, '{\"locale\": \"en\"}', "
        "'[1,0,0,0]', :terms)"),
        {"k": TINY.key, "s": source, "t": text,
         "terms": counted_terms(source, text, {"locale": "en"})})


def test_two_writers_of_one_index_count_one_after_the_other(
        own_engine: tuple[sa.Engine, str]) -> None:
    """A delete that waits for another writer's insert of the same word counts from what
    that writer committed (a statement's snapshot taken before it would lose it), and two
    deletes of the two chunks holding a word leave nothing."""
    import threading

    engine, _ = own_engine
    database.upgrade(engine)
    with engine.begin() as conn:
        _insert(conn, "a.md", "Rebuild the index")
        _insert(conn, "c.md", "Index pages")
    with engine.connect() as writer:
        writer.begin()
        _insert(writer, "b.md", "The index again")  # not committed yet
        deleted = threading.Thread(target=lambda: _delete(engine, "a.md"))
        deleted.start()
        deleted.join(timeout=1.0)
        assert deleted.is_alive()  # waits for the writer's lock on the index
        writer.commit()
    deleted.join(timeout=30)
    assert stored_counts(engine) == recounted(engine)
    assert stored_counts(engine)[("developer", TINY.key, "index")] == 2

    both = [threading.Thread(target=lambda s=s: _delete(engine, s)) for s in ("b.md", "c.md")]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join(timeout=30)
    assert stored_counts(engine) == recounted(engine) == {}


def _delete(engine: sa.Engine, source: str) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM rag_chunks WHERE source = :s"), {"s": source})


def test_many_writers_of_one_index_keep_the_counts_exact(
        own_engine: tuple[sa.Engine, str]) -> None:
    """Four threads replacing overlapping sources of one (index, model) with overlapping
    words: no deadlock, and the counts equal a recount."""
    import random
    import threading

    engine, _ = own_engine
    database.upgrade(engine)
    store = PgvectorStore("developer", TINY, engine)
    vocabulary = ["index", "rebuild", "page", "source", "model", "upgrade", "switch", "prune",
                  "token", "chunk"]
    failures: list[BaseException] = []

    def write(seed: int) -> None:
        chooser = random.Random(seed)
        try:
            for _ in range(15):
                source = f"s{chooser.randrange(6)}.md"
                pieces = [chunk(source, n, " ".join(chooser.sample(vocabulary, 4)),
                                locale="en") for n in range(chooser.randrange(1, 4))]
                store.replace_sources(pieces, records(pieces, TINY))
        except BaseException as exc:  # collected: a thread's failure must fail the test
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    assert stored_counts(engine) == recounted(engine)


def test_an_index_read_by_another_release_gives_no_counts_until_counted_again(
        own_engine: tuple[sa.Engine, str], caplog: pytest.LogCaptureFixture) -> None:
    engine, _ = own_engine
    database.upgrade(engine)
    store = PgvectorStore("developer", TINY, engine)
    load(store, [chunk("a.md", 0, "Rebuild the index", locale="en")])
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO rag_chunks (index_name, model_key, source, ordinal, text, metadata, "
            "embedding, terms) VALUES ('developer', :k, 'b.md', 0, 'Index pages', "
            "'{\"locale\": \"en\"}', '[1,0,0,0]', ARRAY['', ' reading:0000', 'index'])"),
            {"k": TINY.key})
    with caplog.at_level("WARNING"):
        assert store.term_frequencies(["index"]) is None
        assert store.term_frequencies(["index"]) is None
    assert sum("index-docs` counts them again" in r.getMessage()
               for r in caplog.records) == 1

    assert store.stale_word_counts() == 1
    assert store.recount_words() == 1
    assert store.term_frequencies(["index"]) == (2, {"index": 2})
    assert stored_counts(engine) == recounted(engine)


def test_truncating_the_chunks_empties_the_counts(own_engine: tuple[sa.Engine, str]) -> None:
    engine, _ = own_engine
    database.upgrade(engine)
    load(PgvectorStore("developer", TINY, engine),
         [chunk("a.md", 0, "Rebuild the index", locale="en")])
    with engine.begin() as conn:
        conn.execute(sa.text("TRUNCATE rag_chunks, rag_sources"))
    assert stored_counts(engine) == {}


def test_the_migration_keeps_the_vector_indexes_and_reads_odd_metadata(
        own_engine: tuple[sa.Engine, str]) -> None:
    """The upgrade rewrites every row under its HNSW index; a chunk whose metadata is not
    an object is read as having none."""
    engine, _ = own_engine
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO rag_chunks (index_name, model_key, source, ordinal, text, metadata, "
            "embedding) VALUES ('developer', :k, 'a.md', 0, 'Rebuild the index', "
            "'\"x\"', '[1,0,0,0]')"), {"k": TINY.key})
    store = PgvectorStore("developer", TINY, engine)
    store.ensure_search_index()
    assert store.has_search_index()

    database.upgrade(engine)

    assert store.has_search_index()
    assert stored_counts(engine) == recounted(engine)
    assert store.term_frequencies(["index"]) == (1, {"index": 1})


def test_the_stores_lock_is_the_triggers() -> None:
    from importlib import import_module

    from ragplate.infra.stores import pgvector

    migration = import_module("ragplate.infra.migrations.versions.0016_docs_term_counts")
    assert migration.LOCK_SPACE == pgvector.COUNTS_LOCK_SPACE
    assert "hashtext(p.index_name || '/' || p.model_key)" in migration._LOCK


def test_removing_sources_waits_for_a_write_of_them_instead_of_deadlocking(
        own_engine: tuple[sa.Engine, str]) -> None:
    """A store write takes its index's word-count lock, then deletes the source's rows;
    ``sources remove`` takes the same lock before it deletes any row, so it waits for the
    write (it used to lock the rows first and wait for the lock inside the trigger, while
    the write waited for its rows: a deadlock)."""
    import threading

    engine, _ = own_engine
    database.upgrade(engine)
    store = PgvectorStore("developer", TINY, engine)
    load(store, [chunk("a.md", 0, "Rebuild the index", locale="en")])
    outcome: list[object] = []

    def remove() -> None:
        try:
            with engine.begin() as conn:
                outcome.append(remove_sources(conn, ["developer"], ["a.md"], [TINY.key]))
        except Exception as exc:  # collected: the thread's failure must fail the test
            outcome.append(exc)

    with engine.connect() as writer:
        writer.begin()
        store._lock_counts(writer)
        remover = threading.Thread(target=remove)
        remover.start()
        remover.join(timeout=1.0)
        assert remover.is_alive()  # waiting for the writer's lock, holding no row
        store._delete(writer, ["a.md"])
        writer.commit()
    remover.join(timeout=30)
    assert outcome == [{}]  # the write had deleted it: nothing left to remove
    assert stored_counts(engine) == recounted(engine) == {}
