"""The resume and abandon rules, the locks and the prune, on stored states (no flow)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ragplate.catalog.settings import Settings
from ragplate.catalog.switch import (
    ChunkPlan,
    ChunkSpec,
    StateLockTimeoutError,
    SwitchState,
)
from ragplate.infra import locks
from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.switch_state import read_state
from ragplate.tasks.switch import preflight
from ragplate.tasks.switch.state import update_state
from tests.testing import switch as sw

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def env(prefect_api_url: str, ragplate_home: Path) -> Iterator[Settings]:
    patch = pytest.MonkeyPatch()
    with sw.private_database(ragplate_home, patch) as settings:
        sw.set_serving(Runtime(settings).engine, sw.H64)
        yield settings


@pytest.fixture
def runtime(env: Settings) -> Iterator[Runtime]:
    runtime = Runtime(get_settings())
    sw.reset_switch(runtime.engine)
    yield runtime
    sw.reset_switch(runtime.engine)


def plan() -> ChunkPlan:
    return ChunkPlan(plan_id="p1", purpose="indexes", round=3, chunks=[
        ChunkSpec(id="cms.contents#1", kind="entity", scope="cms.contents", written=True),
        ChunkSpec(id="rag:developer#1", kind="rag", scope="developer")])


def stored(runtime: Runtime, **fields: object) -> None:
    base: dict[str, object] = {"target": sw.H48, "previous": sw.H64, "prepare": False}

    def change(state: SwitchState) -> None:
        for name, value in {**base, **fields}.items():
            setattr(state, name, value)

    update_state(runtime.engine, 5, change)


def test_failed_indexes_resume_at_embeddings_keeping_the_plan(runtime: Runtime) -> None:
    stored(runtime, status="failed", phase="indexes", failure="rounds", plan=plan())

    state = preflight.resume(runtime)

    assert (state.status, state.phase, state.after_embeddings) == (
        "running", "embeddings", "indexes")
    assert state.prepare is False and state.plan is not None
    assert [c.written for c in state.plan.chunks] == [True, False]
    assert state.plan.round == 0 and state.error is None
    assert read_state(runtime.engine) == state


@pytest.mark.parametrize(("status", "failure", "after", "prepare"), [
    ("failed", "check", "indexes", True),
    ("failed", "error", "indexes", True),
    ("running", None, "indexes", True),  # interrupted: its process is gone
    ("failed", "rounds", "verify", False),
    ("failed", "stall", "verify", False),
    ("failed", "gate", "verify", False),
])
def test_verify_resumes_at_embeddings_then_rebuilds_or_refreshes(
    runtime: Runtime, status: str, failure: str | None, after: str, prepare: bool
) -> None:
    stored(runtime, status=status, phase="verify", failure=failure, plan=plan())

    state = preflight.resume(runtime)

    assert (state.phase, state.after_embeddings, state.prepare) == ("embeddings", after,
                                                                    prepare)
    assert state.plan is None


@pytest.mark.parametrize("phase", ["preflight", "embeddings", "activate"])
def test_other_phases_resume_where_they_stopped(runtime: Runtime, phase: str) -> None:
    stored(runtime, status="failed", phase=phase, failure="error", embed_round=3)
    state = preflight.resume(runtime, force_activate=True)
    assert (state.status, state.phase, state.force_activate) == ("running", phase, True)


def test_abandon_in_preflight_clears_and_later_returns_to_the_previous_model(
    runtime: Runtime,
) -> None:
    stored(runtime, status="failed", phase="preflight", failure="error")
    cleared = preflight.abandon(runtime)
    assert (cleared.status, cleared.target, cleared.phase) == ("idle", None, None)

    stored(runtime, status="failed", phase="verify", failure="check", plan=plan())
    back = preflight.abandon(runtime)
    assert (back.status, back.phase, back.target, back.previous, back.abandon) == (
        "running", "embeddings", sw.H64, sw.H64, True)
    assert back.prepare is True and back.plan is None
    assert back.abandoned == sw.H48  # the model given up, for status and the last switch
    # The abandon itself failing and abandoned again still names the model given up.
    stored(runtime, status="failed", phase="indexes", failure="rounds", target=sw.H64,
           abandon=True, abandoned=sw.H48)
    assert preflight.abandon(runtime).abandoned == sw.H48


def test_a_killed_activation_leaves_only_its_prune_to_resume(runtime: Runtime) -> None:
    stored(runtime, status="idle", target=None, previous=None, prune_pending=True)
    state = preflight.resume(runtime)
    assert state.status == "idle" and state.prune_pending


def test_state_lock_waits_then_fails(runtime: Runtime) -> None:
    with (locks.state_transaction(runtime.engine, 1),
          pytest.raises(StateLockTimeoutError, match="within 1 s")):
        update_state(runtime.engine, 1, lambda state: None)


def test_run_lock_tells_running_from_interrupted(runtime: Runtime) -> None:
    assert not locks.run_lock_held(runtime.engine)
    with locks.RunLock(runtime.engine) as lock:
        assert lock.acquire()
        assert locks.run_lock_held(runtime.engine)
        assert not locks.RunLock(runtime.engine).acquire()
    assert not locks.run_lock_held(runtime.engine)


def test_prune_drops_other_models_rows_and_indexes(runtime: Runtime) -> None:
    from ragplate.tasks.switch.activate import prune

    engine = runtime.engine
    sw.load_records(engine, sw.short_records(3), sw.profile(sw.H48))
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM model_embeddings WHERE model_key "
                                    "= :k"), {"k": sw.H48}).scalar_one() == 3

    report = prune(runtime)

    assert report.vector_rows == 3 and report.serving == sw.H64
    assert sw.H48 not in sw.vector_counts(engine)
    assert any(name.startswith("model_embeddings_hnsw_") for name in report.indexes)
