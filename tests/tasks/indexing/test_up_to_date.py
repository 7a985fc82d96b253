"""An indexing run that would change nothing is answered without a flow run, and only
then: every kind of work or refusal leaves the decision to the flow."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import sqlalchemy as sa

from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.word_counts import reading_mark
from tests.testing.corpus import write_corpus

pytestmark = pytest.mark.integration

PREFIX = "utd"
FILES = {
    "setup.md": "# Setup\n\nRun the installer from the release page.\n",
    "usage.md": "# Usage\n\nStart the service and open the dashboard.\n",
}


def flow_rows(corpus: Path, **options: Any) -> list[dict[str, Any]]:
    from ragplate.flows.index_docs import index_rag_docs

    return index_rag_docs(profile="developer", path=str(corpus), prefix=PREFIX, **options)


def check(runtime: Runtime, corpus: Path, *, full: bool = False) -> list[dict[str, Any]] | None:
    from ragplate.tasks.indexing.up_to_date import up_to_date_rows

    return up_to_date_rows(runtime, profile="developer", path=str(corpus), prefix=PREFIX,
                           full=full)


@pytest.fixture()
def runtime(settings: Settings) -> Runtime:
    return Runtime(settings)


@pytest.fixture()
def corpus(tmp_path: Path, prefect_api_url: str, runtime: Runtime) -> Iterator[Path]:
    root = write_corpus(tmp_path / "docs", FILES)
    flow_rows(root)
    yield root
    runtime.store("developer").delete_sources(
        [s for s in runtime.store("developer").sources() if s.startswith(f"{PREFIX}/")])


def without_seconds(rows: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    assert rows is not None
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def test_an_unchanged_corpus_gets_the_rows_the_flow_would_return(
    runtime: Runtime, corpus: Path
) -> None:
    rows = check(runtime, corpus)

    assert without_seconds(rows) == without_seconds(flow_rows(corpus))
    assert without_seconds(rows) == [{"index": "developer", "sources_read": 2, "unchanged": 2,
                                      "re_embedded": 0, "deleted": 0, "chunks_written": 0}]


def test_an_edited_source_leaves_it_to_the_flow(runtime: Runtime, corpus: Path) -> None:
    (corpus / "setup.md").write_text("# Setup\n\nRun the new installer.\n")

    assert check(runtime, corpus) is None
    assert flow_rows(corpus)[0]["re_embedded"] == 1


def test_a_removed_source_leaves_it_to_the_flow(runtime: Runtime, corpus: Path) -> None:
    (corpus / "usage.md").unlink()

    assert check(runtime, corpus) is None
    assert flow_rows(corpus)[0]["deleted"] == 1


def test_a_new_source_leaves_it_to_the_flow(runtime: Runtime, corpus: Path) -> None:
    (corpus / "faq.md").write_text("# FAQ\n\nInvoices come monthly.\n")

    assert check(runtime, corpus) is None


def test_full_and_an_invalid_source_and_an_emptied_root_with_sources_leave_it_to_the_flow(
    runtime: Runtime, corpus: Path, tmp_path: Path
) -> None:
    assert check(runtime, corpus, full=True) is None
    (corpus / "bad.md").write_text("---\naudience: nobody\n---\n# Bad\n\nText.\n")
    assert check(runtime, corpus) is None  # the flow names the file
    (corpus / "bad.md").unlink()
    for name in FILES:
        (corpus / name).unlink()
    assert check(runtime, corpus) is None  # the flow warns or refuses


def test_sources_without_a_recorded_recipe_leave_it_to_the_flow(
    runtime: Runtime, corpus: Path, engine: sa.Engine
) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE rag_sources SET vector_recipe = '' "
                             "WHERE index_name = 'developer' AND source LIKE 'utd/%'"))

    assert check(runtime, corpus) is None
    flow_rows(corpus)
    assert check(runtime, corpus) is not None


def test_chunks_another_release_counted_leave_it_to_the_flow_which_counts_them_again(
    runtime: Runtime, corpus: Path, engine: sa.Engine
) -> None:
    """After a release that reads words otherwise, the next run counts the words of the
    stored chunks again from their text: nothing is embedded or written again."""
    with engine.begin() as conn:
        conn.execute(sa.text(
            "UPDATE rag_chunks SET terms = array_replace(terms, :mark, ' reading:older') "
            "WHERE index_name = 'developer' AND source LIKE 'utd/%'"),
            {"mark": reading_mark()})
    store = runtime.store("developer")
    assert store.stale_word_counts() == 2  # type: ignore[attr-defined]
    assert store.term_frequencies(["instal"]) is None  # type: ignore[attr-defined]

    assert check(runtime, corpus) is None
    rows = flow_rows(corpus)

    assert (rows[0]["re_embedded"], rows[0]["chunks_written"]) == (0, 0)
    assert store.stale_word_counts() == 0  # type: ignore[attr-defined]
    assert store.term_frequencies(["instal"]) is not None  # type: ignore[attr-defined]
    assert check(runtime, corpus) is not None


def test_a_recount_that_fails_leaves_the_run_and_its_writes_standing(
    runtime: Runtime, corpus: Path, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counts only weigh the coverage check's words: a failing recount is a warning,
    the run's writes stand, and the next run tries again."""
    from ragplate.catalog.errors import StoreError
    from ragplate.infra.stores.pgvector import PgvectorStore

    with engine.begin() as conn:
        conn.execute(sa.text(
            "UPDATE rag_chunks SET terms = array_replace(terms, :mark, ' reading:older') "
            "WHERE index_name = 'developer' AND source LIKE 'utd/%'"),
            {"mark": reading_mark()})
    (corpus / "setup.md").write_text("# Setup\n\nRun the new installer.\n")

    def fail(self: PgvectorStore) -> int:
        raise StoreError("pgvector store developer: connection lost")

    monkeypatch.setattr(PgvectorStore, "recount_words", fail)
    rows = flow_rows(corpus)

    assert rows[0]["re_embedded"] == 1
    store = runtime.store("developer")
    assert store.stale_word_counts() == 1  # type: ignore[attr-defined]
    assert check(runtime, corpus) is None
    monkeypatch.undo()
    flow_rows(corpus)
    assert store.stale_word_counts() == 0  # type: ignore[attr-defined]


def test_a_held_index_lock_is_refused_at_once_whatever_the_options(
    runtime: Runtime, corpus: Path, engine: sa.Engine
) -> None:
    from ragplate.catalog.errors import ServiceError
    from ragplate.infra import locks
    from ragplate.tasks.indexing.up_to_date import up_to_date_rows

    with locks.index_lock(engine) as acquired:  # as a run in another process holds it
        assert acquired
        for full, always_run in ((False, False), (True, False), (False, True)):
            with pytest.raises(ServiceError, match="another index-docs run is indexing") as e:
                up_to_date_rows(runtime, profile="developer", path=str(corpus),
                                prefix=PREFIX, full=full, always_run=always_run)
            assert e.value.exit_code == 3
    assert check(runtime, corpus) is not None


def test_an_empty_root_with_nothing_indexed_under_it_is_up_to_date_and_says_it_once(
    runtime: Runtime, corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from ragplate.tasks.indexing.up_to_date import up_to_date_rows

    empty = tmp_path / "empty"
    empty.mkdir()
    with caplog.at_level(logging.WARNING):
        rows = up_to_date_rows(runtime, profile="developer", path=str(empty),
                               prefix="utd-empty", full=False)

    assert without_seconds(rows) == [{"index": "developer", "sources_read": 0, "unchanged": 0,
                                      "re_embedded": 0, "deleted": 0, "chunks_written": 0}]
    said = [r.getMessage() for r in caplog.records if "holds no Markdown file" in r.getMessage()]
    assert said == [f"documentation root {empty.resolve()} (prefix 'utd-empty') holds no "
                    "Markdown file"]


def test_reading_warnings_are_shown_with_an_up_to_date_answer_only(
    runtime: Runtime, corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (corpus / "odd.md").write_text("---\nowner: [unclosed\n---\n# Odd\n\nText.\n")
    with caplog.at_level(logging.WARNING):
        assert check(runtime, corpus) is None  # a new source: the flow reads it and says it
    assert not [r for r in caplog.records if "invalid YAML" in r.getMessage()]

    flow_rows(corpus)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert check(runtime, corpus) is not None
    assert [r.getMessage().split(":")[0] for r in caplog.records
            if "invalid YAML front matter" in r.getMessage()] == [f"{PREFIX}/odd.md"]


@pytest.fixture()
def orphan(corpus: Path) -> Iterator[str]:
    """An ``index-rag-docs`` flow run left RUNNING, as a SIGKILLed index-docs leaves it."""
    from prefect.client.orchestration import get_client
    from prefect.states import Running

    from ragplate.flows.index_docs import index_rag_docs

    with get_client(sync_client=True) as client:
        run = client.create_flow_run(index_rag_docs, parameters={"profile": "developer"},
                                     state=Running())
    yield str(run.id)
    flow_rows(corpus)  # a flow run marks it, whatever the test did


def state_of(run_id: str) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(UUID(run_id)).state


def test_an_up_to_date_answer_marks_runs_a_dead_process_left_running_as_crashed(
    corpus: Path, orphan: str, caplog: pytest.LogCaptureFixture
) -> None:
    from prefect.client.schemas.objects import StateType

    from ragplate.infra.environment import get_settings
    from ragplate.infra.flow_runs import running_count
    from ragplate.infra.prefect_server import running_api_url
    from ragplate.tasks.indexing.up_to_date import FLOW_NAME

    runtime = Runtime(get_settings())  # this home's server, as the command line finds it
    url = running_api_url(runtime.settings)
    assert url is not None and running_count(url, FLOW_NAME) == 1
    with caplog.at_level(logging.WARNING):
        assert check(runtime, corpus) is not None

    state = state_of(orphan)
    assert state is not None and state.type == StateType.CRASHED
    assert "the next run of index-rag-docs found its lock free" in (state.message or "")
    assert [r.getMessage() for r in caplog.records if "marked CRASHED" in r.getMessage()] == [
        f"flow run {state_name(orphan)} ({orphan}) of index-rag-docs was left RUNNING by a "
        "process that is gone; marked CRASHED"]
    assert running_count(url, FLOW_NAME) == 0


def state_name(run_id: str) -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(UUID(run_id)).name


def test_with_no_server_up_an_up_to_date_answer_starts_none(
    corpus: Path, orphan: str, ragplate_home: Path
) -> None:
    from prefect.client.schemas.objects import StateType

    from ragplate.infra import prefect_server
    from ragplate.infra.ports import free_port

    elsewhere = Settings(home=ragplate_home, prefect_port=free_port())  # no server there
    assert prefect_server.running_api_url(elsewhere) is None
    server = prefect_server.status(elsewhere)["pid"]  # the session's, for another port

    assert check(Runtime(elsewhere), corpus) is not None

    assert prefect_server.status(elsewhere)["pid"] == server  # neither replaced nor started
    assert prefect_server.healthy(prefect_server.api_url_on(elsewhere.prefect_port)) is False
    state = state_of(orphan)  # left to the next flow run
    assert state is not None and state.type == StateType.RUNNING
