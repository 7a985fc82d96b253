"""The switch's settings and their fallbacks, its plan types and the test embedder."""

from __future__ import annotations

import numpy as np
import pytest

from ragplate.catalog.settings import Settings
from ragplate.catalog.switch import ChunkPlan, ChunkSpec, SwitchState


def test_defaults(clean_env: pytest.MonkeyPatch) -> None:
    settings = Settings()
    assert (settings.index_chunk_size, settings.rag_chunk_size) == (250, 20)
    assert (settings.index_chunk_stall_seconds, settings.state_lock_wait_seconds) == (900, 10)
    assert settings.switch_gate_margin == 0.05
    assert settings.switch_retry_delays == [10, 30]


@pytest.mark.parametrize(("name", "raw", "expected"), [
    ("index_chunk_size", "0", 250), ("index_chunk_size", "-5", 250),
    ("index_chunk_size", "many", 250), ("index_chunk_size", "", 250),
    ("index_chunk_size", "2001", 2000), ("index_chunk_size", "99999", 2000),
    ("index_chunk_size", "1", 1), ("index_chunk_size", "2000", 2000),
    ("index_chunk_size", "37", 37),
    ("rag_chunk_size", "0", 20), ("rag_chunk_size", "x", 20), ("rag_chunk_size", "201", 200),
    ("rag_chunk_size", "200", 200), ("rag_chunk_size", "3", 3),
    ("index_chunk_stall_seconds", "0", 900), ("index_chunk_stall_seconds", "0.5", 900),
    ("index_chunk_stall_seconds", "soon", 900), ("index_chunk_stall_seconds", "1", 1),
    ("index_chunk_stall_seconds", "86400", 86400),
    ("state_lock_wait_seconds", "0", 10), ("state_lock_wait_seconds", "nan", 10),
    ("state_lock_wait_seconds", "abc", 10), ("state_lock_wait_seconds", "3", 3),
    ("state_lock_wait_seconds", "inf", 10), ("index_chunk_stall_seconds", "-inf", 900),
    ("switch_gate_margin", "-0.1", 0.05), ("switch_gate_margin", "1.5", 0.05),
    ("switch_gate_margin", "lots", 0.05), ("switch_gate_margin", "0", 0.0),
    ("switch_gate_margin", "0.2", 0.2),
])
def test_out_of_range_values_fall_back_as_the_spec_says(
    clean_env: pytest.MonkeyPatch, name: str, raw: str, expected: float
) -> None:
    clean_env.setenv(f"RAGPLATE_{name.upper()}", raw)
    assert getattr(Settings(), name) == expected


def test_retry_delays_are_a_json_list(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RAGPLATE_SWITCH_RETRY_DELAYS", "[0.1, 0.2]")
    assert Settings().switch_retry_delays == [0.1, 0.2]


def test_chunk_ranges_are_open_at_their_ends() -> None:
    first = ChunkSpec(id="rag:developer#1", kind="rag", scope="developer", high="b.md")
    last = ChunkSpec(id="rag:developer#2", kind="rag", scope="developer", low="b.md")
    assert first.contains("a.md") and not first.contains("b.md")
    assert last.contains("b.md") and last.contains("zzz.md")
    assert first.describe() == "rag:developer:[, b.md)"
    entity = ChunkSpec(id="cms.contents#2", kind="entity", scope="cms.contents", low="251",
                       high="501")
    assert entity.describe() == "cms.contents [251, 501)"


def test_state_counts_and_summary() -> None:
    plan = ChunkPlan(plan_id="p", purpose="indexes", round=2, chunks=[
        ChunkSpec(id="a#1", kind="entity", scope="a", written=True),
        ChunkSpec(id="a#2", kind="entity", scope="a")])
    state = SwitchState(status="failed", phase="indexes", target="t", plan=plan)
    assert state.chunk_counts() == (1, 1, 2)
    assert state.summary() == ("failed in phase indexes, target t, chunks written 1, "
                               "pending 1, round 2")
    assert SwitchState().summary() == "no switch stored (idle)"
    assert SwitchState.model_validate(state.model_dump(mode="json")) == state


def test_the_hashing_test_embedder_is_deterministic_normalised_and_lexical() -> None:
    from ragplate.infra.models.hashing import HashingModel

    model = HashingModel(64)
    a, b = model.passage(["refund policy for parcels", "refund policy for parcels"])
    assert np.array_equal(a, b) and a.shape == (64,)
    assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5
    near = float(model.query("refund policy") @ a)
    far = float(model.query("database migration") @ a)
    assert near > far
    assert float(np.linalg.norm(model.query(""))) == pytest.approx(1.0)


def test_a_gate_where_neither_model_finds_anything_measured_nothing() -> None:
    from ragplate.tasks.switch.gate import GateResult, Scores

    nothing = GateResult(Scores("a", 0.0, 0.0, 8), Scores("b", 0.0, 0.0, 8), 0.05)
    some = GateResult(Scores("a", 0.0, 0.0, 8), Scores("b", 0.125, 0.125, 8), 0.05)

    assert nothing.passed and not nothing.measured
    assert nothing.as_dict()["measured"] is False
    assert some.measured and some.as_dict()["measured"] is True
