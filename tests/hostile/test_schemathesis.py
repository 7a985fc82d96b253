"""The API against its own OpenAPI document: a bounded, seeded schemathesis run with every
check (server errors, undocumented statuses, response schemas, content types, positive and
negative data), in process over ASGI, on the session's real indexes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import hypothesis
import pytest
import schemathesis

from ragplate.api.app import create_app
from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import DocumentStore
from tests.testing.people import bearer

pytestmark = pytest.mark.integration

#: Examples per operation, each run the same (derandomized); 100 keep this module near a
#: minute, so the whole suite stays well inside CI's time.
EXAMPLES = 100

# The schema is read when the module is collected, before the session's database exists;
# the app is handed the session's runtime before the first request (below).
APP = create_app(Settings(home=Path("/nonexistent/ragplate-schema-only")))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
# A body over RAGPLATE_API_MAX_BODY_BYTES (a text far over its maxLength) is refused before
# it is read, with a 413: a rejection of invalid data like a 422.
_REJECTION = schema.config.checks.negative_data_rejection
_REJECTION.expected_statuses = [*_REJECTION.expected_statuses, "413"]


#: A token of a person who may call every route, set before the first request.
HEADERS: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def _session_runtime(settings: Settings, developer_index: DocumentStore) -> Iterator[None]:
    APP.state.runtime = Runtime(settings)
    HEADERS.update(bearer(APP.state.runtime.engine))
    yield


@schema.parametrize()
@hypothesis.settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
def test_the_api_keeps_to_its_schema(case: schemathesis.Case) -> None:
    case.call_and_validate(headers=HEADERS)
