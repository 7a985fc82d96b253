"""The ``ragplate`` command line (Typer + Rich)."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from rich.markup import escape

from ragplate.catalog.errors import RagplateError
from ragplate.cli import (
    analytics,
    audit,
    bench,
    db,
    demo,
    deploy,
    docs,
    embeddings,
    evaluate,
    guardrails,
    index,
    search,
    servers,
    services,
    sources,
    tuning,
    users,
)
from ragplate.cli import help as help_assistant  # not ``help``: the builtin keeps its name
from ragplate.cli.output import configure_logging, end_on_closed_stdout, make_console
from ragplate.cli.typer_style import apply as _tidy_typer_help
from ragplate.infra.home import ragplate_home, use_home_for_prefect

_tidy_typer_help()  # flags without a type, arguments as QUESTION: before any command runs

HELP = """Documentation intelligence: index Markdown docs, retrieve with citations.

Examples:

  ragplate up                                  # start the embedded PostgreSQL and Prefect server

  ragplate index-docs                          # index the configured roots (incremental)

  ragplate index-docs --path ../shared/corpora/laraplate --prefix '' --full

  ragplate retrieve "How do I add an embedding profile?" --json

  ragplate retrieve "How do I search?" --index user --tenant acme --permission crud.read

  ragplate help --question "How do I rebuild the documentation index?"

  ragplate help                                # chat with the developer help assistant

  ragplate embeddings probe local:intfloat/multilingual-e5-small

  ragplate serve                               # the API on 127.0.0.1:8000 (OpenAPI at /docs)
"""

app = typer.Typer(
    help=HELP,
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
# One way of adding commands: every module attaches its own with ``register(app)``.
for module in (docs, sources, services, embeddings, db, bench, servers, demo, evaluate, tuning,
               search, users, guardrails, help_assistant, audit, analytics,
               deploy, index):
    module.register(app)

#: Errors name values someone else may have written (a file name): printed terminal-safe.
err_console = make_console(stderr=True)


def undecodable_argument(arguments: list[str]) -> str | None:
    """The first argument that is not UTF-8 (Python holds its bytes as lone surrogates),
    shown by its bytes, with its position; ``None`` when every argument is text."""
    for position, argument in enumerate(arguments, 1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(argument).decode("utf-8", "backslashreplace")
            return f"argument {position} '{shown}' is not valid UTF-8"
    return None


def main() -> None:
    """Entry point: run the app; a RagplateError becomes one line and its exit code."""
    try:
        _main()
        sys.stdout.flush()  # here, so that a closed pipe is seen below, not at exit
    except BrokenPipeError:  # a reader that closed the pipe early (``| head -1``)
        end_on_closed_stdout()


def _main() -> None:
    configure_logging()
    problem = undecodable_argument(sys.argv[1:])
    if problem is not None:  # before Typer, which would fail on it with a traceback
        err_console.print(f"[red]Error:[/red] {escape(problem)}", highlight=False,
                          soft_wrap=True)
        sys.exit(2)
    try:
        # Before any command imports prefect (which creates its home then): under
        # RAGPLATE_HOME (refused, like any RagplateError below, when set but empty).
        use_home_for_prefect(ragplate_home(os.environ))
        # Without standalone mode Typer returns exit codes (e.g. 130 on Ctrl-C) instead
        # of exiting with them.
        code = app(standalone_mode=False)
        if code == 130:  # Typer's answer to Ctrl-C without standalone mode
            err_console.print("Aborted.")
        if isinstance(code, int) and code:
            sys.exit(code)
    except RagplateError as exc:
        # Escaped: messages carry "[request_id …]" and file names Rich would read as tags;
        # soft_wrap: one line whatever the terminal width.
        err_console.print(f"[red]Error:[/red] {escape(str(exc))}", highlight=False,
                          markup=True, soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("Aborted.")
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        if isinstance(exc, _usage_errors()):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Exit):
            sys.exit(exc.exit_code)
        unreachable = _unreachable_service(exc)
        if unreachable is not None:
            message, code = unreachable
            # On a line of its own: Prefect's own complaints may have left one unfinished.
            sys.stderr.write("\n")
            err_console.print(f"[red]Error:[/red] {escape(message)}", highlight=False,
                              soft_wrap=True)
            # Not sys.exit: at exit Prefect would go on trying, for minutes, to send its
            # last events and logs to the server that went away.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        # An unexpected error still shows its traceback, as Python would, but its messages
        # may quote a question or a record: terminal controls are shown, not obeyed.
        import traceback

        from ragplate.catalog.text import terminal_safe

        sys.stderr.write(terminal_safe("".join(traceback.format_exception(exc))))
        sys.stderr.flush()
        sys.exit(1)


def _unreachable_service(exc: BaseException) -> tuple[str, int] | None:
    """One line, and the exit code, for an error of a service failing under a command (the
    services stopped with ``ragplate down --force`` under a flow run: Prefect's client
    cannot reach its server; PostgreSQL stopped under a run: Prefect's server answers 500
    to the run's end), when ``exc`` is or was raised from such a failure; ``None`` for
    anything else. ragplate's own clients wrap their connection errors; what is left
    unwrapped is Prefect's. A ragplate error in the same chain (the run's own, over which
    the service's failure was raised: its store lost the database) is the one reported."""
    import httpx

    # A service that is gone: refused, or cut off. Not a timeout (a slow service) nor a
    # protocol error of the request itself (a misconfigured address).
    gone = (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    found: tuple[str, int] | None = None
    for error in chain:
        if found is not None:
            break
        if isinstance(error, gone):
            found = (f"a service this command used went away{_where(error)} "
                     f"({type(error).__name__}: {error}); `ragplate status` shows the "
                     "services, `ragplate up` starts them, then run the command again", 3)
        elif (isinstance(error, httpx.HTTPStatusError)
              and error.response.status_code >= 500):
            found = (f"the Prefect server failed{_where(error)} (HTTP "
                     f"{error.response.status_code}): its database, PostgreSQL, may have "
                     "stopped; `ragplate status` shows the services, `ragplate up` starts "
                     "them, then run the command again", 3)
    if found is None:
        return None
    own = next((error for error in chain if isinstance(error, RagplateError)), None)
    return (str(own), own.exit_code) if own is not None else found


def _where(error: Any) -> str:
    """`` at URL`` of the request an httpx error was raised for (without its query)."""
    try:
        return f" at {error.request.url.copy_with(query=None)}"
    except RuntimeError:  # an error raised without its request
        return ""


def _usage_errors() -> tuple[type[Any], ...]:
    """Click's exception class, and the one of the click copy recent Typer versions vendor
    (``typer._click``): their usage errors are not ``click.ClickException``s."""
    import click

    try:
        from typer._click.exceptions import ClickException as TyperClickException
    except ImportError:  # Typer that still uses click itself
        return (click.ClickException,)
    return (click.ClickException, TyperClickException)
