"""Helpers of the embedding-switch tests: a private database per test module, short
records, the serving model's indexes, snapshots that prove "nothing changed", and the
``ragplate`` CLI as a subprocess (the process a test kills)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from ragplate.catalog.profiles import (
    PROFILES,
    EmbeddingProfile,
    enable_test_profiles,
    get_profile,
)
from ragplate.catalog.settings import Settings
from ragplate.infra import database, postgres, settings_store
from ragplate.infra.environment import get_settings
from ragplate.infra.models import make_embedder
from ragplate.infra.runtime import Runtime
from ragplate.tasks.records.content import load_published
from ragplate.tasks.switch import faults

H64 = "local:ragplate/hashing-64"
H48 = "local:ragplate/hashing-48"
E5 = "local:intfloat/multilingual-e5-small"
PT = "local:cnmoro/portuguese-multilingual-e5-small"

WORDS = (
    "invoice", "refund", "password", "account", "parcel", "warehouse", "report", "export",
    "backup", "tenant", "search", "index", "profile", "vector", "model", "deploy",
    "server", "queue", "worker", "release", "notes", "billing", "customer", "order",
    "payment", "shipping", "return", "policy", "privacy", "language", "help",
)


def short_records(count: int, words: int = 10, seed: int = 7) -> list[tuple[str, str]]:
    """``count`` (title, body) pairs of about ``words`` words, deterministic."""
    rng = np.random.default_rng(seed)
    pairs = []
    for n in range(count):
        picked = [WORDS[i] for i in rng.integers(0, len(WORDS), size=words)]
        pairs.append((f"Record {n} {picked[0]}", " ".join(picked[1:])))
    return pairs


def load_records(engine: sa.Engine, pairs: Sequence[tuple[str, str]],
                 profile: EmbeddingProfile, locales: Sequence[str] = ("en",)) -> list[int]:
    """Insert published ``cms.contents`` records and their vectors of ``profile``."""
    return load_published(engine, pairs, profile=profile, embedder=make_embedder(profile),
                          locales=locales)


def index_docs(runtime: Runtime, profile: EmbeddingProfile) -> None:
    """The developer and user indexes of ``profile`` over the configured roots, split as
    the switch and ``index-docs`` split them."""
    from ragplate.tasks.indexing import index
    from ragplate.tasks.indexing.read import developer_corpus, read_sources, user_corpus
    from ragplate.tasks.indexing.split import make_splitter, split_documents

    documents = read_sources(runtime.settings.all_roots())
    embedder = make_embedder(profile)
    splitter = make_splitter(runtime.settings)
    for name, corpus in (("developer", developer_corpus(documents)),
                         ("user", user_corpus(documents, runtime.policy))):
        store = runtime.store(name, profile)
        chunks = split_documents(corpus, splitter)
        for batch in index.make_batches(corpus, chunks, profile.key, batch_chunks=100,
                                        salt=repr(splitter)):
            index.write_batch(store, batch, index.embed_batch(embedder, batch))
        store.ensure_search_index()  # type: ignore[attr-defined]


def set_serving(engine: sa.Engine, key: str) -> None:
    """Make ``key`` the serving model directly (test setup only)."""
    with engine.begin() as conn:
        settings_store.set_active_profile(conn, key)


def reset_switch(engine: sa.Engine) -> None:
    """Forget any stored switch (test setup only)."""
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE embedding_switch SET status = 'idle', phase = NULL, "
                             "target = NULL, previous = NULL, data = '{}'::jsonb"))
    faults.reset()


def snapshot(engine: sa.Engine) -> dict[str, Any]:
    """Everything a refusal must leave as it was."""
    with engine.connect() as conn:
        def rows(sql: str) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in conn.execute(sa.text(sql))]

        return {
            "switch": rows("SELECT status, phase, target, previous, data::text, updated_at "
                           "FROM embedding_switch"),
            "settings": rows("SELECT key, value::text, updated_at FROM settings ORDER BY key"),
            "vectors": rows("SELECT model_key, count(*), max(created_at) FROM model_embeddings "
                            "GROUP BY model_key ORDER BY model_key"),
            "chunks": rows("SELECT index_name, model_key, count(*), max(id) FROM rag_chunks "
                           "GROUP BY 1, 2 ORDER BY 1, 2"),
            "sources": rows("SELECT index_name, model_key, count(*), max(indexed_at) "
                            "FROM rag_sources GROUP BY 1, 2 ORDER BY 1, 2"),
            "indexes": rows("SELECT indexname FROM pg_indexes WHERE tablename IN "
                            "('model_embeddings', 'rag_chunks') ORDER BY 1"),
        }


def vector_counts(engine: sa.Engine) -> dict[str, int]:
    """Rows of ``model_embeddings`` per model key."""
    with engine.connect() as conn:
        sql = "SELECT model_key, count(*) FROM model_embeddings GROUP BY 1"
        return {str(k): int(n) for k, n in conn.execute(sa.text(sql))}


def chunk_models(runtime: Runtime) -> set[str]:
    """Model keys holding documentation chunks: in ``rag_chunks``, or (on Elasticsearch)
    in an index of either hashing profile (whose record indexes must agree)."""
    if runtime.settings.vector_store != "elasticsearch":
        with runtime.engine.connect() as conn:
            return {str(k) for k in conn.execute(sa.text(
                "SELECT DISTINCT model_key FROM rag_chunks")).scalars()}
    held = {key for key in (H64, H48) for index in ("developer", "user")
            if runtime.store(index, profile(key)).count()}
    assert runtime.record_index is not None
    assert {key for key in (H64, H48) if runtime.record_index.count("cms.contents", key)
            } == held, "the record indexes of Elasticsearch follow the documentation's"
    return held


def index_records(runtime: Runtime, serving: EmbeddingProfile) -> None:
    """On Elasticsearch, the search documents of the records (loaded into PostgreSQL), as a
    record write or ``ragplate demo seed`` writes them."""
    from ragplate.catalog.entities import CMS_CONTENTS, SHIPPED
    from ragplate.tasks.records.search_index import refresh_records

    refresh_records(runtime.record_index, runtime.engine, SHIPPED[CMS_CONTENTS], [serving])


def drop_indexes(settings: Settings) -> None:
    """Delete every Elasticsearch index of the installation's prefix."""
    from ragplate.infra.elasticsearch import indexes
    from ragplate.infra.elasticsearch.client import connect

    client = connect(settings)
    for name in indexes.indexes_of(client, f"{settings.elasticsearch_index_prefix}_*"):
        indexes.delete_index(client, name)


@contextmanager
def private_database(home: Path, monkeypatch: pytest.MonkeyPatch,
                     **env: str) -> Iterator[Settings]:
    """A new database in the session's embedded server, made the one ``get_settings()``
    (so every ``Runtime()``) uses, with the test profiles declared; ``env`` adds
    ``RAGPLATE_*`` variables. Dropped afterwards."""
    import psycopg

    server = postgres.start(home)
    name = f"switch_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.libpq_url("postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = server.url(name)
    declared = dict(PROFILES)
    enable_test_profiles()
    monkeypatch.setenv("RAGPLATE_DATABASE_URL", url)
    monkeypatch.setenv("RAGPLATE_TEST_PROFILES", "true")
    monkeypatch.setenv("RAGPLATE_SWITCH_RETRY_DELAYS", "[0.2, 0.2]")
    monkeypatch.setenv("RAGPLATE_SWITCH_PRUNE_GRACE_SECONDS", "0")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    try:
        yield get_settings()
    finally:
        database.dispose(url)
        monkeypatch.undo()
        PROFILES.clear()
        PROFILES.update(declared)
        get_settings.cache_clear()
        with psycopg.connect(server.libpq_url("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def hashing_installation(home: Path, monkeypatch: pytest.MonkeyPatch,
                         records: int) -> Iterator[Settings]:
    """The fast switch tests' database: small chunk sizes, ``records`` short records and
    ``docs/`` indexed, served by the 64-dimension hashing profile."""
    with private_database(home, monkeypatch, RAGPLATE_RAG_CHUNK_SIZE="4",
                          RAGPLATE_INDEX_CHUNK_SIZE="10",
                          RAGPLATE_SWITCH_GATE_MARGIN="1") as settings:
        runtime = Runtime(settings)
        set_serving(runtime.engine, H64)
        load_records(runtime.engine, short_records(records), profile(H64))
        index_docs(runtime, profile(H64))
        yield settings


def ragplate(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m ragplate ARGS`` with this process's environment plus ``env``."""
    environ = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "ragplate", *args], env=environ,
                          capture_output=True, text=True, timeout=timeout, check=False)


def serving(engine: sa.Engine) -> str:
    """The serving model key."""
    return settings_store.active_profile_key(engine)


def profile(key: str) -> EmbeddingProfile:
    """A declared profile (test profiles included)."""
    return get_profile(key)


PROJECT_DOCS = Path(__file__).resolve().parents[2] / "docs"


def disagreeing_cases(runtime: Runtime, serving_key: str, target_key: str,
                      limit: int = 8) -> dict[str, Any]:
    """A gate dataset the target must fail: questions (the docs' headings) whose best
    source with the serving model is not in the target's top 5."""
    from ragplate.tasks.retrieval.documentation import retrieve_developer

    def top(key: str, query: str) -> list[str]:
        model = get_profile(key)
        hits = retrieve_developer(query, store=runtime.store("developer", model),
                                  embedder=make_embedder(model), top_k=5)
        return [h.source_label for h in hits]

    headings = sorted({line.lstrip("#").strip() for path in PROJECT_DOCS.glob("*.md")
                       for line in path.read_text().splitlines() if line.startswith("## ")})
    cases = []
    for n, query in enumerate(headings):
        best = top(serving_key, query)[:1]
        if best and best[0] not in top(target_key, query):
            cases.append({"id": f"c{n}", "query": query, "top_k": 5,
                          "expected_source_labels": best})
        if len(cases) == limit:
            break
    assert cases, "no question separates the two models"
    return {"version": "1", "cases": cases}
