"""Elasticsearch for the tests: the ``noida-db`` emulator started on a free loopback port
(an emulator of the Elasticsearch 8.15 HTTP API, not Elasticsearch), or a real cluster
named by ``RAGPLATE_ELASTICSEARCH_URL``; and every request the client sends checked
against the published Elasticsearch 8.17 OpenAPI document, which is the authority where
the emulator differs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from tests.testing.openapi_contract import ContractDocument

if TYPE_CHECKING:
    from ragplate.catalog.settings import Settings

SPEC = Path(__file__).resolve().parents[3] / "shared" / "specs" / "elasticsearch.openapi.json"

#: ``RAGPLATE_ELASTICSEARCH_*`` of the environment the tests were started with: they name
#: the real cluster the suites also run against. Taken out of the environment at start
#: (tests/conftest.py), so that no other test runs on that cluster by accident.
CLUSTER_ENV: dict[str, str] = {}


@dataclass
class Target:
    """Where an Elasticsearch suite runs: ``kind`` is ``emulator`` or ``cluster``."""

    kind: str
    url: str
    env: dict[str, str] = field(default_factory=dict)
    prefix: str = "rptest"
    #: The requests sent to it, each checked against the published API.
    log: RequestLog | None = None

    def settings_env(self) -> dict[str, str]:
        """``RAGPLATE_*`` variables selecting this target."""
        return {"RAGPLATE_ELASTICSEARCH_URL": self.url,
                "RAGPLATE_ELASTICSEARCH_INDEX_PREFIX": self.prefix, **self.env}

    def settings(self, home: Path) -> Settings:
        """Settings reaching this target (and nothing else), with ``home``."""
        from ragplate.catalog.settings import Settings

        fields = {key.removeprefix("RAGPLATE_").lower(): value
                  for key, value in self.settings_env().items()}
        return Settings(home=home, **fields)


# -- the published API as the authority ----------------------------------------------------
class ContractViolation(AssertionError):
    """A request the published Elasticsearch API does not accept."""


class ApiContract:
    """The published Elasticsearch document: which operation a request is, and whether
    its query parameters and body are ones that operation accepts."""

    def __init__(self, path: Path = SPEC) -> None:
        self.document = ContractDocument(path, union_one_of=True)
        self._audited: set[int] = set()
        self._routes: list[tuple[int, re.Pattern[str], str]] = []
        for template in self.document.document["paths"]:
            pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
            literal = sum(1 for part in template.split("/") if part and "{" not in part)
            self._routes.append((literal, re.compile(f"^{pattern}$"), template))
        self._routes.sort(key=lambda r: -r[0])

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]]:
        """The (path template, operation) a request is, or :class:`ContractViolation`."""
        for _, pattern, template in self._routes:
            if pattern.match(path):
                operation = self.document.document["paths"][template].get(method.lower())
                if operation is not None:
                    return template, operation
        raise ContractViolation(f"{method} {path}: no such operation in {SPEC.name}")

    def _parameters(self, operation: dict[str, Any]) -> set[str]:
        names = set()
        for parameter in operation.get("parameters", []):
            resolved = self.document.resolve(parameter)
            if resolved.get("in") == "query":
                names.add(resolved["name"])
        return names

    def body_schema(self, operation: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON schema of an operation's request body (``None``: it takes none)."""
        body = operation.get("requestBody")
        if body is None:
            return None
        body = self.document.resolve(body)
        return dict(body["content"]["application/json"]["schema"])

    def check(self, method: str, target: str, body: Any) -> str:
        """Raise :class:`ContractViolation` unless the published API accepts the request;
        returns ``METHOD /path/template``."""
        parts = urlsplit(target)
        template, operation = self.operation(method, parts.path)
        known = self._parameters(operation)
        unknown = sorted({name for name, _ in parse_qsl(parts.query)} - known)
        if unknown:
            raise ContractViolation(f"{method} {template}: undeclared query parameters "
                                    f"{unknown}")
        schema = self.body_schema(operation)
        if body is not None:
            if schema is None:
                raise ContractViolation(f"{method} {template} takes no body")
            if id(schema) not in self._audited:
                self.document.audit(schema)
                self._audited.add(id(schema))
            problems = self.document.errors(body, schema)
            if problems:
                raise ContractViolation(f"{method} {template} ({operation.get('operationId')})"
                                        f": " + "; ".join(problems[:5]))
        return f"{method.upper()} {template}"


@dataclass
class Sent:
    """One request the client sent."""

    method: str
    target: str
    body: Any
    operation: str


class RequestLog:
    """Every request of the Elasticsearch client in this process, each checked against
    the published API before it leaves (installed on the transport class for a session)."""

    def __init__(self, contract: ApiContract) -> None:
        self.contract = contract
        self.sent: list[Sent] = []

    def install(self) -> Iterator[None]:
        """Wrap ``elastic_transport.Transport.perform_request`` while the generator runs."""
        from elastic_transport import Transport

        original = Transport.perform_request
        log = self

        def perform_request(self: Any, method: str, target: str, *args: Any,
                            **kwargs: Any) -> Any:
            body = kwargs.get("body")
            operation = log.contract.check(method, target, _plain(body))
            log.sent.append(Sent(method, target, _plain(body), operation))
            return original(self, method, target, *args, **kwargs)

        Transport.perform_request = perform_request  # type: ignore[method-assign]
        try:
            yield
        finally:
            Transport.perform_request = original  # type: ignore[method-assign]

    def operations(self) -> set[str]:
        """The operations (``METHOD /path/template``) sent so far."""
        return {s.operation for s in self.sent}


def _plain(body: Any) -> Any:
    """The body as JSON would carry it (tuples are lists, numpy floats are floats)."""
    if body is None or isinstance(body, str):
        return body
    if isinstance(body, bytes):  # NDJSON
        return [json.loads(line) for line in body.splitlines() if line.strip()]
    if isinstance(body, list | tuple):  # a bulk body: lines, serialised or not
        return [json.loads(b) if isinstance(b, bytes | str) else _plain(b) for b in body]
    return json.loads(json.dumps(body, default=float))


def cluster_env() -> dict[str, str]:
    """The cluster's settings as they were given, without the URL."""
    return {k: v for k, v in CLUSTER_ENV.items() if k != "RAGPLATE_ELASTICSEARCH_URL"}


def take_cluster_env() -> None:
    """Move ``RAGPLATE_ELASTICSEARCH_*`` from the environment into :data:`CLUSTER_ENV`."""
    for key in list(os.environ):
        if key.startswith("RAGPLATE_ELASTICSEARCH_"):
            CLUSTER_ENV[key] = os.environ.pop(key)
