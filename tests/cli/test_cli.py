"""The ``ragplate`` command line: in-process through Typer's runner, and ``main()`` (the
error translation) through ``python -m ragplate`` subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragplate.cli import app
from ragplate.infra.stores.base import DocumentStore
from tests.testing.corpus import DEVELOPER_FILES

DEFAULT = "local:intfloat/multilingual-e5-small"


@pytest.fixture(autouse=True)
def _session_home(ragplate_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands read get_settings(): the session home, no external Prefect or provider."""
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv("RAGPLATE_EMBEDDINGS_URL", raising=False)
    assert os.environ["RAGPLATE_HOME"] == str(ragplate_home)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def ragplate(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m ragplate ARGS`` with RAGPLATE_HOME = ``home`` (runs ``main()``)."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_API_URL"}
    environ.update(RAGPLATE_HOME=str(home), **env)
    return subprocess.run([sys.executable, "-m", "ragplate", *args], env=environ,
                          capture_output=True, text=True, timeout=120, check=False)


def test_help_shows_examples(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--help"])

    assert result.exit_code == 0
    assert "Examples" in result.output
    assert "ragplate index-docs --path" in result.output
    assert "ragplate embeddings probe local:intfloat/multilingual-e5-small" in result.output
    for command in ("index-docs", "retrieve", "embeddings", "db", "status", "up", "down"):
        assert command in result.output


def test_command_help_has_an_example(runner: CliRunner) -> None:
    result = runner.invoke(app, ["retrieve", "--help"])

    assert result.exit_code == 0
    assert "Example: ragplate retrieve" in result.output


def _every_command(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            found += _every_command(sub, (*path, name))
    return found


def test_every_command_and_group_help_shows_an_example_of_itself(runner: CliRunner) -> None:
    import typer.main

    paths = _every_command(typer.main.get_command(app))[1:]
    assert len(paths) > 40
    missing = []
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        if "Example" not in result.output or f"ragplate {' '.join(path)}" not in result.output:
            missing.append(" ".join(path))
    assert missing == []


def test_probe_local_profile_as_json(runner: CliRunner) -> None:
    result = runner.invoke(app, ["embeddings", "probe", DEFAULT, "--json"])

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["profile"] == DEFAULT
    assert data["dimensions"] == data["declared_dimensions"] == 384
    assert data["ok"] is True
    assert data["norm"] == pytest.approx(1.0, abs=1e-3)


def test_probe_reports_a_length_other_than_declared(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragplate.catalog.profiles import PROFILES, TEST_PROFILES

    key = "local:ragplate/hashing-misdeclared"  # declares 32 dimensions, measures 64
    monkeypatch.setitem(PROFILES, key, TEST_PROFILES[key])
    result = runner.invoke(app, ["embeddings", "probe", key, "--json"])

    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert (data["declared_dimensions"], data["dimensions"], data["ok"]) == (32, 64, False)
    assert data["norm"] is None


def test_probe_plain_output(runner: CliRunner) -> None:
    result = runner.invoke(app, ["embeddings", "probe", DEFAULT])

    assert result.exit_code == 0
    assert "dimensions  384 (declared 384)" in result.stdout


def test_main_unknown_profile_is_one_clear_line(ragplate_home: Path) -> None:
    result = ragplate(ragplate_home, "embeddings", "probe", "local:no/such-model")

    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: unknown embedding profile 'local:no/such-model'")
    assert DEFAULT in lines[0]
    assert "Traceback" not in result.stderr


def test_main_remote_profile_without_url_says_what_is_missing(ragplate_home: Path) -> None:
    result = ragplate(ragplate_home, "embeddings", "probe",
                      "openai_compatible:intfloat/multilingual-e5-small")

    assert result.returncode == 2  # a configuration error
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: profile 'openai_compatible:intfloat/multilingual-e5-small'")
    assert "RAGPLATE_EMBEDDINGS_URL" in lines[0]  # says which setting is missing
    assert "Traceback" not in result.stderr


def test_main_keeps_bracketed_text_of_error_messages(ragplate_home: Path) -> None:
    # Nothing listens on port 1: the provider error carries its [request_id ...].
    result = ragplate(ragplate_home, "embeddings", "probe",
                      "openai_compatible:intfloat/multilingual-e5-small",
                      RAGPLATE_EMBEDDINGS_URL="http://127.0.0.1:1", RAGPLATE_EMBEDDINGS_TIMEOUT="5")

    assert result.returncode != 0
    # (A warning log line may precede it; the error itself is one line.)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("Error: [request_id ")  # not eaten as Rich markup
    assert "http://127.0.0.1:1/v1/embeddings" in errors[0]
    assert "Traceback" not in result.stderr


def test_main_usage_error_exits_2(ragplate_home: Path) -> None:
    result = ragplate(ragplate_home, "index-docs", "--profile", "bogus")

    assert result.returncode == 2
    assert "Invalid value for '--profile'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [
    ["evaluate", "documentation", "--index", "developer"],
    ["evaluate", "application-content"], ["evaluate", "strategies"], ["tune-retrieval"],
    ["evaluate", "assistant"]])
def test_force_does_not_let_a_report_overwrite_its_dataset(ragplate_home: Path,
                                                          command: list[str]) -> None:
    dataset = ragplate_home / "set.json"
    dataset.write_text('{"cases": []}\n')
    result = ragplate(ragplate_home, *command, "--dataset", str(dataset), "--output",
                      str(dataset), "--force")

    assert result.returncode == 2, result.stderr
    assert "the dataset this run reads" in result.stderr
    assert dataset.read_text() == '{"cases": []}\n'


def test_force_does_not_let_a_tuning_report_overwrite_its_grid(ragplate_home: Path) -> None:
    dataset = ragplate_home / "set.json"
    dataset.write_text('{"cases": []}\n')
    grid = ragplate_home / "grid.json"
    grid.write_text('[{"rrf_k": 20}]\n')
    result = ragplate(ragplate_home, "tune-retrieval", "--dataset", str(dataset), "--grid",
                      str(grid), "--output", str(grid), "--force")

    assert result.returncode == 2, result.stderr
    assert "the --grid file this run reads" in result.stderr
    assert grid.read_text() == '[{"rrf_k": 20}]\n'


def test_a_cases_file_does_not_overwrite_the_dataset_either(ragplate_home: Path) -> None:
    dataset = ragplate_home / "set.json"
    dataset.write_text('{"cases": []}\n')
    result = ragplate(ragplate_home, "evaluate", "documentation", "--index", "developer",
                      "--dataset", str(dataset), "--output", str(ragplate_home / "r.json"),
                      "--cases", str(dataset), "--force")

    assert result.returncode == 2 and "the dataset this run reads" in result.stderr
    assert dataset.read_text() == '{"cases": []}\n'


def test_index_docs_rejects_an_unknown_profile(runner: CliRunner) -> None:
    result = runner.invoke(app, ["index-docs", "--profile", "bogus"])

    assert result.exit_code == 2
    assert "bogus" in result.output
    assert "developer" in result.output and "user" in result.output


@pytest.mark.integration
def test_retrieve_json_prints_hits_with_five_keys(
    runner: CliRunner, developer_index: DocumentStore
) -> None:
    question = "When is the PostgreSQL database dumped for backups?"
    result = runner.invoke(app, ["retrieve", question, "--top-k", "3", "--json"])

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == ["hits"]
    assert len(data["hits"]) == 3
    for hit in data["hits"]:
        assert list(hit) == ["source_label", "heading_breadcrumb", "excerpt", "score",
                          "similarity"]
        assert hit["source_label"].removeprefix("dev/") in DEVELOPER_FILES
    assert data["hits"][0]["source_label"] == "dev/ops/backup.md"


@pytest.mark.integration
def test_retrieve_plain_output_cites_sources(
    runner: CliRunner, developer_index: DocumentStore
) -> None:
    result = runner.invoke(app, ["retrieve", "Which endpoint reports health?", "--top-k", "1"])

    assert result.exit_code == 0, result.output
    assert "[1] dev/api/health.md" in result.stdout
    assert "GET /health reports the database and index counts." in result.stdout


@pytest.mark.integration
def test_retrieve_user_index_with_access_options(
    runner: CliRunner, developer_index: DocumentStore
) -> None:
    # The developer documents never reach the user index.
    result = runner.invoke(app, ["retrieve", "backups", "--index", "user", "--tenant", "acme",
                                 "--permission", "docs.read", "--locale", "en", "--json"])

    assert result.exit_code == 0, result.output
    labels = [h["source_label"] for h in json.loads(result.stdout)["hits"]]
    assert not any(label.startswith("dev/") for label in labels)


@pytest.mark.parametrize(("args", "message"), [
    (["retrieve", "   "], "QUESTION must contain a non-space character"),
    (["guardrails", "screen", ""], "TEXT must contain a non-space character"),
    (["guardrails", "train", "--dataset", "/nonexistent/cases.json"],
     "/nonexistent/cases.json: cannot be read (No such file or directory)"),
    (["index-docs", "--path", "/nonexistent/docs"], "--path /nonexistent/docs: not a directory"),
    (["index-docs", "--prefix", "docs"], "--prefix needs --path"),
    # "" would be the working directory (an unset shell variable).
    (["index-docs", "--path", ""], "--path is empty: name the documentation directory"),
    (["retrieve", "backups", "--index", "user", "--tenant", "acme corp"],
     "tenant 'acme corp' is not valid: letters, digits and _ . : - (1-200 characters)"),
    (["retrieve", "backups", "--index", "user", "--permission", "Docs Read"],
     "permission 'Docs Read' is not valid: lower-case words joined by '.' or ':' (e.g. "
     "docs.developer)"),
    (["retrieve", "backups", "--index", "user", "--locale", "english!"],
     "locale 'english!' is not valid (e.g. en, it, pt-BR)"),
    (["retrieve", "backups", "--tenant", "acme", "--module", "core"],
     "--tenant, --module: filters of the user index only (add --index user); the developer "
     "index is searched unfiltered"),
    # Empty is given too: it must not pass for "no filter" on either index.
    (["retrieve", "backups", "--tenant", ""],
     "--tenant: filters of the user index only (add --index user); the developer index is "
     "searched unfiltered"),
    (["retrieve", "backups", "--index", "user", "--module", ""],
     "module '' is not a module key: lower-case letters, digits and _ (e.g. billing)"),
    (["retrieve", "backups", "--index", "user", "--module", "bad module!"],
     "module 'bad module!' is not a module key: lower-case letters, digits and _ (e.g. "
     "billing)"),
    (["tune-floor", "--index", "developer", "--dataset",
      str(Path(__file__).parents[2] / "datasets" / "switch-gate-docs.json")],
     f"--dataset {Path(__file__).parents[2] / 'datasets' / 'switch-gate-docs.json'}: the "
     "dataset has no case with expect_refusal: a floor cannot be measured without "
     "questions the corpus does not answer"),
    # No-answer cases alone: every case would be retrieved before "hit@5 0/0" refused it.
    (["tune-floor", "--index", "developer", "--dataset",
      str(Path(__file__).parents[2] / "datasets" / "documentation-laraplate-everyday.json")],
     f"--dataset {Path(__file__).parents[2] / 'datasets'}"
     "/documentation-laraplate-everyday.json: the dataset has no answered case (none with "
     "expected_source_labels): a floor cannot be measured without questions the corpus "
     "answers, whose hits it must keep"),
])
def test_bad_options_are_refused_before_starting_anything(
    tmp_path: Path, args: list[str], message: str
) -> None:
    home = tmp_path / "never-started"
    result = ragplate(home, *args)

    assert result.returncode == 2
    assert result.stderr.strip() == f"Error: {message}"
    assert not (home / "pgdata").exists()


@pytest.mark.parametrize("with_path", [False, True])
def test_a_missing_configured_root_is_refused_before_starting_anything(
    tmp_path: Path, with_path: bool
) -> None:
    home = tmp_path / "never-started"
    missing = tmp_path / "unmounted"
    # A --path run reads the configured roots too, to tell whether the index is up to date.
    args = ("--path", str(tmp_path)) if with_path else ()
    result = ragplate(home, "index-docs", *args, RAGPLATE_DOCS_PATH=str(missing))

    assert result.returncode == 2
    assert result.stderr.strip() == f"Error: RAGPLATE_DOCS_PATH entry is not a directory: {missing}"
    assert not (home / "pgdata").exists()


def test_a_missing_root_of_docs_roots_is_refused_before_a_flow_run(tmp_path: Path) -> None:
    home = tmp_path / "never-started"
    missing = tmp_path / "unmounted"
    result = ragplate(home, "index-docs",
                      RAGPLATE_DOCS_ROOTS=json.dumps({"handbook": str(missing)}))

    assert result.returncode == 2
    assert result.stderr.strip() == (f"Error: RAGPLATE_DOCS_ROOTS 'handbook': {missing} is "
                                     "not a directory")
    assert not (home / "pgdata").exists()  # no service started, so no flow run either


@pytest.mark.integration
@pytest.mark.parametrize("index", ["developer", "user"])
def test_retrieve_over_an_empty_index_says_what_to_run(ragplate_home: Path, index: str) -> None:
    hint = (f"The {index} index holds no documentation of the serving embedding model: run "
            "`ragplate index-docs` first.")
    args = ("retrieve", "How does incremental indexing work?", "--index", index)
    plain = ragplate(ragplate_home, *args, RAGPLATE_VECTOR_STORE="memory")
    as_json = ragplate(ragplate_home, *args, "--json", RAGPLATE_VECTOR_STORE="memory")

    assert plain.returncode == 0, plain.stderr
    assert " ".join(plain.stdout.split()) == hint
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {"hits": []}
    assert " ".join(as_json.stderr.split()) == hint


@pytest.mark.integration
def test_db_upgrade_prints_the_revision(runner: CliRunner) -> None:
    result = runner.invoke(app, ["db", "upgrade"])

    assert result.exit_code == 0, result.output
    from alembic.script import ScriptDirectory

    from ragplate.infra.database import MIGRATIONS_DIR

    head = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()  # grows with migrations
    assert f"database at revision {head}" in result.stdout


@pytest.mark.integration
def test_db_upgrade_to_an_older_revision_says_it_does_not_downgrade(runner: CliRunner) -> None:
    result = runner.invoke(app, ["db", "upgrade", "0015"])

    assert result.exit_code == 0, result.output
    assert "already past 0015: ragplate does not downgrade" in " ".join(result.stdout.split())


@pytest.mark.integration
def test_db_upgrade_to_an_unknown_revision_is_one_line_and_exit_2(ragplate_home: Path) -> None:
    result = ragplate(ragplate_home, "db", "upgrade", "bogus")

    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "Error: revision 'bogus': Can't locate revision identified by 'bogus'"]


@pytest.mark.integration
def test_status_json(runner: CliRunner, ragplate_home: Path, developer_index: DocumentStore):
    result = runner.invoke(app, ["status", "--json"])

    assert result.exit_code == 0, result.output
    services = {s["name"]: s for s in json.loads(result.stdout)["services"]}
    assert set(services) == {"postgresql", "prefect"}
    postgres = services["postgresql"]
    assert postgres["running"] is True and isinstance(postgres["pid"], int)
    assert postgres["url"].startswith("postgresql+psycopg://postgres@/ragplate")
    assert str(ragplate_home) in postgres["url"]
    prefect = services["prefect"]
    if prefect["url"] is None:  # the port is another home's server: never shown as ours
        assert prefect["running"] is False and "is held by" in prefect["detail"]
    else:
        assert prefect["url"].startswith("http://127.0.0.1:")


def test_serve_refuses_a_port_another_server_holds_in_one_line() -> None:
    import socket

    from ragplate.catalog.errors import ServiceError
    from ragplate.cli.services import check_port_free

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]

        with pytest.raises(ServiceError) as error:
            check_port_free("127.0.0.1", port)

    assert str(error.value).startswith(f"cannot serve on 127.0.0.1:{port}: ")
    assert error.value.exit_code == 3
    check_port_free("127.0.0.1", port)  # free again: no error


@pytest.mark.parametrize("host", ["999.1.1.1", "no-such-host.invalid", "192.0.2.7"])
def test_serve_names_a_host_that_is_not_of_this_machine_as_configuration(host: str) -> None:
    from ragplate.catalog.errors import ConfigurationError
    from ragplate.cli.services import check_port_free

    with pytest.raises(ConfigurationError) as error:
        check_port_free(host, 8000)

    assert str(error.value).startswith(f"cannot serve on {host}:8000: ")
    assert "RAGPLATE_API_HOST" in str(error.value) and "holds the port" not in str(error.value)
    assert error.value.exit_code == 2


def test_ctrl_c_exits_130_saying_aborted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragplate.cli import main
    from ragplate.infra import services

    def interrupted(settings: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(services, "status", interrupted)
    monkeypatch.setattr("sys.argv", ["ragplate", "status"])

    with pytest.raises(SystemExit) as exited:
        main()

    assert exited.value.code == 130
    assert capsys.readouterr().err.strip() == "Aborted."


def test_an_unexpected_error_shows_its_traceback_with_terminal_controls_as_symbols(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragplate.cli import main
    from ragplate.infra import services

    def broken(settings: object) -> None:
        raise RuntimeError("record \x1b]0;owned\x07 \x1b[2J title")

    monkeypatch.setattr(services, "status", broken)
    monkeypatch.setattr("sys.argv", ["ragplate", "status"])

    with pytest.raises(SystemExit) as exited:
        main()

    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "RuntimeError: record ␛]0;owned␇ ␛[2J title" in err
    assert "\x1b" not in err and "\x07" not in err


def _status_failing(monkeypatch: pytest.MonkeyPatch, failure: Any) -> object:
    """The exit code of ``ragplate status`` whose services call raises with ``failure``."""
    from ragplate.cli import main
    from ragplate.infra import services

    def exit_now(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(services, "status", failure)
    monkeypatch.setattr("sys.argv", ["ragplate", "status"])
    # The process ends at once, without Prefect's exit handlers: stood in for here.
    monkeypatch.setattr(os, "_exit", exit_now)
    with pytest.raises(SystemExit) as exited:
        main()
    return exited.value.code


def test_a_service_going_away_under_a_command_is_one_line_and_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx


    def gone(settings: object) -> None:
        # As Prefect's client ends a flow run whose server was stopped: a connection error
        # raised while another was being handled.
        try:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=httpx.Request(
                "POST", "http://127.0.0.1:4200/api/flow_runs/filter?x=1"))
        except httpx.ConnectError as refused:
            raise RuntimeError("the flow run's state could not be set") from refused

    assert _status_failing(monkeypatch, gone) == 3
    err = capsys.readouterr().err
    assert err.startswith("\nError: a service this command used went away at "
                          "http://127.0.0.1:4200/api/flow_runs/filter (ConnectError: "
                          "[Errno 111] Connection refused)")
    assert "Traceback" not in err


@pytest.mark.parametrize("cause", ["store", "none"])
def test_postgresql_stopping_under_a_flow_run_is_one_line_and_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cause: str
) -> None:
    """PostgreSQL stopped under a run, Prefect's server up: the run's store fails, then
    Prefect's server answers 500 to the run's end. The run's own error is the one said;
    without one, the 500."""
    import httpx

    from ragplate.catalog.errors import StoreError

    request = httpx.Request("POST", "http://127.0.0.1:4200/api/flow_runs/x/set_state")

    def stopped(settings: object) -> None:
        try:
            if cause == "store":
                raise StoreError("pgvector store developer/m: the database connection was "
                                 "lost (server closed the connection unexpectedly)")
            raise RuntimeError("the flow failed")
        except Exception:
            response = httpx.Response(500, request=request)
            raise httpx.HTTPStatusError("Server error '500 Internal Server Error'",
                                        request=request, response=response) from None

    assert _status_failing(monkeypatch, stopped) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if cause == "store":
        assert err == ("\nError: pgvector store developer/m: the database connection was "
                       "lost (server closed the connection unexpectedly)\n")
    else:
        assert err.startswith("\nError: the Prefect server failed at "
                              "http://127.0.0.1:4200/api/flow_runs/x/set_state (HTTP 500): its "
                              "database, PostgreSQL, may have stopped")


@pytest.mark.integration
def test_an_unreachable_elasticsearch_is_one_error_line(ragplate_home: Path) -> None:
    """The client's warnings of each retry, with their tracebacks, stay off the console."""
    result = ragplate(ragplate_home, "sources", "list",
                      RAGPLATE_ELASTICSEARCH_URL="http://127.0.0.1:9",
                      RAGPLATE_ELASTICSEARCH_RETRIES="2")

    assert result.returncode == 3, result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("Error: Elasticsearch is unreachable: ")
