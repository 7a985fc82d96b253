"""SIGKILL of the switch process at a random point of every phase, then ``--resume``
until the switch is activated: no record or documentation chunk missing or duplicated.

The switch runs as ``python -m ragplate embeddings switch`` subprocesses (the process an
operator's ``kill -9`` hits). ``RAGPLATE_SWITCH_FAULTS=kill:<phase>:<n>`` makes the process
kill itself with SIGKILL at the n-th checkpoint of the phase; n is drawn at random (the
seed is printed, and ``SWITCH_KILL_SEED`` replays it).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ragplate.catalog.settings import Settings
from ragplate.catalog.switch import PHASES
from ragplate.infra.runtime import Runtime
from ragplate.infra.switch_state import read_state
from tests.testing import switch as sw

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RECORDS = 45
#: Checkpoints every run passes in each phase with 45 records, ranges of 10 records and
#: of 4 files (see the faults.checkpoint calls): the kill point is drawn below these.
CHECKPOINTS = {"preflight": 3, "embeddings": 11, "indexes": 20, "verify": 16, "activate": 3}


@pytest.fixture(scope="module")
def env(prefect_api_url: str, ragplate_home: Path) -> Iterator[Settings]:
    patch = pytest.MonkeyPatch()
    patch.setenv("PREFECT_API_URL", prefect_api_url)
    with sw.hashing_installation(ragplate_home, patch, RECORDS) as settings:
        yield settings


def exact(runtime: Runtime, key: str) -> None:
    """``key`` serves with every record and documentation file exactly once."""
    from ragplate.tasks.switch.indexes import corpus

    engine = runtime.engine
    assert sw.serving(engine) == key
    assert sw.vector_counts(engine) == {key: RECORDS}
    assert sw.chunk_models(runtime) == {key}
    with engine.connect() as conn:
        assert conn.execute(sa.text(
            "SELECT count(*) FROM (SELECT index_name, source, ordinal FROM rag_chunks "
            "GROUP BY 1, 2, 3 HAVING count(*) > 1) d")).scalar_one() == 0
        # Every source holds exactly the chunk count it recorded.
        assert conn.execute(sa.text(
            "SELECT count(*) FROM rag_sources s WHERE s.chunk_count <> (SELECT count(*) "
            "FROM rag_chunks c WHERE c.index_name = s.index_name AND c.model_key = "
            "s.model_key AND c.source = s.source)")).scalar_one() == 0
    for index in ("developer", "user"):
        expected = {d.source for d in corpus(runtime, index)}
        assert set(runtime.store(index, sw.profile(key)).sources()) == expected


def test_kill_at_a_random_point_of_every_phase_then_resume(env: Settings) -> None:
    seed = int(os.environ.get("SWITCH_KILL_SEED", time.time()))
    print(f"SWITCH_KILL_SEED={seed}")
    rng = random.Random(seed)
    runtime = Runtime(env)
    for phase, most in CHECKPOINTS.items():
        target = sw.H48 if sw.serving(runtime.engine) == sw.H64 else sw.H64
        point = rng.randint(1, most)

        killed = sw.ragplate("embeddings", "switch", target, "--yes",
                             RAGPLATE_SWITCH_FAULTS=f"kill:{phase}:{point}")

        assert killed.returncode == -signal.SIGKILL, (phase, point, killed.stderr[-2000:])
        state = read_state(runtime.engine)
        if state.status == "running":
            # The last checkpoint of a phase follows its hand-over to the next one.
            following = PHASES[min(PHASES.index(phase) + 1, len(PHASES) - 1)]
            assert state.phase in (phase, following), (phase, point, state.phase)
            status = json.loads(sw.ragplate("embeddings", "status", "--json").stdout)
            assert status["interrupted"] is True and status["running_normally"] is False
        for _ in range(3):
            state = read_state(runtime.engine)
            if state.status == "idle" and not state.prune_pending:
                break
            resumed = sw.ragplate("embeddings", "switch", "--resume")
            assert resumed.returncode == 0, (phase, point, resumed.stderr[-3000:])
        exact(runtime, target)
