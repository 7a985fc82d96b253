"""Every refusal of ``ragplate embeddings switch`` (start, ``--resume``, ``--abandon``)
and of ``prune``: each exits non-zero with the reason and changes nothing — the switch
state, the settings, every model's rows and every vector index are as they were.

The CLI runs in-process (Typer's runner); the refusals happen before any flow run. The
deployment path (the flow itself) refuses the same way: see the last tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.catalog.settings import Settings
from ragplate.catalog.switch import SwitchRefusedError, SwitchState
from ragplate.cli import app
from ragplate.infra import locks
from ragplate.infra.environment import get_settings
from ragplate.infra.models.info import clear_info_cache
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import SourceRecord
from ragplate.tasks.switch.state import update_state
from tests.testing import switch as sw
from tests.testing.server_doubles import E5_MODEL, tei_double

pytestmark = [pytest.mark.integration]

OPENAI = "openai_compatible:intfloat/multilingual-e5-small"


@pytest.fixture(scope="module")
def env(prefect_api_url: str, ragplate_home: Path) -> Iterator[Settings]:
    patch = pytest.MonkeyPatch()
    with sw.private_database(ragplate_home, patch) as settings:
        engine = Runtime(settings).engine
        sw.set_serving(engine, sw.H64)
        sw.load_records(engine, sw.short_records(12), sw.profile(sw.H64))
        yield settings


@pytest.fixture
def db(env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[sa.Engine]:
    monkeypatch.delenv("RAGPLATE_EMBEDDINGS_URL", raising=False)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    get_settings.cache_clear()
    clear_info_cache()
    engine = Runtime(get_settings()).engine
    sw.reset_switch(engine)
    yield engine
    sw.reset_switch(engine)
    get_settings.cache_clear()
    clear_info_cache()


def refused(db: sa.Engine, *args: str, reason: str) -> str:
    """Run the command; it must refuse with ``reason`` and change nothing."""
    before = sw.snapshot(db)
    result = CliRunner().invoke(app, ["embeddings", *args])
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SwitchRefusedError), result.exception
    message = str(result.exception)
    assert reason in message, message
    assert sw.snapshot(db) == before
    return message


def store(db: sa.Engine, **fields: object) -> None:
    """Put a stored switch in place (as a real one would have left it)."""
    def change(state: SwitchState) -> None:
        for name, value in fields.items():
            setattr(state, name, value)

    update_state(db, 5, change)


def test_the_flow_refuses_bad_parameters_even_while_another_run_holds_the_lock(
        db: sa.Engine) -> None:
    """Runs started together: each is refused for what is wrong with it, not for the run
    lock another of them holds."""
    from ragplate.flows.embeddings_switch import embeddings_switch

    with locks.RunLock(db) as run_lock:
        assert run_lock.acquire()
        for parameters, reason in (({}, "start needs a profile"),
                                   ({"profile": "local:e5"}, "unknown embedding profile")):
            with pytest.raises(SwitchRefusedError, match=reason):
                embeddings_switch(**parameters)  # type: ignore[arg-type]
        with pytest.raises(SwitchRefusedError, match="another process is executing"):
            embeddings_switch(profile=sw.H48)


def test_the_serving_model_with_a_stored_switch_names_the_stored_switch(
        db: sa.Engine) -> None:
    store(db, status="failed", phase="verify", target=sw.H48, previous=sw.H64,
          failure="check", error="boom")
    refused(db, "switch", sw.H64, "--yes", reason="a switch is already stored")


def use_server(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("RAGPLATE_EMBEDDINGS_URL", url)
    get_settings.cache_clear()


def test_unknown_profile(db: sa.Engine) -> None:
    refused(db, "switch", "local:nobody/nothing", "--yes",
            reason="unknown embedding profile 'local:nobody/nothing'")


def test_profile_already_serving(db: sa.Engine) -> None:
    refused(db, "switch", sw.H64, "--yes", reason="already the serving model")


def test_start_lock_held_by_another_start(db: sa.Engine) -> None:
    with locks.start_lock(db) as acquired:
        assert acquired
        refused(db, "switch", sw.H48, "--yes", reason="another start holds the start lock")


def test_a_switch_running_refuses_start_resume_and_abandon_showing_chunks(
    db: sa.Engine,
) -> None:
    from ragplate.catalog.switch import ChunkPlan, ChunkSpec

    plan = ChunkPlan(plan_id="p", purpose="indexes", round=1, chunks=[
        ChunkSpec(id="cms.contents#1", kind="entity", scope="cms.contents", written=True),
        ChunkSpec(id="rag:developer#1", kind="rag", scope="developer")])
    store(db, status="running", phase="indexes", target=sw.H48, previous=sw.H64, plan=plan)
    with locks.RunLock(db) as run_lock:  # the process running it is alive
        assert run_lock.acquire()
        # A live switch is waited for: --resume and --abandon are for one that stopped.
        message = refused(db, "switch", sw.H48, "--yes", reason="a switch is already stored")
        assert "wait for it to end" in message
        for option in ("--resume", "--abandon"):
            message = refused(db, "switch", option, reason="is running normally")
            assert "chunks written 1, pending 1, round 1" in message


def test_a_failed_switch_refuses_a_new_start(db: sa.Engine) -> None:
    store(db, status="failed", phase="verify", target=sw.H48, previous=sw.H64,
          failure="check", error="boom")
    refused(db, "switch", sw.H48, "--yes", reason="failed in phase verify")


def test_provider_not_configured(db: sa.Engine) -> None:
    refused(db, "switch", OPENAI, "--yes", reason="is not configured: set "
            "RAGPLATE_SERVERS__EMBEDDINGS__URL or RAGPLATE_EMBEDDINGS_URL")


def test_probe_measures_other_dimensions(db: sa.Engine) -> None:
    refused(db, "switch", "local:ragplate/hashing-misdeclared", "--yes",
            reason="measures 64 dimensions, the profile declares 32")


def test_server_does_not_answer(db: sa.Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import free_port

    use_server(monkeypatch, f"http://127.0.0.1:{free_port()}")
    refused(db, "switch", OPENAI, "--yes", reason="did not answer the probe")


@pytest.mark.parametrize(("double", "reason"), [
    ({"answer_model": None}, "names no model in its answer"),
    ({"answer_model": "BAAI/bge-small-en-v1.5"}, "runs 'BAAI/bge-small-en-v1.5'"),
    ({"model_id": "BAAI/bge-small-en-v1.5"}, "names 'BAAI/bge-small-en-v1.5' in GET /info"),
    ({"norm": 3.0}, "declares normalised vectors"),
    ({"dimensions": 256}, "returns 256 dimensions"),
], ids=["no-model", "other-model", "other-info-model", "not-normalised", "other-dimensions"])
def test_server_identity_refusals(db: sa.Engine, monkeypatch: pytest.MonkeyPatch,
                                  double: dict[str, object], reason: str) -> None:
    with tei_double(**double) as server:  # type: ignore[arg-type]
        use_server(monkeypatch, server.url)
        refused(db, "switch", OPENAI, "--yes", reason=reason)


@contextmanager
def serving_source(db: sa.Engine, index: str, source: str, root: str) -> Iterator[None]:
    """A source record in the serving model's ``index`` for the block (as ``index-docs``
    leaves one), removed afterwards."""
    serving = sw.serving(db)
    store_ = Runtime(get_settings()).store(index, sw.profile(serving))
    store_.add([], [SourceRecord(source, "h", serving, 0, root=root)])
    try:
        yield
    finally:
        store_.delete_sources([source])


def test_sources_of_roots_that_are_not_configured(db: sa.Engine) -> None:
    with serving_source(db, "developer", "qa/a.md", root="qa"):
        refused(db, "switch", sw.H48, "--yes",
                reason="the developer index holds sources of roots that are not configured "
                "('qa': 1); the switch rebuilds only the configured roots")


def test_a_configured_root_without_markdown_files(
    db: sa.Engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("RAGPLATE_DOCS_ROOTS", json.dumps({"guides": str(tmp_path)}))
    get_settings.cache_clear()
    with serving_source(db, "user", "guides/a.md", root="guides"):
        refused(db, "switch", sw.H48, "--yes",
                reason="the configured root 'guides' holds no Markdown file, but the user "
                "index holds 1 of its sources")


def test_an_invalid_documentation_source(
    db: sa.Engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    (tmp_path / "bad.md").write_text("---\naudience: everyone\n---\n# Bad\n")
    monkeypatch.setenv("RAGPLATE_DOCS_ROOTS", json.dumps({"guides": str(tmp_path)}))
    get_settings.cache_clear()
    refused(db, "switch", sw.H48, "--yes",
            reason="documentation cannot be read: guides/bad.md: unknown audience 'everyone'")


def test_resume_and_abandon_with_nothing_stored(db: sa.Engine) -> None:
    refused(db, "switch", "--resume", reason="no switch to resume")
    refused(db, "switch", "--abandon", reason="no switch to abandon")


def test_abandon_refuses_when_the_previous_profile_is_no_longer_declared(
    db: sa.Engine,
) -> None:
    store(db, status="failed", phase="indexes", target=sw.H48,
          previous="local:gone/away", failure="rounds", error="x")
    refused(db, "switch", "--abandon", reason="unknown embedding profile 'local:gone/away'")


def test_abandon_refuses_when_the_previous_server_runs_another_model(
    db: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store(db, status="failed", phase="indexes", target=sw.H48, previous=OPENAI,
          failure="rounds", error="x")
    with tei_double(answer_model="BAAI/bge-small-en-v1.5", model_id=E5_MODEL) as server:
        use_server(monkeypatch, server.url)
        refused(db, "switch", "--abandon", reason="runs 'BAAI/bge-small-en-v1.5'")


def test_prune_refuses_while_a_switch_is_stored(db: sa.Engine) -> None:
    store(db, status="failed", phase="embeddings", target=sw.H48, previous=sw.H64,
          failure="rounds", error="x")
    refused(db, "prune", reason="prune runs only when no switch is stored")


def test_options_and_confirmation(db: sa.Engine) -> None:
    refused(db, "switch", reason="give a PROFILE, or --resume, or --abandon")
    refused(db, "switch", sw.H48, "--resume", reason="give a PROFILE, or --resume")
    refused(db, "switch", "--abandon", "--force-activate",
            reason="--force-activate goes with a start or --resume")
    # The runner's stdin is not a terminal: without --yes nothing starts.
    refused(db, "switch", sw.H48, reason="confirm with --yes")


def test_declining_the_confirmation_starts_nothing(
    db: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragplate.cli.switch.interactive", lambda: True)
    before = sw.snapshot(db)

    result = CliRunner().invoke(app, ["embeddings", "switch", sw.H48, "--json"], input="n\n")

    assert result.exit_code == 1
    # The prompt is on stderr, so --json output stays JSON (the runner echoes the typed
    # answer on stdout, as a terminal would show it).
    assert "Start the switch?" not in result.stdout
    assert "Start the switch?" in result.stderr
    assert "Not started: nothing was changed." in result.stderr
    assert sw.snapshot(db) == before


def test_the_flow_refuses_the_same_way(db: sa.Engine) -> None:
    """The deployment path (a flow run started from the Prefect UI) checks again, under
    the locks, before it stores anything."""
    from ragplate.flows.embeddings_switch import embeddings_switch

    for parameters, reason in (({"profile": sw.H64}, "already the serving model"),
                               ({"profile": "local:nobody/nothing"}, "unknown embedding"),
                               ({"action": "resume"}, "no switch to resume")):
        before = sw.snapshot(db)
        with pytest.raises(SwitchRefusedError, match=reason):
            embeddings_switch(**parameters)  # type: ignore[arg-type]
        assert sw.snapshot(db) == before


def test_the_texts_line_counts_what_a_resumed_switch_still_embeds() -> None:
    from ragplate.cli.switch import texts_line

    assert texts_line(0, 250, 400) == "embedded 0 of the 250 missing (400 in all)"
    assert texts_line(120, 400, 400) == "embedded 120 of 400"
    assert texts_line(0, 0, 400) == "embedded 0 of 400"  # embeddings not begun yet


def test_the_flows_steps_are_tasks_of_their_own_names() -> None:
    """Each step shows in the Prefect UI as a task run named after it."""
    from prefect.tasks import Task

    from ragplate.tasks.switch import steps

    named = {"check_inputs": "switch-check-inputs", "begin": "switch-begin"}
    for attribute, name in named.items():
        step = getattr(steps, attribute)
        assert isinstance(step, Task) and step.name == name, attribute
