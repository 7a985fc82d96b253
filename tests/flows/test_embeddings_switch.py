"""The ``embeddings-switch`` flow in-process, between the fast hashing test profiles, on a
private database: a full switch, a flaky chunk, a stall, rounds spent, resume and abandon,
records edited during a switch, the evaluation gate, and what the Prefect UI shows. Every
test runs on PostgreSQL alone and with Elasticsearch (the noida-db emulator, and a real
cluster when ``RAGPLATE_ELASTICSEARCH_URL`` is set) holding the indexes; there a thread
also searches throughout a switch and an abandon.

The tests of this module share one database and run in file order; each starts with no
switch stored and switches from whatever serves to the other hashing profile.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from ragplate.catalog.settings import Settings
from ragplate.catalog.switch import SwitchFailedError
from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import SourceRecord
from ragplate.infra.switch_state import read_state
from tests.testing import switch as sw
from tests.testing.people import bearer

pytestmark = [pytest.mark.integration]

RECORDS = 45


@pytest.fixture(scope="module", params=[
    pytest.param("pgvector", id="pgvector"),
    pytest.param("emulator", id="noida-emulator"),
    pytest.param("cluster", id="cluster", marks=pytest.mark.elasticsearch),
])
def env(request: pytest.FixtureRequest, prefect_api_url: str,
        ragplate_home: Path) -> Iterator[Settings]:
    """The module's installation, on PostgreSQL alone or with Elasticsearch (the noida-db
    emulator, or a real cluster) holding the documentation and record indexes."""
    patch = pytest.MonkeyPatch()
    prefix = None
    if request.param != "pgvector":
        target = request.getfixturevalue(f"es_{request.param}_target")
        prefix = f"rpsw{uuid.uuid4().hex[:8]}"
        for key, value in {**target.settings_env(),
                           "RAGPLATE_ELASTICSEARCH_INDEX_PREFIX": prefix}.items():
            patch.setenv(key, value)
    with sw.hashing_installation(ragplate_home, patch, RECORDS) as settings:
        if prefix is not None:
            sw.index_records(Runtime(settings), sw.profile(sw.H64))
        yield settings
        if prefix is not None:
            sw.drop_indexes(settings)


@pytest.fixture
def runtime(env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """No switch stored, no fault injected and the module's settings when a test starts
    (a test's own setting changes end with it)."""
    monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS", raising=False)
    get_settings.cache_clear()
    runtime = Runtime(get_settings())
    sw.reset_switch(runtime.engine)
    yield runtime
    sw.reset_switch(runtime.engine)
    monkeypatch.undo()
    get_settings.cache_clear()


def other(runtime: Runtime) -> str:
    """The hashing profile that does not serve."""
    return sw.H48 if sw.serving(runtime.engine) == sw.H64 else sw.H64


def run_flow(**parameters: Any) -> tuple[Any, str]:
    """One flow run: (its final Prefect state, its id)."""
    from ragplate.flows.embeddings_switch import embeddings_switch

    state = embeddings_switch(return_state=True, **parameters)
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None
    return state, str(flow_run_id)


def task_runs(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return list(client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))))


def artifacts(flow_run_id: str) -> dict[str, Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return {a.key: a for a in found}


def assert_serves(runtime: Runtime, key: str) -> None:
    """``key`` serves and is the only model left, with every record and every file."""
    engine = runtime.engine
    assert sw.serving(engine) == key
    assert sw.vector_counts(engine) == {key: RECORDS}
    assert sw.chunk_models(runtime) == {key}
    assert read_state(engine).status == "idle"
    with engine.connect() as conn:
        duplicates = conn.execute(sa.text(
            "SELECT count(*) FROM (SELECT index_name, source, ordinal FROM rag_chunks "
            "GROUP BY 1, 2, 3 HAVING count(*) > 1) d")).scalar_one()
    assert duplicates == 0


def test_a_switch_builds_beside_and_activates_with_one_task_run_per_chunk(
    runtime: Runtime,
) -> None:
    target, before = other(runtime), sw.serving(runtime.engine)

    state, flow_run_id = run_flow(action="start", profile=target)

    summary = state.result()
    assert summary["outcome"] == "activated" and summary["serving"] == target
    assert summary["pruned"]["vector_rows_deleted"] == RECORDS
    assert_serves(runtime, target)
    last = read_state(runtime.engine).last or {}
    assert (last["previous"], last["target"], last["gate"]["passed"]) == (before, target, True)
    names = [t.name for t in task_runs(flow_run_id)]
    for phase in ("begin", "preflight", "embeddings", "indexes", "verify", "activate", "prune"):
        assert f"switch-{phase}" in {n.rsplit("-", 1)[0] for n in names}
    # 45 records in ranges of 10: five entity chunks, in indexes and again in verify.
    entity = sorted(n for n in names if n.startswith("indexes cms.contents#"))
    assert entity == [f"indexes cms.contents#{n}" for n in range(1, 6)]
    assert len([n for n in names if n.startswith("verify cms.contents#")]) == 5
    rag = [n for n in names if n.startswith("indexes rag:developer#")]
    assert len(rag) == -(-len(list((sw.PROJECT_DOCS).glob("*.md"))) // 4)
    found = artifacts(flow_run_id)
    assert found["embeddings-switch-progress"].data == 100.0
    assert "activated" in str(found["embeddings-switch-status"].data)


def test_a_chunk_failing_twice_is_retried_not_failed(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = other(runtime)
    monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "fail:rag:developer#2:2")

    state, flow_run_id = run_flow(action="start", profile=target)

    assert state.is_completed()
    assert_serves(runtime, target)
    flaky = [t for t in task_runs(flow_run_id) if t.name == "indexes rag:developer#2"]
    assert len(flaky) == 1
    assert flaky[0].run_count == 3 and flaky[0].state.is_completed()
    # Both failed tries failed before writing: nothing was written twice.
    assert (read_state(runtime.engine).last or {})["chunks_rewritten"] == 0


def test_a_stall_fails_naming_the_queue_and_worker_and_resume_writes_only_pending(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, before = other(runtime), sw.serving(runtime.engine)
    monkeypatch.setenv("RAGPLATE_INDEX_CHUNK_STALL_SECONDS", "4")
    monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "hang:cms.contents#3:9")
    get_settings.cache_clear()

    state, _ = run_flow(action="start", profile=target)

    assert state.is_failed()
    with pytest.raises(SwitchFailedError) as failure:
        state.result()
    message = str(failure.value)
    assert "stalled" in message and "'embeddings-index'" in message
    assert "worker: the task runner of flow run" in message
    stored = read_state(runtime.engine)
    assert (stored.status, stored.phase, stored.failure) == ("failed", "indexes", "stall")
    assert stored.plan is not None
    written_before = {c.id for c in stored.plan.chunks if c.written}
    assert {"cms.contents#1", "cms.contents#2"} <= written_before
    assert sw.serving(runtime.engine) == before  # nothing served by the target yet

    monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS")
    resumed, flow_run_id = run_flow(action="resume")

    assert resumed.is_completed()
    assert_serves(runtime, target)
    rewritten = {t.name.split(" ", 1)[1] for t in task_runs(flow_run_id)
                 if t.name.startswith("indexes ")}
    assert rewritten and not rewritten & written_before


def fail_a_switch(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> str:
    """Start a switch to the other profile that fails in indexes (a chunk that never
    writes); returns its target. Faults are off again afterwards."""
    target = other(runtime)
    monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "fail:rag:user#1:99")
    state, _ = run_flow(action="start", profile=target)
    with pytest.raises(SwitchFailedError):
        state.result()
    monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS")
    return target


def test_spent_rounds_fail_naming_the_chunk_then_abandon_restores_the_previous_model(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, before = other(runtime), sw.serving(runtime.engine)
    monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "fail:rag:user#1:99")

    state, _ = run_flow(action="start", profile=target)

    with pytest.raises(SwitchFailedError) as failure:
        state.result()
    assert "still pending after 3 rounds: rag:user:[, )" in str(failure.value)
    assert "last error: " in str(failure.value) and "injected failure" in str(failure.value)
    stored = read_state(runtime.engine)
    assert (stored.status, stored.phase, stored.failure) == ("failed", "indexes", "rounds")
    assert sw.vector_counts(runtime.engine) == {before: RECORDS, target: RECORDS}

    monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS")
    restored, _ = run_flow(action="abandon")

    assert restored.result()["outcome"] == "restored"
    assert_serves(runtime, before)
    # The previous model still served: there was no second model to gate against.
    assert read_state(runtime.engine).last["gate"] is None


def test_abandon_keeps_sources_indexed_with_path_while_the_switch_was_failed(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = sw.serving(runtime.engine)
    fail_a_switch(runtime, monkeypatch)
    # What `index-docs --path DIR --prefix qa` writes meanwhile: the serving model's index.
    serving_index = runtime.store("developer", sw.profile(before))
    serving_index.add([], [SourceRecord("qa/extra.md", "h", before, 0, root="qa")])
    try:
        restored, _ = run_flow(action="abandon")

        assert restored.result()["outcome"] == "restored"
        assert_serves(runtime, before)
        assert serving_index.sources()["qa/extra.md"].root == "qa"
    finally:
        serving_index.delete_sources(["qa/extra.md"])


def test_records_edited_while_a_switch_is_failed_are_embedded_with_both_models(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragplate.tasks.records.content import save_content
    from ragplate.tasks.records.texts import embedding_profiles_for_writes, text_hash

    target = fail_a_switch(runtime, monkeypatch)
    assert read_state(runtime.engine).status == "failed"
    profiles = embedding_profiles_for_writes(runtime.engine)
    assert [p.key for p in profiles] == [sw.serving(runtime.engine), target]

    save_content(runtime.engine, key=3, status="published", profiles=profiles,
                 translations={"en": ("Edited during the switch", "new words for record 3")})

    with runtime.engine.connect() as conn:
        hashes = dict(conn.execute(sa.text(
            "SELECT model_key, text_hash FROM model_embeddings WHERE record_key = '3'")).all())
    expected = text_hash("Edited during the switch\n\nnew words for record 3")
    assert hashes == {sw.serving(runtime.engine): expected, target: expected}
    run_flow(action="resume")
    assert_serves(runtime, target)


def test_the_gate_refuses_a_worse_target_until_force_activate(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from ragplate.tasks.switch import gate

    target, before = other(runtime), sw.serving(runtime.engine)
    sw.index_docs(runtime, sw.profile(target))  # to find questions the target fails
    dataset = tmp_path / "gate.json"
    dataset.write_text(json.dumps(sw.disagreeing_cases(runtime, before, target)))
    monkeypatch.setattr(gate, "DATASET", dataset)
    monkeypatch.setenv("RAGPLATE_SWITCH_GATE_MARGIN", "0.05")
    get_settings.cache_clear()

    state, _ = run_flow(action="start", profile=target)

    with pytest.raises(SwitchFailedError) as failure:
        state.result()
    assert "evaluation gate: hit@5 1.000 ->" in str(failure.value)
    # Both ways to override: the CLI's flag and the deployment's parameter.
    assert "--force-activate" in str(failure.value)
    assert "force_activate true" in str(failure.value)
    stored = read_state(runtime.engine)
    assert (stored.status, stored.phase, stored.failure) == ("failed", "verify", "gate")
    assert stored.gate is not None and stored.gate["passed"] is False
    assert sw.serving(runtime.engine) == before

    forced, _ = run_flow(action="resume", force_activate=True)

    assert forced.result()["outcome"] == "activated"
    assert_serves(runtime, target)
    gate_run = (read_state(runtime.engine).last or {})["gate"]
    assert gate_run["forced"] is True and gate_run["passed"] is False


def test_search_keeps_answering_from_vectors_while_the_indexes_phase_runs(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, prefect_api_url: str
) -> None:
    """Acceptance 3: ``POST /v1/search`` in balanced mode during the indexes phase."""
    import subprocess
    import sys
    import time

    from fastapi.testclient import TestClient

    from ragplate.api.app import create_app

    target, before = other(runtime), sw.serving(runtime.engine)
    client = TestClient(create_app(runtime.settings), headers=bearer(runtime.engine))
    body = {"entity": "cms.contents", "query": "refund policy for a parcel",
            "mode": "balanced", "locale": "en"}
    env = {**__import__("os").environ, "PREFECT_API_URL": prefect_api_url,
           "RAGPLATE_SWITCH_FAULTS": "sleep:indexes:0.3"}
    process = subprocess.Popen([sys.executable, "-m", "ragplate", "embeddings", "switch",
                                target, "--yes"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    answers, deadline = [], time.monotonic() + 240
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if read_state(runtime.engine).phase != "indexes":
                time.sleep(0.05)
                continue
            response = client.post("/v1/search", json=body)
            docs = client.post("/v1/docs/search", json={"query": "How do I probe a profile?"})
            if read_state(runtime.engine).phase == "indexes":  # answered during the phase
                answers.append((response.status_code, response.json(), docs.json()))
        output = process.communicate(timeout=240)[0]
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output[-3000:]
    assert len(answers) >= 5
    for status, found, docs in answers:
        meta = found["meta"]["search"]
        assert status == 200 and meta["mode"] == "balanced"
        assert meta["degraded_reason"] is None and meta["model_key"] == before
        assert "vector" in meta["strategies"] and found["hits"]
        assert docs["hits"]
    assert_serves(runtime, target)
    after = client.post("/v1/search", json=body).json()["meta"]["search"]
    assert (after["model_key"], after["degraded_reason"]) == (target, None)


def test_retrying_a_failed_flow_run_resumes_the_stored_switch(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Prefect UI's retry runs the flow again with its first parameters (a start):
    with a switch stored, the second run of the flow run resumes it."""
    import ragplate.flows.embeddings_switch as module

    target = other(runtime)
    monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "fail:cms.contents#2:99")
    first, _ = run_flow(action="start", profile=target)
    assert first.is_failed() and read_state(runtime.engine).status == "failed"
    monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS")
    real = module._flow_run
    monkeypatch.setattr(module, "_flow_run", lambda: (real()[0], 2))

    retried, _ = run_flow(action="start", profile=target)

    assert retried.result()["outcome"] == "activated"
    assert_serves(runtime, target)


def test_status_shows_a_failed_switch_and_what_to_do(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from ragplate.cli import app

    target, before = other(runtime), sw.serving(runtime.engine)
    monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "fail:rag:user#1:99")
    run_flow(action="start", profile=target)

    shown = CliRunner().invoke(app, ["embeddings", "status", "--json"])
    text = CliRunner().invoke(app, ["embeddings", "status"])

    data = json.loads(shown.output)
    assert (data["status"], data["phase"], data["failure"]) == ("failed", "indexes", "rounds")
    assert (data["serving"], data["target"], data["interrupted"]) == (before, target, False)
    assert data["chunks"]["pending"] == 1 and data["chunks"]["written"] > 1
    assert "rag:user:[, )" in text.output and "failed (rounds)" in text.output
    monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS")
    assert CliRunner().invoke(app, ["embeddings", "switch", "--abandon"]).exit_code == 0
    assert_serves(runtime, before)
    after = CliRunner().invoke(app, ["embeddings", "status"]).output
    assert f"last switch abandoned {target}, back to {before}" in after
    assert "gate" not in after  # it went back to the model that served: nothing to compare
    last = json.loads(CliRunner().invoke(app, ["embeddings", "status", "--json"]).output)["last"]
    assert (last["abandon"], last["abandoned"], last["target"]) == (True, target, before)


class Searcher:
    """Searches in a loop as the API does: the developer index (the serving model read
    from PostgreSQL, the question embedded with it, that model's index searched) and
    application search in balanced mode (keyword and vector)."""

    def __init__(self, settings: Settings) -> None:
        self.runtime = Runtime(settings)
        self.stop = threading.Event()
        self.answers: Counter[str] = Counter()
        self.empty: list[str] = []
        self.failures: list[str] = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        from ragplate.tasks.retrieval.application import search_with_runtime

        while not self.stop.is_set():
            try:
                profile = self.runtime.active_profile()
                vector = self.runtime.embedder(profile).embed_query("How do I switch models?")
                hits = self.runtime.store("developer", profile).search(vector, top_k=3)
                found = search_with_runtime(self.runtime, entity="cms.contents",
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


def test_search_never_fails_or_empties_through_a_switch_and_an_abandon(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Elasticsearch: while a switch runs to its activation and while a failed switch is
    abandoned, a thread searching in a loop gets no failure, no empty answer and no
    degraded search; the activation moved the role aliases in one call and the prune
    deleted the other model's indexes."""
    from ragplate.infra.elasticsearch import indexes, names

    settings = runtime.settings
    if settings.vector_store != "elasticsearch":
        pytest.skip("the aliases and per-model indexes are Elasticsearch's")
    monkeypatch.setenv("RAGPLATE_SWITCH_PRUNE_GRACE_SECONDS", "1")
    get_settings.cache_clear()
    target, before = other(runtime), sw.serving(runtime.engine)
    prefix = settings.elasticsearch_index_prefix
    client = runtime.record_index.client  # type: ignore[union-attr]
    alias = names.docs_alias(prefix, "developer")

    with Searcher(get_settings()) as searcher:
        started, _ = run_flow(action="start", profile=target)
        assert started.is_completed() and sw.serving(runtime.engine) == target
        assert indexes.alias_targets(client, alias) == [
            names.docs_index(prefix, "developer", target)]
        monkeypatch.setenv("RAGPLATE_SWITCH_FAULTS", "fail:rag:user#1:99")
        failed, _ = run_flow(action="start", profile=before)
        with pytest.raises(SwitchFailedError):
            failed.result()
        monkeypatch.delenv("RAGPLATE_SWITCH_FAULTS")
        restored, _ = run_flow(action="abandon")
        assert restored.result()["outcome"] == "restored"
        time.sleep(0.3)

    assert searcher.failures == [] and searcher.empty == [], searcher.answers
    assert searcher.answers[before] > 0 and searcher.answers[target] > 0
    assert_serves(runtime, target)
    left = indexes.indexes_of(client, f"{prefix}_docs_*") + indexes.indexes_of(
        client, f"{prefix}_records_*")
    assert left == [*sorted(names.docs_index(prefix, index, target)
                            for index in ("developer", "user")),
                    names.records_index(prefix, "cms.contents", target)]
