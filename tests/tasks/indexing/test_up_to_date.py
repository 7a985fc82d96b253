"""An indexing run that would change nothing is answered without a flow run, and only
then: every kind of work or refusal leaves the decision to the flow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
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
    assert without_seconds(rows) == [{"index": "developer", "sources read": 2, "unchanged": 2,
                                      "re-embedded": 0, "deleted": 0, "chunks written": 0}]


def test_an_edited_source_leaves_it_to_the_flow(runtime: Runtime, corpus: Path) -> None:
    (corpus / "setup.md").write_text("# Setup\n\nRun the new installer.\n")

    assert check(runtime, corpus) is None
    assert flow_rows(corpus)[0]["re-embedded"] == 1


def test_a_removed_source_leaves_it_to_the_flow(runtime: Runtime, corpus: Path) -> None:
    (corpus / "usage.md").unlink()

    assert check(runtime, corpus) is None
    assert flow_rows(corpus)[0]["deleted"] == 1


def test_a_new_source_leaves_it_to_the_flow(runtime: Runtime, corpus: Path) -> None:
    (corpus / "faq.md").write_text("# FAQ\n\nInvoices come monthly.\n")

    assert check(runtime, corpus) is None


def test_full_and_an_invalid_source_and_an_emptied_root_leave_it_to_the_flow(
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


def test_a_held_index_lock_leaves_it_to_the_flow(runtime: Runtime, corpus: Path,
                                                 engine: sa.Engine) -> None:
    from ragplate.infra import locks

    with locks.index_lock(engine) as acquired:  # as a run in another process holds it
        assert acquired
        assert check(runtime, corpus) is None
    assert check(runtime, corpus) is not None
