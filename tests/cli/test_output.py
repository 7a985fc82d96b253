"""The CLI's console (:mod:`ragplate.cli.output`): wide enough in a log for a table,
and Prefect's run records once each: no task line at INFO, one error."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from ragplate.cli import output
from ragplate.infra import postgres
from tests.testing.corpus import write_corpus
from tests.testing.index_docs import index_docs_process


def _record(name: str, level: int, message: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord(name, level, __file__, 1, message, None, None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def _console_lines(*records: logging.LogRecord) -> list[str]:
    """What the CLI's console handler (as :func:`output.configure_logging` builds it)
    prints of ``records``."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(output._RunFormatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(output._RunRecordsOnce())
    for record in records:
        if handler.filter(record):
            handler.emit(record)
    return stream.getvalue().splitlines()


TASK = {"task_run_name": "embed-batch-3f1", "task_name": "embed-batch",
        "flow_run_name": "brave-fox", "flow_name": "index-rag-docs"}
FLOW = {"flow_run_name": "brave-fox", "flow_name": "index-rag-docs"}


def test_a_completed_task_says_nothing_and_the_flow_says_it_once() -> None:
    lines = _console_lines(
        _record("prefect.flow_runs", logging.INFO,
                "Beginning flow run 'brave-fox' for flow 'index-rag-docs'", **FLOW),
        *[_record("prefect.task_runs", logging.INFO, "Finished in state Completed()", **TASK)
          for _ in range(18)],
        _record("prefect.flow_runs", logging.INFO, "Finished in state Completed()", **FLOW))

    assert lines == [
        "INFO flow run 'brave-fox': Beginning flow run 'brave-fox' for flow 'index-rag-docs'",
        "INFO flow run 'brave-fox': Finished in state Completed()",
    ]


def test_a_failure_is_left_to_the_command_and_a_retry_names_its_task() -> None:
    lines = _console_lines(
        _record("prefect.task_runs", logging.INFO,
                "Task run failed with exception: OSError('x') - Retry 1/3 will start 2 "
                "second(s) from now", **TASK),
        _record("prefect.task_runs", logging.ERROR,
                "Task run failed with exception: OSError('x') - Retries are exhausted", **TASK),
        _record("prefect.task_runs", logging.ERROR,
                "Finished in state Failed('Task run encountered an exception OSError: x')",
                **TASK),
        _record("prefect.flow_runs", logging.ERROR,
                "Encountered exception during execution: OSError('x')", **FLOW),
        _record("prefect.flow_runs", logging.INFO,
                "Finished in state Failed('Flow run encountered an exception: OSError: x')",
                **FLOW),
        _record("prefect.task_runs", logging.WARNING,
                "documentation root /docs (prefix 'd') holds no Markdown file", **TASK),
        _record("ragplate.infra.prefect_server", logging.WARNING, "port 4200 is held"))

    assert lines == [
        "INFO task run 'embed-batch-3f1': Task run failed with exception: OSError('x') - "
        "Retry 1/3 will start 2 second(s) from now",
        "WARNING task run 'embed-batch-3f1': documentation root /docs (prefix 'd') holds no "
        "Markdown file",
        "WARNING ragplate.infra.prefect_server: port 4200 is held",
    ]


def test_the_count_of_events_sent_at_exit_is_not_printed_but_other_warnings_are() -> None:
    lines = _console_lines(
        _record("EventsWorker", logging.WARNING, "Still processing items: 28 items remaining..."),
        _record("EventsWorker", logging.WARNING, "Failed to connect to the events server"))

    assert lines == ["WARNING EventsWorker: Failed to connect to the events server"]


def test_a_record_the_command_prints_itself_is_left_to_the_command() -> None:
    from ragplate.tasks.progress import SHOWN_BY_COMMAND

    warning = "the reranker did not run on 49 of 49 cases (status not_run)"
    lines = _console_lines(
        _record("prefect.flow_runs", logging.WARNING, warning, **FLOW, **SHOWN_BY_COMMAND),
        _record("prefect.flow_runs", logging.INFO, "tune-retrieval: outcome within_noise\n"
                "# Retrieval tuning profile measured by t.json", **FLOW, **SHOWN_BY_COMMAND),
        _record("prefect.flow_runs", logging.WARNING, "2 expected hit id(s) are absent",
                **FLOW))

    assert lines == ["WARNING flow run 'brave-fox': 2 expected hit id(s) are absent"]


def test_a_console_that_is_not_a_terminal_does_not_cut_a_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    console = output.make_console()
    table = Table()
    for column in ("index", "sources read", "unchanged", "re-embedded", "deleted",
                   "chunks written", "seconds"):
        table.add_column(column)
    table.add_row("developer", "16", "16", "0", "0", "0", "0.04")

    console.print(table)

    assert console.width == output.PIPE_WIDTH
    printed = sys.stdout.getvalue()
    assert "re-embedded" in printed and "chunks written" in printed and "…" not in printed
    monkeypatch.setenv("COLUMNS", "90")
    assert output.make_console().width == 90  # COLUMNS still decides


FILES = {
    "setup.md": "# Setup\n\nRun the installer from the release page.\n",
    "usage.md": "# Usage\n\nStart the service and open the dashboard.\n",
}


@pytest.mark.integration
@pytest.mark.slow
def test_index_docs_prints_one_line_per_run_step_and_one_error(
    ragplate_home: Path, prefect_api_url: str, settings: object, tmp_path: Path,
) -> None:
    from ragplate.infra.runtime import Runtime

    root = write_corpus(tmp_path / "small", FILES)
    bad = write_corpus(tmp_path / "bad", {"a.md": "---\naudience: nobody\n---\n# A\n\nText.\n"})
    try:
        done = index_docs_process(ragplate_home, prefect_api_url, "--path", str(root),
                                  "--prefix", "out-small", "--profile", "developer", "--full")
        failed = index_docs_process(ragplate_home, prefect_api_url, "--path", str(bad))
        args = ("--path", str(root), "--prefix", "out-small", "--profile", "developer")
        again = index_docs_process(ragplate_home, prefect_api_url, *args)
        again_run = index_docs_process(ragplate_home, prefect_api_url, *args, "--always-run")
    finally:
        Runtime(settings).store("developer").delete_sources(  # type: ignore[arg-type]
            [f"out-small/{name}" for name in FILES])

    assert done.returncode == 0, done.stderr
    logged = done.stderr.splitlines()
    assert [line.split(": ", 1)[1].split(" ")[0] for line in logged] == [
        "Beginning", "View", "Finished"], logged
    assert all(line.startswith("INFO flow run '") for line in logged)
    assert logged[-1].endswith(": Finished in state Completed()")
    assert "prefect.task_runs" not in done.stdout + done.stderr
    assert "index-rag-docs" in done.stdout  # the summary table, whole
    # Nothing to do: said without a flow run, unless one is asked for.
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""
    assert again.stdout.startswith("Up to date: nothing to embed, delete or record; no flow "
                                   "run was started (--always-run starts one).\n")
    assert "index-rag-docs" in again.stdout
    assert again_run.returncode == 0, again_run.stderr
    assert [line.split(": ", 1)[1].split(" ")[0] for line in again_run.stderr.splitlines()] == [
        "Beginning", "View", "Finished"]
    assert "Up to date" not in again_run.stdout
    assert failed.returncode == 2, failed.stderr
    error = "bad/a.md: unknown audience 'nobody'"
    assert (failed.stdout + failed.stderr).count(error) == 1, failed.stderr
    assert [line for line in failed.stderr.splitlines() if not line.startswith("INFO ")] == [
        "Error: bad/a.md: unknown audience 'nobody' (accepted: user, developer, shared)"]


def test_a_log_line_written_while_a_bar_is_drawn_goes_above_the_bar(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console
    from rich.progress import Progress

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100)
    # The CLI's handler holds the real stderr, as logging.basicConfig made it.
    handler = logging.StreamHandler(sys.__stderr__)
    monkeypatch.setattr(sys, "__stderr__", io.StringIO())  # what would bypass the bar
    handler.setStream(sys.__stderr__)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with Progress(console=terminal) as bar, output._logs_above(bar):
            bar.add_task("developer index", total=1)
            logging.getLogger("prefect.flow_runs").warning("Finished in state Completed()")
            assert handler.stream is not sys.__stderr__
        assert handler.stream is sys.__stderr__  # given back
    finally:
        root.removeHandler(handler)

    assert "Finished in state Completed()" in screen.getvalue()
    assert sys.__stderr__.getvalue() == ""


@pytest.mark.parametrize("args", [["guardrails", "screen", "hello"],
                                  ["guardrails", "screen", "hello", "--json"]],
                         ids=["console", "json"])
def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly(
        args: list[str], tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # as `| head -1` does once it has its line: every write now fails
    env = {**os.environ, "RAGPLATE_HOME": str(tmp_path / "home")}
    try:
        done = subprocess.run([sys.executable, "-m", "ragplate", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=120,
                              check=False)
    finally:
        os.close(write)
        postgres.stop(tmp_path / "home")  # the command left its services up, as they stay

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mZebrafish guide\x1b[0m \u202eevil"


def test_the_console_prints_what_people_typed_as_text_not_as_terminal_commands() -> None:
    # A record's title or a logged question, printed on a real terminal (colours on): the
    # title, screen-clearing and colour sequences in it are shown, not obeyed.
    stream = io.StringIO()
    console = output.PipeConsole(file=stream, force_terminal=True, width=100)
    table = Table("question")
    table.add_row(HOSTILE)
    console.print(HOSTILE, highlight=False)
    console.print(table)
    # Rich objects built from the text (an answer, a quoted excerpt) are covered too.
    console.print(Text(HOSTILE))
    console.print(Markdown(HOSTILE))

    printed = stream.getvalue()
    for sequence in ("\x1b]0;", "\x1b[2J", "\x1b[31m", "\u202e"):
        assert sequence not in printed, sequence
    # (Rich drops the BEL itself.)
    assert printed.count("␛]0;pwned") == printed.count("␛[2J␛[31mZebrafish guide␛[0m") == 4
    assert "\x1b[1m" in printed  # the console's own styling (the table's header) stays


def test_a_log_line_quoting_a_hostile_value_is_terminal_safe() -> None:
    [line] = _console_lines(_record("ragplate.indexing", logging.WARNING,
                                    f"skipped {HOSTILE}.md"))
    assert "\x1b" not in line and "\u202e" not in line
    assert line.startswith("WARNING ragplate.indexing: skipped ␛]0;pwned␇")


def test_json_output_escapes_what_a_terminal_would_obey_and_reads_back_the_same(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = {"title": "a\x9b2J \u202eevil\u202c \\\x9b é 日本", "esc": "\x1b[2J"}
    output.print_json(data)

    printed = capsys.readouterr().out
    assert not any(c in printed for c in "\x9b\u202e\u202c\x1b")
    assert "\\u009b" in printed and "é 日本" in printed  # other text stays as it is
    assert json.loads(printed) == data


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_a_run_that_reports_no_progress_leaves_no_blank_line(
        monkeypatch: pytest.MonkeyPatch, terminal: bool) -> None:
    from rich.console import Console

    from ragplate.tasks import progress

    screen = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=screen, force_terminal=terminal,
                                                   width=100))
    with output.flow_progress(json_output=False):
        pass
    assert "\n" not in screen.getvalue()

    with output.flow_progress(json_output=False):
        progress.report("developer index", 1, 1)
    assert "developer index" in screen.getvalue()  # a bar that was drawn stays


def test_a_run_that_fails_stops_its_bars_and_passes_the_error_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from ragplate.tasks import progress

    screen = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=screen, force_terminal=False,
                                                   width=100))
    for report in (False, True):
        with pytest.raises(RuntimeError, match="store down"), \
                output.flow_progress(json_output=False):
            if report:
                progress.report("developer index", 1, 2)
            raise RuntimeError("store down")
        assert not output.console._live_stack  # no display left running
    assert "developer index" in screen.getvalue()


def test_a_prefect_service_failing_to_reach_its_server_is_one_line_per_service() -> None:
    once = output._ServiceFailuresOnce()

    def failure(service: str) -> logging.LogRecord:
        try:
            raise ConnectionError("All connection attempts failed")
        except ConnectionError:
            import sys as system

            record = _record("prefect._internal.concurrency", logging.ERROR,
                             "Service %r failed to process item %r")
            record.args = (service, "Event(" + "x" * 5000 + ")")
            record.exc_info = system.exc_info()
            return record

    first, again, other = failure("EventsWorker"), failure("EventsWorker"), failure("APILog")
    other_record = _record("prefect._internal.concurrency", logging.ERROR, "something else")

    assert [once.filter(r) for r in (first, again, other, other_record)] == [
        True, False, True, True]
    assert first.getMessage() == ("Prefect's EventsWorker could not send to the Prefect API: "
                                  "All connection attempts failed (repeats are not shown)")
    assert first.exc_info is None and "xxxx" not in first.getMessage()
    reconnect = [_record("prefect.events.clients", logging.WARNING,
                         "Unable to connect to 'ws://127.0.0.1:4200/api/events/in'.")
                 for _ in range(3)]
    assert [once.filter(r) for r in reconnect] == [True, False, False]

