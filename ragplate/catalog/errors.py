"""One error hierarchy, translated at the edges (HTTP status, CLI exit code)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any


class RagplateError(Exception):
    """Base of every error ragplate raises on purpose.

    ``http_status`` and ``exit_code`` say how the API and the CLI translate it.
    """

    http_status: int = 500
    exit_code: int = 1
    #: Seconds after which the same request may well succeed, sent as ``Retry-After``: set
    #: only on a refusal that passes by itself (a bound on work in progress), not on an
    #: outage of unknown length.
    retry_after: int | None = None

    def __init__(self, *args: object, retry_after: int | None = None) -> None:
        super().__init__(*args)
        if retry_after is not None:
            self.retry_after = retry_after


class ConfigurationError(RagplateError):
    """A setting or profile is missing, malformed or inconsistent."""

    http_status = 500
    exit_code = 2


class EmptyVariableError(ConfigurationError):
    """``RAGPLATE_*`` variables ragplate reads that are set but empty (or only whitespace).

    Refused rather than read as unset: ``RAGPLATE_DATABASE_URL=`` (a compose file whose
    ``${DATABASE_URL}`` is unset) would otherwise start on the embedded database."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        if len(self.names) == 1:
            message = (f"{self.names[0]} is set but empty: unset it to use the default, or "
                       "give a value")
        else:
            message = (f"{', '.join(self.names)} are set but empty: unset them to use the "
                       "defaults, or give values")
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.names,))


def is_blank(value: str) -> bool:
    """Whether an environment variable's value is empty or only whitespace."""
    return not value.strip()


class UnknownProfileError(ConfigurationError):
    """An embedding profile key that is not declared in the catalog."""

    http_status = 404

    def __init__(self, key: str, known: list[str] | None = None) -> None:
        hint = f" (known: {', '.join(known)})" if known else ""
        super().__init__(f"unknown embedding profile '{key}'{hint}")
        self.key = key
        self.known = known

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps the error picklable (Prefect may persist or ship task failures).
        return (self.__class__, (self.key, self.known))


class ActiveProfileError(ConfigurationError):
    """The serving profile stored in PostgreSQL is not a declared profile: nothing can be
    served until a declared one is made active."""

    http_status = 503


class InvalidInputError(RagplateError):
    """Bad input from a user: a request field, a CLI option, a file."""

    http_status = 422
    exit_code = 2


class SourceError(InvalidInputError):
    """A documentation source cannot be indexed; names the file."""

    def __init__(self, source: str, message: str) -> None:
        super().__init__(f"{source}: {message}")
        self.source = source
        self.reason = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.source, self.reason))


class SourcesError(InvalidInputError):
    """Several documentation sources cannot be indexed: one line per source, so that a run
    names every file to fix at once."""

    def __init__(self, errors: list[SourceError]) -> None:
        lines = "\n".join(f"  {error}" for error in errors)
        super().__init__(f"{len(errors)} documentation sources cannot be indexed, nothing was "
                         f"changed:\n{lines}")
        self.errors = errors

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.errors,))


class EmptyRootError(InvalidInputError):
    """A documentation root read no Markdown file while the index holds sources of it:
    usually a missing checkout or mount, so nothing is deleted unless asked."""


class UnknownAudienceError(SourceError):
    """A document declares an audience outside user, developer, shared."""

    def __init__(self, source: str, value: object) -> None:
        super().__init__(
            source,
            f"unknown audience {value!r} (accepted: user, developer, shared)",
        )
        self.value = value

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.source, self.value))


class EmbeddingError(RagplateError):
    """An embedding provider gave no usable answer."""

    http_status = 502


class ProviderUnavailableError(EmbeddingError):
    """The embedding provider could not be reached or answered with an error."""

    http_status = 503


class DimensionMismatchError(EmbeddingError):
    """A vector whose length differs from the profile's declared dimensions."""

    def __init__(self, profile_key: str, expected: int, actual: int) -> None:
        super().__init__(
            f"profile '{profile_key}' declares {expected} dimensions but the vector has {actual}"
        )
        self.profile_key = profile_key
        self.expected = expected
        self.actual = actual

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.profile_key, self.expected, self.actual))


class DatabaseError(RagplateError):
    """PostgreSQL is unreachable, lacks pgvector, or its schema is not usable."""

    http_status = 503
    exit_code = 3


class ServiceError(RagplateError):
    """An embedded service (PostgreSQL, Prefect server) failed to start or stop."""

    http_status = 503
    exit_code = 3


class StoreError(RagplateError):
    """A vector store could not read or write its data."""

    http_status = 503
    exit_code = 3


class SearchEngineError(StoreError):
    """Elasticsearch could not be reached, refused a request or answered with an error;
    the message is one line naming the index (or the cluster) and the reason."""


class IndexMappingError(SearchEngineError):
    """An Elasticsearch index exists with another mapping than the one ragplate writes
    (other vector dimensions or similarity, an older mapping version, a field of another
    type): one line naming the index and the command that recreates it. A configuration
    problem, so the CLI exits 2."""

    exit_code = 2


class EngineVersionError(SearchEngineError):
    """The cluster runs an Elasticsearch major version the client does not speak."""

    exit_code = 2


class SelfHostedServiceError(RagplateError):
    """A self-hosted AI server (embeddings, rerank, transcription) could not be reached or
    answered with an error status.

    The message starts with ``[request_id <32 hex>]`` (the id sent as ``X-Request-Id``, so
    the server's log can be searched for it) and names the endpoint without credentials or
    query string. It never holds a text, a query, a file name, a key or an error body.
    """

    http_status = 503
    exit_code = 3

    def __init__(
        self, *, service: str, endpoint: str, status: int | None, request_id: str, reason: str
    ) -> None:
        super().__init__(f"[request_id {request_id}] {service} call to {endpoint} failed: {reason}")
        self.service = service
        self.endpoint = endpoint
        self.status = status
        self.request_id = request_id
        self.reason = reason

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        # Keeps the error picklable (Prefect may persist or ship task failures).
        return (
            partial(
                self.__class__, service=self.service, endpoint=self.endpoint,
                status=self.status, request_id=self.request_id, reason=self.reason,
            ),
            (),
        )

    def context(self) -> dict[str, object]:
        """The fields a log line about this failure carries."""
        return {
            "service": self.service,
            "endpoint": self.endpoint,
            "status": self.status,
            "request_id": self.request_id,
        }


class RerankAnswerError(RagplateError):
    """A rerank server answered 2xx with scores that cannot be placed on the texts sent
    (a repeated, missing or out-of-range index, or another count)."""

    http_status = 502


class UnknownEntityError(InvalidInputError):
    """An embeddable entity name that is not in the registry (``ragplate.catalog.entities``)."""

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        hint = f" (known: {', '.join(known)})" if known else ""
        super().__init__(f"unknown entity '{name}'{hint}")
        self.name = name
        self.known = known

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.name, self.known))


class BelowThresholdError(RagplateError):
    """An evaluation measured a figure below the threshold it was given (``--min-mrr``,
    ``--min-hit-at-5``): the report is written, and the run fails so CI and the weekly
    deployment see it. Exit code 1. ``failed`` lists the thresholds missed (``threshold``,
    ``minimum``, ``value``) and ``report`` is the report written, for ``--json``."""

    exit_code = 1

    def __init__(self, message: str, *, failed: list[dict[str, Any]] | None = None,
                 report: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.failed = list(failed or [])
        self.report = report

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps the error picklable with what it carries (Prefect may persist failures).
        return (partial(self.__class__, failed=self.failed, report=self.report),
                (str(self),))


class FloorNotMeasurableError(InvalidInputError):
    """``tune-floor`` measured no floor because the dataset does not fit the index (no
    answered case has a hit without a floor). ``result`` is the measurement, which the CLI
    still prints. Exit code 2."""

    def __init__(self, message: str, *, result: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.result = result

    def __reduce__(self) -> tuple[Any, ...]:
        return (partial(self.__class__, result=self.result), (str(self),))


class AuthenticationError(RagplateError):
    """No valid API token: missing, malformed, unknown or revoked. HTTP 401."""

    http_status = 401
    exit_code = 2


class PermissionDeniedError(RagplateError):
    """A known person who may not do this (a guest, or a missing permission). HTTP 403."""

    http_status = 403
    exit_code = 2


class NotFoundError(InvalidInputError):
    """A thing that does not exist, or that belongs to someone else (the two are not told
    apart, so ids cannot be probed). HTTP 404."""

    http_status = 404


class NotAcceptableError(InvalidInputError):
    """A request whose ``Accept`` header rules out every form the route answers in. HTTP
    406."""

    http_status = 406


class TooManyRequestsError(RagplateError):
    """A person asking more at once than they may (e.g. streamed answers in flight). HTTP
    429."""

    http_status = 429
    exit_code = 2


class BusyError(RagplateError):
    """A request that the current state of a thing refuses for now, and that the same
    request can repeat later (a conversation deleted while one of its answers is still
    being prepared). HTTP 409."""

    http_status = 409
    exit_code = 2


class UnknownUserError(NotFoundError):
    """A user name that is not in the people table."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no user named {name!r} (see: ragplate users list)")
        self.name = name

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.name,))


class ChatModelError(RagplateError):
    """The chat model server could not be reached, answered with an error status, or sent
    an answer that is not a chat completion. The message names the endpoint and the reason,
    never the prompt or the answer."""

    http_status = 503
    exit_code = 3


class StructuredOutputError(RagplateError):
    """The chat model's answer did not validate against the requested schema after every
    retry. The message lists what was wrong, not what was sent."""

    http_status = 502


def validation_message(error: Mapping[str, Any]) -> str:
    """The message of one of pydantic's ``ValidationError.errors()``, for a person: a
    validator's own text without pydantic's ``Value error, `` (or ``Assertion failed, ``)
    prefix."""
    message = str(error.get("msg", ""))
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message
