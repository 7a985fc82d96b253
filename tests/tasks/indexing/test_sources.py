"""``sources list`` / ``sources remove`` over the session's PostgreSQL and the file driver:
every model, one transaction, nothing removed when a label is unknown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.profiles import PROFILES
from ragplate.catalog.settings import Settings
from ragplate.cli import app
from ragplate.infra import postgres
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import DocumentStore
from ragplate.tasks.indexing.sources import list_sources, remove_sources_everywhere
from tests.testing.document_store_contract import item, load

pytestmark = pytest.mark.integration

SERVING = PROFILES["local:intfloat/multilingual-e5-small"]
OTHER = PROFILES["local:cnmoro/portuguese-multilingual-e5-small"]


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def fill(store: DocumentStore, labels: list[str]) -> None:
    load(store, [item(label, ordinal, unit(i * 10 + ordinal), f"{label} text {ordinal}")
                 for i, label in enumerate(labels) for ordinal in range(2)])


def stores(runtime: Runtime) -> dict[tuple[str, str], DocumentStore]:
    return {(index, p.key): runtime.store(index, p)
            for index in ("developer", "user") for p in (SERVING, OTHER)}


@pytest.fixture
def runtime(settings: Settings, engine: sa.Engine) -> Iterator[Runtime]:
    """Developer: a/one.md and a/two_x.md for both models, b/three.md for the other model
    only; user: a/one.md for the serving model."""
    runtime = Runtime(settings)
    every = stores(runtime)
    for store in every.values():
        store.reset()
    fill(every[("developer", SERVING.key)], ["a/one.md", "a/two_x.md"])
    fill(every[("developer", OTHER.key)], ["a/one.md", "a/two_x.md", "b/three.md"])
    fill(every[("user", SERVING.key)], ["a/one.md"])
    yield runtime
    for store in every.values():
        store.reset()


def test_sources_are_listed_once_with_their_models(runtime: Runtime) -> None:
    listed = list_sources(runtime, indexes=["developer", "user"])
    assert [(s.index, s.label, s.models, s.serving, s.chunks) for s in listed] == [
        ("developer", "a/one.md", tuple(sorted((SERVING.key, OTHER.key))), True, 2),
        ("developer", "a/two_x.md", tuple(sorted((SERVING.key, OTHER.key))), True, 2),
        ("developer", "b/three.md", (OTHER.key,), False, 2),
        ("user", "a/one.md", (SERVING.key,), True, 2)]
    assert listed[0].indexed_at is not None
    # A prefix is literal text: "_" is no wildcard.
    assert [s.label for s in list_sources(runtime, indexes=["developer"], prefix="a/two_")] == [
        "a/two_x.md"]
    assert list_sources(runtime, indexes=["developer"], prefix="a/two%") == []


def test_remove_deletes_a_source_of_every_model_and_leaves_the_rest(
    runtime: Runtime, engine: sa.Engine
) -> None:
    removal = remove_sources_everywhere(runtime, indexes=["developer"], labels=["a/one.md"])

    assert removal.deleted == {("developer", OTHER.key): (2, 1), ("developer", SERVING.key): (2, 1)}
    every = stores(runtime)
    assert "a/one.md" not in every[("developer", SERVING.key)].sources()
    assert "a/one.md" not in every[("developer", OTHER.key)].sources()
    assert "a/one.md" in every[("user", SERVING.key)].sources()  # the other index keeps it
    assert every[("developer", SERVING.key)].count() == 2
    with engine.connect() as conn:
        left = conn.execute(sa.text(
            "SELECT count(*) FROM rag_chunks WHERE index_name = 'developer' "
            "AND source = 'a/one.md'")).scalar_one()
    assert left == 0


def test_an_unknown_label_removes_nothing(runtime: Runtime) -> None:
    before = list_sources(runtime, indexes=["developer", "user"])
    with pytest.raises(InvalidInputError, match=r"no source 'a/nope.md' in the developer or "
                                                r"user index .* nothing was removed"):
        remove_sources_everywhere(runtime, indexes=["developer", "user"],
                                  labels=["a/one.md", "a/nope.md"])
    assert list_sources(runtime, indexes=["developer", "user"]) == before
    with pytest.raises(InvalidInputError, match="name at least one source"):
        remove_sources_everywhere(runtime, indexes=["developer"], labels=[" "])
    with pytest.raises(InvalidInputError, match="--index 'other'"):
        list_sources(runtime, indexes=["other"])


def test_the_file_driver_lists_and_removes_store_by_store(
    settings: Settings, engine: sa.Engine, tmp_path: Path
) -> None:
    runtime = Runtime(settings.model_copy(update={"vector_store": "filesystem",
                                                  "home": tmp_path}))
    try:
        every = stores(runtime)
        fill(every[("developer", SERVING.key)], ["a/one.md"])
        fill(every[("developer", OTHER.key)], ["a/one.md", "b/three.md"])

        assert [(s.label, s.serving)
                for s in list_sources(runtime, indexes=["developer"])] == [
            ("a/one.md", True), ("b/three.md", False)]
        removal = remove_sources_everywhere(runtime, indexes=["developer"],
                                            labels=["a/one.md"])
        assert removal.deleted == {("developer", SERVING.key): (2, 1),
                                   ("developer", OTHER.key): (2, 1)}
        assert [s.label for s in list_sources(runtime, indexes=["developer"])] == [
            "b/three.md"]
    finally:
        postgres.stop(tmp_path)  # the home's own server, started for its settings store


def test_the_cli_lists_as_json_and_removes(runtime: Runtime, ragplate_home: Path) -> None:
    cli = CliRunner()
    listed = cli.invoke(app, ["sources", "list", "--index", "developer", "--prefix", "b/",
                              "--json"])
    assert listed.exit_code == 0, listed.output
    assert [(s["label"], s["models"], s["serving"]) for s in json.loads(listed.stdout)] == [
        ("b/three.md", [OTHER.key], False)]
    removed = cli.invoke(app, ["sources", "remove", "b/three.md", "--json"])
    assert removed.exit_code == 0, removed.output
    assert json.loads(removed.stdout)["removed"] == [
        {"index": "developer", "model": OTHER.key, "chunks": 2, "sources": 1}]
    again = cli.invoke(app, ["sources", "remove", "b/three.md"])
    # The runner sees the error itself; ragplate.cli.main turns it into exit code 2.
    assert isinstance(again.exception, InvalidInputError) and again.exception.exit_code == 2
    assert "no source 'b/three.md'" in str(again.exception)


def test_remove_waits_for_no_index_run_and_removes_nothing_meanwhile(
    runtime: Runtime, engine: sa.Engine
) -> None:
    from ragplate.catalog.errors import ServiceError
    from ragplate.infra import locks

    before = list_sources(runtime, indexes=["developer", "user"])
    with locks.index_lock(engine) as acquired:
        assert acquired
        with pytest.raises(ServiceError, match="an index-docs run is writing") as caught:
            remove_sources_everywhere(runtime, indexes=["developer"], labels=["a/one.md"])
    assert caught.value.exit_code == 3
    assert list_sources(runtime, indexes=["developer", "user"]) == before
