"""``up``, ``down``, ``status`` and ``serve``."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragplate.cli.output import console, print_json

if TYPE_CHECKING:
    from ragplate.infra.services import ServiceState

def _print_states(states: list[ServiceState], json_output: bool) -> None:
    if json_output:
        print_json({"services": [asdict(s) for s in states]})
        return
    table = Table()
    addresses = [_address(s) for s in states]
    # A web address is copied into a browser or a client: the column is as wide as the
    # longest one, so a narrow terminal folds the detail (or a socket path) rather than
    # split a URL.
    widest = max((len(line) for a in addresses for line in a.splitlines() if "http" in line),
                 default=3)
    for column in ("service", "state", "url", "pid", "detail"):
        # Folded, never cut: the socket directory, the port held, are what an operator reads.
        table.add_column(column, overflow="fold" if column in ("url", "detail") else "ellipsis",
                         min_width=widest if column == "url" else None)
    for s, address in zip(states, addresses, strict=True):
        table.add_row(s.name, "[green]running[/green]" if s.running else "[red]stopped[/red]",
                      escape(address), str(s.pid or ""), escape(s.detail or ""))
    console.print(table)


def _address(state: ServiceState) -> str:
    """The URL cell: Prefect's UI (what a browser opens) and its API, each labelled."""
    if state.api_url is None:
        return state.url or ""
    lines = [f"UI  {state.url}"] if state.url else []
    return "\n".join([*lines, f"API {state.api_url}"])


def up(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Start the embedded services (PostgreSQL, Prefect server) in the background.

    They keep running for every ragplate process sharing RAGPLATE_HOME until `ragplate down`.

    Example: ragplate up --json
    """
    from ragplate.infra import services
    from ragplate.infra.environment import get_settings

    _print_states(services.up(get_settings()), json_output)


def down(json_output: Annotated[bool, typer.Option("--json")] = False,
         force: Annotated[bool, typer.Option(
             "--force", help="Stop them even while an index-docs run or a switch writes "
             "to the database (the run then fails).")] = False) -> None:
    """Stop the embedded services of this RAGPLATE_HOME (external ones are left alone).

    Refused (exit 3) while an index-docs run or an embedding switch writes to the
    database, unless --force.

    Example: ragplate down
    """
    from ragplate.infra import services
    from ragplate.infra.environment import get_settings

    _print_states(services.down(get_settings(), force=force), json_output)


def status(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show the services and their URLs without starting anything.

    Example: ragplate status --json
    """
    from ragplate.infra import services
    from ragplate.infra.environment import get_settings

    _print_states(services.status(get_settings()), json_output)


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (RAGPLATE_API_HOST).")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535,
                                             help="Port (RAGPLATE_API_PORT).")] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="Only check that the address can be bound, and exit (0 free, 3 "
        "taken): what `make run` does before any work.")] = False,
) -> None:
    """Serve the API (health, documentation search; OpenAPI at /docs).

    Examples:

      ragplate serve --port 8000

      RAGPLATE_API_PORT=8080 ragplate serve --check
    """
    from ragplate.infra.environment import get_settings

    settings = get_settings()
    bind_host, bind_port = host or settings.api_host, port or settings.api_port
    check_port_free(bind_host, bind_port)
    if check:
        console.print(f"the API can serve on http://{bind_host}:{bind_port}", highlight=False,
                      markup=False)
        return

    import uvicorn

    from ragplate.infra.runtime import Runtime

    Runtime(settings).engine  # noqa: B018 - fail fast on the database before binding
    notice = exposure_notice(bind_host)
    if notice:
        console.print(notice, highlight=False, markup=False)
    # No WebSocket routes: without a WebSocket protocol an upgrade request is plain HTTP, so
    # its URL reaches the access log's redaction (uvicorn logs a refused upgrade elsewhere).
    uvicorn.run("ragplate.api.app:create_app", factory=True, host=bind_host, port=bind_port,
                log_level="info", ws="none")


def exposure_notice(host: str) -> str | None:
    """One line when the API binds beyond loopback: every data route needs a bearer
    token, yet the address is reachable by other machines."""
    import ipaddress

    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass  # a host name: may resolve to anything
    return (f"Serving on {host}, reachable beyond this machine: every data route needs a "
            "bearer token (ragplate users token NAME; /health, the API documentation and "
            "the chat page's files are open); put TLS in front of it.")


def check_port_free(host: str, port: int) -> None:
    """Raise :class:`ServiceError` (one line, exit 3) when ``host:port`` cannot be bound,
    e.g. another ``serve`` holds it, rather than uvicorn's log lines."""
    import errno
    import socket

    from ragplate.catalog.errors import ConfigurationError, ServiceError
    from ragplate.infra.ports import bind_error

    error = bind_error(host, port)
    if error is None:
        return
    reason = error.strerror or str(error)
    if isinstance(error, socket.gaierror) or error.errno == errno.EADDRNOTAVAIL:
        # Not a busy port: the host is no address of this machine (a configuration error).
        raise ConfigurationError(f"cannot serve on {host}:{port}: {reason}; the host "
                                 "(--host or RAGPLATE_API_HOST) must be an address of this "
                                 "machine, e.g. 127.0.0.1 or 0.0.0.0")
    raise ServiceError(f"cannot serve on {host}:{port}: {reason}; stop what holds the port "
                       "or choose another with --port or RAGPLATE_API_PORT")


def register(app: typer.Typer) -> None:
    """Attach ``up``, ``down``, ``status`` and ``serve`` to the root app."""
    app.command("up")(up)
    app.command("down")(down)
    app.command("status")(status)
    app.command("serve")(serve)
