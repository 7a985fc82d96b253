"""The ``embeddings-switch`` flow on Elasticsearch (the noida-db emulator, or a real cluster
with the ``elasticsearch`` marker), between the fast hashing profiles: while a switch runs
to its activation, and while a failed switch is abandoned, another thread searches the
developer index and the application records in a loop and never gets a failure, an empty
answer or a degraded search; the role aliases end on the serving model's indexes and the
other model's indexes are gone. A stalled switch resumes and leaves the target's indexes
exact."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragplate.catalog.entities import CMS_CONTENTS, SHIPPED
from ragplate.catalog.settings import Settings
from ragplate.catalog.switch import SwitchFailedError
from ragplate.infra.elasticsearch import indexes, names
from ragplate.infra.elasticsearch.client import connect
from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.tasks.records.search_index import refresh_records
from ragplate.tasks.retrieval.application import search_with_runtime
from tests.testing import switch as sw
from tests.testing.elasticsearch import Target

pytestmark = [pytest.mark.integration]

RECORDS = 30
QUESTION = "How do I switch the embedding model?"


@pytest.fixture(scope="module")
def env(prefect_api_url: str, ragplate_home: Path, es_target: Target) -> Iterator[Settings]:
    patch = pytest.MonkeyPatch()
    prefix = f"rpswitch{uuid.uuid4().hex[:6]}"
    for key, value in {**es_target.settings_env(),
                       "RAGPLATE_ELASTICSEARCH_INDEX_PREFIX": prefix}.items():
        patch.setenv(key, value)
    with sw.hashing_installation(ragplate_home, patch, RECORDS) as settings:
        assert settings.vector_store == "elasticsearch"
        runtime = Runtime(settings)
        # The records were loaded into PostgreSQL only: their search documents, as a
        # record write or `ragplate demo seed` writes them.
        refresh_records(runtime.record_index, runtime.engine, SHIPPED[CMS_CONTENTS],
                        [sw.profile(sw.H64)])
        yield settings
        client = connect(settings)
        for name in indexes.indexes_of(client, f"{prefix}_*"):
            indexes.delete_index(client, name)


class Searcher:
    """Searches in a loop as the API does: the developer index (the serving model read
    from PostgreSQL, the question embedded with it, its index searched) and application
    search in balanced mode (keyword and vector)."""

    def __init__(self, settings: Settings) -> None:
        self.runtime = Runtime(settings)
        self.stop = threading.Event()
        self.answers: Counter[str] = Counter()
        self.empty: list[str] = []
        self.failures: list[str] = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                profile = self.runtime.active_profile()
                vector = self.runtime.embedder(profile).embed_query(QUESTION)
                hits = self.runtime.store("developer", profile).search(vector, top_k=3)
                found = search_with_runtime(self.runtime, entity=CMS_CONTENTS,
                                            query="invoice refund", mode="balanced",
                                            locale="en")
            except Exception as exc:
                self.failures.append(f"{exc.__class__.__name__}: {exc}")
            else:
                self.answers[profile.key] += 1
                if not hits:
                    self.empty.append(f"documentation, {profile.key}")
                if not found.hits or found.meta.degraded_reason is not None:
                    self.empty.append(f"application search, {found.meta}")
            time.sleep(0.01)

    def __enter__(self) -> Searcher:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)


def run_flow(**parameters: Any) -> Any:
    from ragplate.flows.embeddings_switch import embeddings_switch

    return embeddings_switch(return_state=True, **parameters)


def test_search_never_fails_or_empties_through_a_switch_and_an_abandon(
    env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGPLATE_SWITCH_PRUNE_GRACE_SECONDS", "1")
    get_settings.cache_clear()
    settings = get_settings()
    runtime = Runtime(settings)
    sw.reset_switch(runtime.engine)
    before = sw.serving(runtime.engine)
    target = sw.H48 if before == sw.H64 else sw.H64
    client = connect(settings)
    alias = names.docs_alias(settings.elasticsearch_index_prefix, "developer")

    with Searcher(settings) as searcher:
        started = run_flow(action="start", profile=target)
        assert started.is_completed()
        assert sw.serving(runtime.engine) == target
        assert indexes.alias_targets(client, alias) == [
            names.docs_index(settings.elasticsearch_index_prefix, "developer", target)]

        monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "fail:rag:user#1:99")
        failed = run_flow(action="start", profile=before)
        with pytest.raises(SwitchFailedError):
            failed.result()
        monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS")
        restored = run_flow(action="abandon")
        assert restored.result()["outcome"] == "restored"
        time.sleep(0.3)

    assert searcher.failures == [] and searcher.empty == [], searcher.answers
    assert searcher.answers[before] > 0 and searcher.answers[target] > 0
    assert sw.serving(runtime.engine) == target
    prefix = settings.elasticsearch_index_prefix
    left = indexes.indexes_of(client, f"{prefix}_docs_*") + indexes.indexes_of(
        client, f"{prefix}_records_*")
    assert left == [*sorted(names.docs_index(prefix, index, target)
                            for index in ("developer", "user")),
                    names.records_index(prefix, CMS_CONTENTS, target)]
    assert indexes.alias_targets(client, alias) == [
        names.docs_index(prefix, "developer", target)]


def test_a_stalled_switch_resumes_and_its_indexes_are_exact(
    env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragplate.infra.switch_state import read_state

    monkeypatch.setenv("RAGPLATE_INDEX_CHUNK_STALL_SECONDS", "1")
    monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "hang:cms.contents#2:4")
    get_settings.cache_clear()
    runtime = Runtime(get_settings())
    sw.reset_switch(runtime.engine)
    before = sw.serving(runtime.engine)
    target = sw.H48 if before == sw.H64 else sw.H64

    stalled = run_flow(action="start", profile=target)

    assert stalled.is_failed()
    stored = read_state(runtime.engine)
    assert (stored.status, stored.phase, stored.failure) == ("failed", "indexes", "stall")
    assert sw.serving(runtime.engine) == before
    monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS")
    monkeypatch.delenv("RAGPLATE_INDEX_CHUNK_STALL_SECONDS")
    get_settings.cache_clear()
    resumed = run_flow(action="resume")

    assert resumed.is_completed() and sw.serving(runtime.engine) == target
    assert runtime.record_index is not None
    assert runtime.record_index.count(CMS_CONTENTS, target) == RECORDS
    assert runtime.record_index.count(CMS_CONTENTS, before) == 0
    stored_sources = runtime.store("developer", sw.profile(target)).sources()
    assert set(stored_sources) == {f"faq-app-ragplate/{p.name}"
                                   for p in sw.PROJECT_DOCS.glob("*.md")}
