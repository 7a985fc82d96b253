"""Credentials a client put in a URL stay out of the server's access log."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ragplate.api.access_log import RedactCredentials, install, redact_path

TOKEN = "rp_" + "Abc-_123" * 5


@pytest.mark.parametrize(("path", "logged"), [
    ("/v1/docs/search", "/v1/docs/search"),
    (f"/v1/docs/search?token={TOKEN}", "/v1/docs/search?token=[redacted]"),
    ("/v1/docs/search?access_token=opaque&top_k=3",
     "/v1/docs/search?access_token=[redacted]&top_k=3"),
    ("/app/crud/core/users?API-Key=xyz&page=2", "/app/crud/core/users?API-Key=[redacted]&page=2"),
    ("/v1/search?x-api-key=xyz&client_secret=s&monkey=1",
     "/v1/search?x-api-key=[redacted]&client_secret=[redacted]&monkey=1"),
    ("/v1/search?authToken=a&clientSecret=b&privateKey=c&token[]=d&auth.token=e&keyword=f",
     "/v1/search?authToken=[redacted]&clientSecret=[redacted]&privateKey=[redacted]"
     "&token[]=[redacted]&auth.token=[redacted]&keyword=f"),
    # Sessions, one-time codes and tickets are credentials too; a zip code is not.
    ("/health?session=S&sessionId=T&session_id=U&sid=V&cookie=W&otp=X&code=Y&ticket=Z"
     "&zip_code=20100&mode=fast",
     "/health?session=[redacted]&sessionId=[redacted]&session_id=[redacted]&sid=[redacted]"
     "&cookie=[redacted]&otp=[redacted]&code=[redacted]&ticket=[redacted]&zip_code=20100"
     "&mode=fast"),
    # A token anywhere: in a value of any name, as a name, in the path, percent-encoded.
    (f"/v1/docs/search?q=see%20{TOKEN}", "/v1/docs/search?q=[redacted]"),
    (f"/v1/search?t={TOKEN.replace('_', '%5F', 1)}", "/v1/search?t=[redacted]"),
    (f"/v1/search?{TOKEN}", "/v1/search?[redacted]"),
    (f"/v1/search?{TOKEN}=1&page=2", "/v1/search?[redacted]=[redacted]&page=2"),
    (f"/app/crud/core/{TOKEN}", "/app/crud/core/[redacted]"),
    (f"/app/crud/core/{TOKEN.replace('_', '%5F', 1)}", "/app/crud/core/[redacted]"),
    # Nothing to redact: logged byte for byte.
    ("/v1/search?q=rebuild+the+index&mode=fast", "/v1/search?q=rebuild+the+index&mode=fast"),
    ("/v1/search?flag&&x=%7E%ff", "/v1/search?flag&&x=%7E%ff"),
])
def test_redact_path(path: str, logged: str) -> None:
    assert redact_path(path) == logged


def test_the_filter_rewrites_only_the_path_of_an_access_record() -> None:
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1,
                               '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5000", "GET", f"/health?token={TOKEN}", "1.1", 200),
                               None)

    assert RedactCredentials().filter(record)
    assert record.getMessage() == \
        '127.0.0.1:5000 - "GET /health?token=[redacted] HTTP/1.1" 200'


def test_install_adds_the_filter_once() -> None:
    install()
    install()

    filters = logging.getLogger("uvicorn.access").filters
    assert sum(isinstance(f, RedactCredentials) for f in filters) == 1


@pytest.mark.integration
def test_a_token_in_the_url_never_reaches_the_served_apis_log(ragplate_home: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_API_URL"}
    environ.update(RAGPLATE_HOME=str(ragplate_home))
    server = subprocess.Popen([sys.executable, "-m", "ragplate", "serve", "--port", str(port)],
                              env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{base}/health", timeout=5)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, "serve stopped"
                time.sleep(0.5)
        response = httpx.post(f"{base}/v1/docs/search?token={TOKEN}",
                              json={"query": "backups"}, timeout=30)
        # A WebSocket handshake to the same URL (the API has no WebSocket routes).
        upgrade = httpx.get(f"{base}/v1/docs/search?token={TOKEN}", timeout=30, headers={
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    finally:
        server.terminate()
        log, _ = server.communicate(timeout=60)

    assert response.status_code == 401
    assert upgrade.status_code == 405  # a POST route
    assert TOKEN not in log
    assert '"POST /v1/docs/search?token=[redacted] HTTP/1.1" 401' in log
    assert '"GET /v1/docs/search?token=[redacted] HTTP/1.1" 405' in log


def test_an_error_message_loses_its_tokens_and_keeps_names_ending_like_one() -> None:
    from ragplate.api.access_log import without_tokens

    assert without_tokens("no sao.tickets record 'rp_Nbzlic8MisHIZZ1TNxetu9IG1pfvl8hL3-jzt'"
                          ) == "no sao.tickets record '[redacted]'"
    assert without_tokens("unknown entity 'sao.rp_abc'") == "unknown entity 'sao.[redacted]'"
    # A tenant or field whose name ends like the prefix is no token.
    assert without_tokens("writes are limited to tenant 'corp_acme'") == (
        "writes are limited to tenant 'corp_acme'")
