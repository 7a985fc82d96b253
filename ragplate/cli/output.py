"""Shared CLI output helpers."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from rich.console import Console, ConsoleOptions
from rich.segment import Segment

from ragplate.catalog.errors import RagplateError
from ragplate.catalog.text import terminal_safe
from ragplate.tasks.progress import shown_by_command

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

#: Columns of output that is not a terminal (a log, a pipe): Rich's own default, 80, would
#: cut tables a terminal shows whole. ``COLUMNS`` still decides when set.
PIPE_WIDTH = 200


class PipeConsole(Console):
    """A Rich console for which a reader that closes the pipe early (``| head -1``) ends
    the command quietly with exit 0 (Rich's own answer is exit 1): the reader has what it
    wanted. Everything it prints is :func:`~ragplate.catalog.text.terminal_safe`, segment
    by segment, whatever renders it (a string, a table's cells, a ``Text``, Markdown, a
    panel, a progress bar's description): what people typed or stored (a question, a
    record's title, a quoted sentence) reaches the operator's terminal as text, never as an
    escape sequence it obeys (Rich drops a few controls, not ESC). Rich's own styling and
    cursor moves are not in the segments' text, and stay."""

    def render(self, renderable: Any, options: ConsoleOptions | None = None
               ) -> Iterable[Segment]:
        """Rich's segments of ``renderable``, their text terminal-safe."""
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(terminal_safe(segment.text), segment.style, segment.control)

    def on_broken_pipe(self) -> None:
        """Exit 0 quietly (see :func:`end_on_closed_stdout`)."""
        end_on_closed_stdout()


def end_on_closed_stdout() -> NoReturn:
    """The reader of stdout is gone: send later writes, Python's own flush at exit
    included, nowhere, and exit 0."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(0)


def make_console(*, stderr: bool = False) -> Console:
    """A Rich console on stdout (or stderr) that is :data:`PIPE_WIDTH` wide when that
    stream is not a terminal and ``COLUMNS`` is unset."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        terminal = False
    wide = not terminal and not os.environ.get("COLUMNS")
    return PipeConsole(stderr=stderr, width=PIPE_WIDTH if wide else None)


console = make_console()


#: What JSON writes as itself but a terminal obeys or reorders: DEL, C1 controls and bidi
#: overrides (C0 controls, ESC among them, JSON escapes already). They occur only inside
#: strings, where a JSON escape (backslash, u, four hex digits) is the same text.
_JSON_RAW_CONTROLS = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else; characters a terminal
    would obey are written as JSON escapes (a person reads ``--json`` too)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    text = _JSON_RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    try:
        print(text, flush=True)
    except BrokenPipeError:  # caught here: Click would turn it into exit 1
        end_on_closed_stdout()


def progress_bar(json_output: bool) -> Progress:
    """A Rich progress bar on the shared console, silent with ``--json``."""
    # Imported here: most commands draw no bar, and every command loads this module.
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, disable=json_output)


@contextmanager
def flow_progress(json_output: bool) -> Iterator[None]:
    """One bar per label the running flow reports through ``ragplate.tasks.progress``."""
    from ragplate.tasks import progress

    bar = progress_bar(json_output)
    tasks: dict[str, TaskID] = {}

    def on_progress(label: str, done: int, total: int) -> None:
        if label not in tasks:
            tasks[label] = bar.add_task(label, total=total)
        bar.update(tasks[label], completed=done, total=total)

    bar.start()
    try:
        with progress.listening(on_progress), _logs_above(bar):
            yield
    finally:
        if tasks:
            bar.stop()
        else:
            # No bar was drawn: Progress.stop would still print the empty display and a
            # line, a blank line above the command's table.
            bar.live.transient = True
            bar.live.stop()


@contextmanager
def _logs_above(bar: Progress) -> Iterator[None]:
    """While a bar is drawn on a terminal, the console log writes through it: Rich prints
    what goes to its redirected ``sys.stderr`` above the bar, while a log handler holding
    the real stream would write where the next redraw erases it (a flow run's completion
    line vanished so)."""
    proxy = sys.stderr
    if not bar.live.is_started or proxy is sys.__stderr__:
        yield  # no terminal, or nothing redirected: the log writes as usual
        return
    moved = [(handler, handler.setStream(proxy)) for handler in logging.getLogger().handlers
             if isinstance(handler, logging.StreamHandler) and handler.stream is sys.__stderr__]
    try:
        yield
    finally:
        for handler, stream in moved:
            handler.setStream(stream)


class _NoTracebackForExpectedErrors(logging.Filter):
    """Drops the traceback of a ragplate error from a console log record (the message
    line stays): the command prints the error itself, as one line, and exits with its
    code. Records reach the console after the Prefect API handler stored them whole, so
    the flow run's logs in the UI keep the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, RagplateError):
            record.exc_info, record.exc_text = None, None
        return True


class _ServiceFailuresOnce(logging.Filter):
    """Prefect's background services (its events and API log workers) log each item they
    could not send, with the item, and its events client each reconnection it tried: with
    its server stopped under a run, that is a screenful a second. The first failure of
    each is kept, as one line naming it and why; the repeats are dropped."""

    _FAILED = "Service %r failed to process item %r"

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "prefect.events.clients" and str(record.msg).startswith(
                "Unable to connect to"):
            # The events client's reconnect warning, once (it repeats on every attempt).
            first = record.name not in self._seen
            self._seen.add(record.name)
            return first
        if record.msg != self._FAILED or not isinstance(record.args, tuple) or not record.args:
            return True
        service = str(record.args[0])
        if service in self._seen:
            return False
        self._seen.add(service)
        reason = record.exc_info[1] if record.exc_info else None
        record.msg, record.args = "Prefect's %s could not send to the Prefect API%s (repeats " \
            "are not shown)", (service, f": {reason}" if reason else "")
        record.exc_info, record.exc_text = None, None
        return True


#: What Prefect's engines log about a run's own state and failure, by message start.
_STATE_LINE = "Finished in state "
_ENGINE_ERRORS = ("Task run failed with ", "Encountered exception during execution",
                  "Crash detected!", _STATE_LINE)
_FLOW_RUNS, _TASK_RUNS = "prefect.flow_runs", "prefect.task_runs"
_EVENTS_WORKER = "EventsWorker"


class _RunRecordsOnce(logging.Filter):
    """The console's view of Prefect's flow- and task-run records: a task that completes
    says nothing at INFO (its state line is kept in the UI), and the exception that stops a
    run is not logged on the way up (by the task, the flow, their state lines): the command
    reports it once, as its error. What a run's own code logs, a retry, a warning, a
    flow run's start, link and completion, stay; the count of events still being sent at
    exit does not, nor a record the command prints its own way (marked by the flow, see
    :mod:`ragplate.tasks.progress`: the flow run's log in the UI keeps it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if shown_by_command(record):
            return False
        if record.name == _EVENTS_WORKER:
            # At exit Prefect sends the run's last events and counts them down as a
            # warning; none is lost, so the count says nothing to the operator.
            return not record.getMessage().startswith("Still processing items")
        if not record.name.startswith((_FLOW_RUNS, _TASK_RUNS)):
            return True
        message = record.getMessage()
        if message.startswith(_STATE_LINE):
            # The flow's completion is one line; a failed state is the command's error.
            return (record.name.startswith(_FLOW_RUNS)
                    and message.startswith(_STATE_LINE + "Completed"))
        return not (record.levelno >= logging.ERROR and message.startswith(_ENGINE_ERRORS))


class _RunFormatter(logging.Formatter):
    """``LEVEL name: message``; a run's record names its flow run or task run instead. The
    line is :func:`~ragplate.catalog.text.terminal_safe`: a warning may quote a file name
    or a value someone else wrote."""

    def format(self, record: logging.LogRecord) -> str:
        line = terminal_safe(super().format(record))
        task_run = getattr(record, "task_run_name", None)
        flow_run = getattr(record, "flow_run_name", None)
        if record.name.startswith(_TASK_RUNS) and task_run:
            where = f"task run {task_run!r}"
        elif record.name.startswith(_FLOW_RUNS) and flow_run:
            where = f"flow run {flow_run!r}"  # its first line names the flow
        else:
            return line
        return line.replace(f"{record.levelname} {record.name}:", f"{record.levelname} {where}:",
                            1)


def configure_logging() -> None:
    """The CLI's console log: warnings of every library, Prefect's run records as
    :class:`_RunRecordsOnce` lets them through, each naming its run."""
    handler = logging.StreamHandler()
    handler.setFormatter(_RunFormatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_RunRecordsOnce())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    # The Elasticsearch client warns of every retry with its traceback; the command's one
    # error line names the cluster and the reason when the retries are spent.
    logging.getLogger("elastic_transport").setLevel(logging.ERROR)


def quiet_expected_errors() -> None:
    """Attach :class:`_NoTracebackForExpectedErrors` to the console handlers Prefect
    configured on the root logger, and :class:`_ServiceFailuresOnce` to Prefect's internal
    logger (call once Prefect is imported; idempotent)."""
    import prefect.main  # noqa: F401 - configures Prefect's logging

    once = _ServiceFailuresOnce()
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _NoTracebackForExpectedErrors) for f in handler.filters):
            handler.addFilter(_NoTracebackForExpectedErrors())
        if not any(isinstance(f, _ServiceFailuresOnce) for f in handler.filters):
            handler.addFilter(once)
    # Prefect's internal loggers write through handlers of their own (they do not
    # propagate to the root); a handler's filter sees its children's records too.
    for handler in logging.getLogger("prefect._internal").handlers:
        if not any(isinstance(f, _ServiceFailuresOnce) for f in handler.filters):
            handler.addFilter(once)


def confirm(question: str) -> bool:
    """Ask ``question`` on stderr (default no). The end of the input (Ctrl-D, or nothing to
    read as with ``< /dev/null``) answers no, as ``n`` does; Ctrl-C still aborts (130)."""
    import typer

    try:
        return typer.confirm(question, default=False, err=True)
    except typer.Abort as exc:
        # The prompt raises Abort for both; only the interrupt stays one.
        if isinstance(exc.__context__, EOFError):
            typer.echo("", err=True)
            return False
        raise


def examples(*lines: str) -> str:
    """A command group's ``--help`` epilog: its examples, one per line."""
    return "Examples:\n\n" + "\n\n".join(f"  {line}" for line in lines)
