"""``ragplate index-docs`` as an operator runs it, where its check before a flow run
decides: a run while another holds the index lock is refused at once without a flow run,
an empty root with nothing indexed under it is up to date, one whose sources are indexed
is refused without a flow run, and each warning of reading the sources is printed once,
whether a flow run follows or not."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from tests.testing.corpus import write_corpus
from tests.testing.index_docs import index_docs_process

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PREFIX = "precheck"
FILES = {
    "setup.md": "# Setup\n\nRun the installer from the release page.\n",
    "odd.md": "---\nowner: [unclosed\n---\n# Odd\n\nThe front matter above is not YAML.\n",
}
BAD_YAML = f"{PREFIX}/odd.md: invalid YAML front matter"


def flow_runs() -> int:
    """How many ``index-rag-docs`` flow runs the session's Prefect server holds."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    with get_client(sync_client=True) as client:
        return client.count_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["index-rag-docs"])))


def test_a_run_while_another_holds_the_index_lock_exits_3_without_a_flow_run(
    ragplate_home: Path, prefect_api_url: str, engine: sa.Engine, tmp_path: Path
) -> None:
    from ragplate.infra import locks

    root = write_corpus(tmp_path / "docs", {"setup.md": FILES["setup.md"]})
    before = flow_runs()
    with locks.index_lock(engine) as acquired:  # as a run in another process holds it
        assert acquired
        runs = [index_docs_process(ragplate_home, prefect_api_url, "--path", str(root),
                                   "--prefix", PREFIX, "--profile", "developer", *options)
                for options in ((), ("--full",), ("--always-run",))]

    for done in runs:
        assert done.returncode == 3, done.stderr
        assert done.stderr == ("Error: another index-docs run is indexing this database; "
                               "nothing was changed: run again when it has finished\n")
        assert done.stdout == ""
    assert flow_runs() == before


def test_an_empty_root_with_nothing_indexed_under_it_is_up_to_date(
    ragplate_home: Path, prefect_api_url: str, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ("--path", str(empty), "--profile", "developer")
    # The first run of a database builds its search index through the flow.
    assert index_docs_process(ragplate_home, prefect_api_url, *args).returncode == 0
    before = flow_runs()

    again = index_docs_process(ragplate_home, prefect_api_url, *args)

    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Up to date: ")
    assert again.stderr.splitlines() == [
        f"WARNING ragplate.tasks.indexing.up_to_date: documentation root {empty.resolve()} "
        "(prefix 'empty') holds no Markdown file"]
    assert flow_runs() == before


def test_an_emptied_root_whose_sources_are_indexed_is_refused_without_a_flow_run(
    ragplate_home: Path, prefect_api_url: str, settings: Settings, tmp_path: Path
) -> None:
    root = write_corpus(tmp_path / "emptied", {"setup.md": FILES["setup.md"]})
    args = ("--path", str(root), "--prefix", "emptied", "--profile", "developer")
    assert index_docs_process(ragplate_home, prefect_api_url, *args).returncode == 0
    store = Runtime(settings).store("developer")
    try:
        (root / "setup.md").unlink()
        before = flow_runs()

        refused = [index_docs_process(ragplate_home, prefect_api_url, *args, *options)
                   for options in ((), ("--full",))]

        for done in refused:
            assert done.returncode == 2, done.stderr
            assert done.stderr.splitlines()[-1] == (
                f"Error: documentation root {root.resolve()} (prefix 'emptied') holds no "
                "Markdown file, but the developer index holds 1 of its sources. Nothing was "
                "changed. An empty root is usually a missing checkout or mount: restore it, "
                "or run again with --allow-empty to delete them.")
        assert flow_runs() == before
        assert "emptied/setup.md" in store.sources()
    finally:
        store.delete_sources(["emptied/setup.md"])


def test_each_warning_of_reading_the_sources_is_printed_once(
    ragplate_home: Path, prefect_api_url: str, settings: Settings, tmp_path: Path
) -> None:
    root = write_corpus(tmp_path / "docs", FILES)
    args = ("--path", str(root), "--prefix", PREFIX, "--profile", "developer")
    try:
        first = index_docs_process(ragplate_home, prefect_api_url, *args)
        again = index_docs_process(ragplate_home, prefect_api_url, *args)
    finally:
        Runtime(settings).store("developer").delete_sources(
            [f"{PREFIX}/{name}" for name in FILES])

    assert first.returncode == 0, first.stderr
    assert "Up to date" not in first.stdout  # a flow run read them
    assert first.stderr.count(BAD_YAML) == 1, first.stderr
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Up to date: ")
    assert again.stderr.count(BAD_YAML) == 1, again.stderr
