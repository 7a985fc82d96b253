"""The ``/app/crud/…`` routes against their OpenAPI document as a person who may do
everything there (the API-wide run, ``test_schemathesis.py``, signs in as one who holds no
data permission, so it sees their 403s only): applied and pending writes, approvals, lists
and reads keep to the declared statuses and bodies, and schema-valid data is accepted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import hypothesis
import pytest
import schemathesis

from ragplate.api.app import create_app
from ragplate.catalog.crud import CRUD_ENTITIES, OPERATIONS
from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from tests.testing.people import bearer

pytestmark = pytest.mark.integration

#: Examples per operation (derandomized: each run the same).
EXAMPLES = 60

APP = create_app(Settings(home=Path("/nonexistent/ragplate-schema-only")))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP).include(
    path_regex="^/app/crud/")
# A body over RAGPLATE_API_MAX_BODY_BYTES is refused before it is read (413): a rejection.
_REJECTION = schema.config.checks.negative_data_rejection
_REJECTION.expected_statuses = [*_REJECTION.expected_statuses, "413"]

HEADERS: dict[str, str] = {}
EVERYTHING = (*(f"{name}.{operation}" for name in CRUD_ENTITIES for operation in OPERATIONS),
              "sao.tickets.approve")


@pytest.fixture(scope="module", autouse=True)
def _session_runtime(settings: Settings) -> Iterator[None]:
    APP.state.runtime = Runtime(settings)
    HEADERS.update(bearer(APP.state.runtime.engine, permissions=EVERYTHING,
                          tenant="hostile-crud"))
    yield


@schema.parametrize()
@hypothesis.settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
def test_the_crud_routes_keep_to_their_schema(case: schemathesis.Case) -> None:
    case.call_and_validate(headers=HEADERS)
