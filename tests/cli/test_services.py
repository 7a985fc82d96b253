"""``up`` / ``status`` / ``serve`` as a newcomer meets them: Prefect's UI address (what a
browser opens) and its API labelled apart, the detail never cut, and ``make run``
checking the API's port before any work."""

from __future__ import annotations

import io
import json
import re
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragplate.catalog.errors import ServiceError
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.cli import app
from ragplate.infra import services
from ragplate.infra.services import ServiceState

STATES = [
    ServiceState("postgresql", True, "postgresql+psycopg://postgres@/ragplate?host=/tmp/h/pg",
                 41, "embedded"),
    ServiceState("prefect", True, "http://127.0.0.1:4201", 42,
                 "running on port 4201: port 4200 is held by the Prefect server of another "
                 "RAGPLATE_HOME (/srv/other-home, pid 7)", "http://127.0.0.1:4201/api"),
]


@pytest.fixture
def fixed_states(monkeypatch: pytest.MonkeyPatch, clean_env: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "status", lambda settings: STATES)


def test_status_shows_the_ui_and_the_api_each_labelled(fixed_states: None) -> None:
    result = CliRunner().invoke(app, ["status"])

    assert result.exit_code == 0, result.output
    lines = [re.sub(r"\s+", " ", line) for line in result.output.splitlines()]
    assert any("│ prefect │ running │ UI http://127.0.0.1:4201 │ 42 │" in line for line in lines)
    assert any("│ │ │ API http://127.0.0.1:4201/api │" in line for line in lines)
    # The detail is whole (folded, not cut), naming whose server holds the port.
    text = re.sub(r"[\s│]+", " ", result.output)
    assert "port 4200 is held by the Prefect server of another RAGPLATE_HOME " \
           "(/srv/other-home" in text
    assert "…" not in result.output


def test_status_json_has_the_ui_url_and_the_api_url(fixed_states: None) -> None:
    result = CliRunner().invoke(app, ["status", "--json"])

    prefect = {s["name"]: s for s in json.loads(result.stdout)["services"]}["prefect"]
    assert prefect["url"] == "http://127.0.0.1:4201"
    assert prefect["api_url"] == "http://127.0.0.1:4201/api"


def test_serve_check_says_the_api_can_serve_and_starts_nothing(
    clean_env: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clean_env.setenv("RAGPLATE_API_PORT", str(port))

    result = CliRunner().invoke(app, ["serve", "--check"])

    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"the API can serve on http://127.0.0.1:{port}"


def test_serve_check_refuses_the_port_of_ragplate_api_port_when_it_is_taken(
    clean_env: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        clean_env.setenv("RAGPLATE_API_PORT", str(port))

        result = CliRunner().invoke(app, ["serve", "--check"])

    assert isinstance(result.exception, ServiceError)
    assert str(result.exception).startswith(f"cannot serve on 127.0.0.1:{port}: ")


def test_make_run_checks_the_api_port_before_any_work() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    steps = [line.strip() for line in recipe.splitlines()[1:] if line.startswith("\t")]

    assert steps[0] == "$(BIN)/ragplate serve --check"
    assert steps[-1] == "$(BIN)/ragplate serve"  # RAGPLATE_API_PORT, no port of its own
    assert not any("--port" in step for step in steps)
    assert Path(PROJECT_ROOT / "Makefile").is_file()



def test_at_80_columns_no_web_address_is_split(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from ragplate.cli import services as cli_services

    narrow = Console(width=80, record=True, file=io.StringIO())
    monkeypatch.setattr(cli_services, "console", narrow)

    cli_services._print_states(STATES, json_output=False)

    text = narrow.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    lines = [re.sub(r"\s+", " ", line) for line in text.splitlines()]
    assert any("UI http://127.0.0.1:4201 " in line for line in lines)
    assert any("API http://127.0.0.1:4201/api " in line for line in lines)
