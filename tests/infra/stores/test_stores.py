"""The three documentation-store drivers: the shared contracts (vector search, keyword
search) plus driver specifics."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from ragplate.catalog.errors import ConfigurationError, StoreError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.stores import FilesystemStore, MemoryStore, SearchFilters, make_store
from ragplate.infra.stores.base import DocumentStore
from ragplate.infra.stores.pgvector import PgvectorStore, hnsw_index_name
from tests.testing.document_store_contract import (
    OTHER,
    TINY,
    WIDE,
    DocumentStoreContract,
    Q,
    StoreFactory,
    basic_items,
    item,
    load,
    records,
    vec,
)
from tests.testing.keyword_search_contract import KeywordSearchContract
from tests.testing.term_statistics_contract import TermStatisticsContract


def _isolated_factory(build: StoreFactory) -> Iterator[StoreFactory]:
    """Unique index names per test (stable within it), everything reset afterwards."""
    token = uuid.uuid4().hex[:8]
    made: list[DocumentStore] = []

    def make(index: str, profile: EmbeddingProfile) -> DocumentStore:
        store = build(f"{index}-{token}", profile)
        made.append(store)
        return store

    yield make
    for store in made:
        store.reset()


class TestMemoryStore(DocumentStoreContract, KeywordSearchContract, TermStatisticsContract):
    """The contracts on the in-process driver."""

    @pytest.fixture
    def store_factory(self) -> Iterator[StoreFactory]:
        yield from _isolated_factory(MemoryStore)


class TestFilesystemStore(DocumentStoreContract, KeywordSearchContract, TermStatisticsContract):
    """The contracts on the single-file driver, plus its file handling."""

    @pytest.fixture
    def directory(self, tmp_path: Path) -> Path:
        return tmp_path / "stores"

    @pytest.fixture
    def store_factory(self, directory: Path) -> StoreFactory:
        return lambda index, profile: FilesystemStore(index, profile, directory)

    def test_one_file_per_index_and_model(self, store_factory: StoreFactory, directory: Path):
        for index, profile in [("developer", TINY), ("user", TINY), ("developer", OTHER)]:
            load(store_factory(index, profile), basic_items())
        names = sorted(p.name for p in directory.iterdir())
        assert len(names) == 3 and all(n.endswith(".npz") for n in names)
        assert any(n.startswith("developer--openai_compatible-test-other-") for n in names)

    def test_atomic_writes_leave_no_temp_files(self, store: FilesystemStore, directory: Path):
        load(store, basic_items())
        new = [item("a", 0, Q)]
        store.replace_sources(new, records(new, TINY, "v2"))
        store.delete_sources(["b"])
        assert [p.name for p in directory.iterdir()] == [store.path.name]

    def test_failed_publish_keeps_old_file_and_no_temp(
        self, store: FilesystemStore, directory: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        load(store, basic_items())
        before = store.path.read_bytes()

        def crash(src: str, dst: str) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(os, "replace", crash)
        with pytest.raises(OSError, match="disk full"):
            store.delete_sources(["a"])
        monkeypatch.undo()
        assert store.path.read_bytes() == before
        assert [p.name for p in directory.iterdir()] == [store.path.name]
        assert store.count() == 4

    def test_second_instance_rereads_after_external_write(
        self, store: FilesystemStore, directory: Path
    ) -> None:
        reader = FilesystemStore("developer", TINY, directory)
        load(store, basic_items()[:1])
        assert reader.count() == 1  # cached from here on
        load(store, basic_items()[1:])
        assert reader.count() == 4
        assert [h.source for h in reader.search(Q, top_k=2)] == ["a", "b"]

    @pytest.mark.parametrize("garbage", [b"not a zip", b"PK\x03\x04truncated"])
    def test_corrupt_file_names_the_file(self, store: FilesystemStore, garbage: bytes) -> None:
        load(store, basic_items())
        store.path.write_bytes(garbage)
        with pytest.raises(StoreError, match="corrupt") as error:
            store.count()
        assert str(store.path) in str(error.value)

    def test_reset_deletes_only_its_file(self, store_factory: StoreFactory, directory: Path):
        developer, user = store_factory("developer", TINY), store_factory("user", TINY)
        load(developer, basic_items())
        load(user, basic_items())
        assert isinstance(developer, FilesystemStore) and isinstance(user, FilesystemStore)
        developer.reset()
        assert not developer.path.exists()
        assert [p.name for p in directory.iterdir()] == [user.path.name]


@pytest.mark.integration
class TestPgvectorStore(DocumentStoreContract, KeywordSearchContract, TermStatisticsContract):
    """The contracts on PostgreSQL + pgvector, plus the HNSW index life cycle."""

    @pytest.fixture
    def store_factory(self, engine: sa.Engine) -> Iterator[StoreFactory]:
        yield from _isolated_factory(lambda i, p: PgvectorStore(i, p, engine))

    @staticmethod
    def index_definition(engine: sa.Engine, name: str) -> str | None:
        with engine.connect() as conn:
            sql = "SELECT indexdef FROM pg_indexes WHERE indexname = :n"
            return conn.execute(sa.text(sql), {"n": name}).scalar()

    def test_first_load_defers_the_hnsw_index(self, store: PgvectorStore, engine: sa.Engine):
        load(store, basic_items())
        assert not store.has_search_index()
        store.ensure_search_index()
        store.ensure_search_index()  # idempotent
        definition = self.index_definition(engine, store.index_name)
        assert store.index_name == hnsw_index_name(store.index, TINY.key)
        assert definition is not None
        assert "USING hnsw (((embedding)::vector(4)) vector_cosine_ops)" in definition
        assert f"index_name = '{store.index}'" in definition
        assert "model_key = 'local:test/tiny'" in definition

    def test_search_builds_a_missing_index(self, store: PgvectorStore) -> None:
        assert store.search(Q, top_k=1) == [] and not store.has_search_index()
        load(store, basic_items())
        assert store.search(Q, top_k=1)[0].source == "a"
        assert store.has_search_index()

    def test_later_writes_build_a_missing_index(self, store: PgvectorStore) -> None:
        load(store, basic_items()[:2])
        load(store, basic_items()[2:])
        assert store.has_search_index()

    def test_reset_drops_the_index(self, store: PgvectorStore, engine: sa.Engine) -> None:
        load(store, basic_items())
        store.ensure_search_index()
        store.reset()
        assert self.index_definition(engine, store.index_name) is None

    @pytest.fixture
    def wide(self, store_factory: StoreFactory) -> PgvectorStore:
        store = store_factory("user", WIDE)
        assert isinstance(store, PgvectorStore)
        vectors = np.random.default_rng(3).standard_normal((1000, 384)).astype(np.float32)
        audiences = ["user", "shared", "developer"]
        items = [
            item(f"s{i // 10}", i % 10, v, audience=audiences[i % 3], tenant_scope="global")
            for i, v in enumerate(vectors)
        ]
        load(store, items)
        store.ensure_search_index()
        return store

    def test_search_uses_the_hnsw_index(self, wide: PgvectorStore) -> None:
        plan = wide.explain(np.ones(384, dtype=np.float32), top_k=5, prefer_index=True)
        assert f"Index Scan using {wide.index_name}" in plan

    def test_filters_run_inside_sql(self, wide: PgvectorStore) -> None:
        filters = SearchFilters(
            audiences=("user",), tenant_scopes=("global",), permissions=frozenset()
        )
        plan = wide.explain(
            np.ones(384, dtype=np.float32), top_k=5, filters=filters, prefer_index=True
        )
        assert f"Index Scan using {wide.index_name}" in plan
        assert "(metadata ->> 'audience'::text) = ANY ('{user}'::text[])" in plan
        assert "required_permissions" in plan and "jsonb_array_elements_text" in plan
        hits = wide.search(np.ones(384, dtype=np.float32), top_k=20, filters=filters)
        assert len(hits) == 20 and {h.metadata["audience"] for h in hits} == {"user"}

    def test_quotes_in_names_are_safe(self, engine: sa.Engine) -> None:
        store = PgvectorStore(f"it's-{uuid.uuid4().hex[:6]}", TINY, engine)
        try:
            load(store, basic_items())
            store.ensure_search_index()
            assert store.search(Q, top_k=1)[0].source == "a"
        finally:
            store.reset()

    def test_backslash_in_names_is_refused(self, engine: sa.Engine) -> None:
        with pytest.raises(ConfigurationError, match="backslash"):
            PgvectorStore("dev\\x", TINY, engine)

    def test_make_store_pgvector(self, settings: Settings, engine: sa.Engine) -> None:
        store = make_store("pgvector", index="developer", profile=TINY, settings=settings)
        assert isinstance(store, PgvectorStore) and store.engine is engine


def test_make_store_local_drivers(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    memory = make_store("memory", index="user", profile=TINY, settings=settings)
    assert isinstance(memory, MemoryStore) and memory.index == "user"
    files = make_store("filesystem", index="developer", profile=TINY, settings=settings)
    assert isinstance(files, FilesystemStore)
    assert files.path.parent == tmp_path.resolve() / "stores"


def test_make_store_unknown_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="'chroma'"):
        make_store("chroma", index="user", profile=TINY, settings=Settings(home=tmp_path))


def test_memory_instances_share_state_until_reset() -> None:
    name = f"shared-{uuid.uuid4().hex[:8]}"
    first, second = MemoryStore(name, TINY), MemoryStore(name, TINY)
    load(first, [item("a", 0, vec(1, 0, 0, 0))])
    assert second.count() == 1
    second.reset()
    assert first.count() == 0
