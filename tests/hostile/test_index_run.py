"""``index-rag-docs`` over a hostile root, end to end: the refused files stop the run before
anything is written, each named on its own line; without them the run indexes the root
and never a byte from outside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragplate.bench.hostile import SECRET, write_hostile_corpus
from ragplate.catalog.errors import SourcesError
from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import DocumentStore
from ragplate.tasks.retrieval.documentation import keyword_store
from tests.testing.corpus import write_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PREFIX = "hostile-run"
PAGE = "# Billing\n\nInvoices are sent on the first day of each month.\n"


@pytest.fixture
def store(prefect_api_url: str, settings: Settings) -> Iterator[DocumentStore]:
    runtime = Runtime(settings)
    store = runtime.store("developer", runtime.active_profile())
    yield store
    store.delete_sources([s for s in store.sources() if s.startswith(f"{PREFIX}/")])


def index(root: Path) -> list[dict[str, object]]:
    from ragplate.flows.index_docs import index_rag_docs

    return index_rag_docs(profile="developer", path=str(root), prefix=PREFIX, full=True)


def test_the_refused_files_stop_the_run_each_named_and_nothing_is_written(
    tmp_path: Path, store: DocumentStore
) -> None:
    root = write_corpus(tmp_path / "root", {"billing.md": PAGE})
    files = write_hostile_corpus(root, tmp_path / "outside", big_bytes=6_000_000)
    before = store.count(), dict(store.sources())

    with pytest.raises(SourcesError) as error:
        index(root)

    named = {line.strip().split(":")[0] for line in str(error.value).splitlines()[1:]}
    assert named == {f"{PREFIX}/{f.path}" for f in files if f.refused}
    assert (store.count(), dict(store.sources())) == before


def test_without_them_the_root_is_indexed_and_nothing_from_outside(
    tmp_path: Path, store: DocumentStore
) -> None:
    root = write_corpus(tmp_path / "root", {"billing.md": PAGE})
    write_hostile_corpus(root, tmp_path / "outside", refused=False)

    (row,) = index(root)

    indexed = {s for s in store.sources() if s.startswith(f"{PREFIX}/")}
    assert indexed == {f"{PREFIX}/billing.md", f"{PREFIX}/hostile/laughs.md",
                       f"{PREFIX}/hostile/deep.md", f"{PREFIX}/hostile/bom.md"}
    assert row["sources_read"] == 4
    found = keyword_store(store).keyword_search("hunter2 db_password credentials", top_k=10)
    assert [hit for hit in found if SECRET in hit.text] == []
