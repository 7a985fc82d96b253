"""Whether a TCP address can be bound, checked before a server is started on it."""

from __future__ import annotations

import socket


def bind_error(host: str, port: int) -> OSError | None:
    """Why ``host:port`` cannot be bound right now (``None`` when it can). Binds with
    ``SO_REUSEADDR``, as uvicorn does, so a port in TIME_WAIT is not "taken"."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        return exc
    return None


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
