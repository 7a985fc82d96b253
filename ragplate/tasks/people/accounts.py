"""Create people, issue and revoke their API tokens, and authenticate a bearer token.

A token is shown once, when it is issued: only its hash is stored
(:mod:`ragplate.infra.people`). Every token expires: ``RAGPLATE_TOKEN_TTL_DAYS`` after it is
issued, or what ``--expires-in`` says, and 8 hours for one acting as someone
(:func:`ragplate.catalog.people.token_lifetime`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.engine import Engine

from ragplate.catalog.errors import (
    AuthenticationError,
    InvalidInputError,
    PermissionDeniedError,
    RagplateError,
    StoreError,
)
from ragplate.catalog.people import (
    DEFAULT_TOKEN_TTL_DAYS,
    OPERATOR_PERMISSION,
    TOKEN_PREFIX,
    Person,
    check_locale,
    check_name,
    check_permissions,
    check_person_tenant,
    token_lifetime,
)
from ragplate.catalog.settings import Settings
from ragplate.infra import people
from ragplate.infra.analytics import make_query_log
from ragplate.infra.people import PersonRow
from ragplate.tasks.analytics.retention import erase

#: Bytes of randomness in a token (256 bits).
TOKEN_BYTES = 32
#: The longest token ``authenticate`` hashes; anything longer is not one of ours.
MAX_TOKEN_CHARS = 200


def create_person(engine: Engine, *, name: str, permissions: list[str] | None = None,
                  tenant: str | None = None, locale: str = "en",
                  is_guest: bool = False) -> Person:
    """Add a person; every field is checked before anything is written."""
    checked = check_permissions(list(permissions or []))
    with engine.begin() as conn:
        return people.insert_person(conn, name=check_name(name), tenant=check_person_tenant(tenant),
                                    locale=check_locale(locale), permissions=checked,
                                    is_guest=is_guest)


@dataclass(frozen=True)
class IssuedToken:
    """A token as it is shown, once, when issued, with when it stops working."""

    token: str
    expires_at: datetime

    def as_dict(self) -> dict[str, str]:
        """``users token --json``: the expiry in UTC, ISO 8601."""
        return {"token": self.token, "expires_at": self.expires_at.astimezone(UTC).isoformat()}


def issue_token(engine: Engine, *, name: str, impersonated_by: str | None = None,
                expires_in: str | None = None, ttl_days: int = DEFAULT_TOKEN_TTL_DAYS) -> str:
    """:func:`issue`, the token only."""
    return issue(engine, name=name, impersonated_by=impersonated_by, expires_in=expires_in,
                 ttl_days=ttl_days).token


def issue(engine: Engine, *, name: str, impersonated_by: str | None = None,
          expires_in: str | None = None, ttl_days: int = DEFAULT_TOKEN_TTL_DAYS
          ) -> IssuedToken:
    """A new API token for the person called ``name``: returned once, stored hashed.
    ``impersonated_by`` names the operator (holding ``tenants.operator``) who will act as
    the person with it: such a session is never logged in the query analytics. It expires
    ``expires_in`` (``12h``, ``30d``) from now, else ``ttl_days`` days (8 hours for a token
    acting as someone); a bad ``expires_in`` is refused before anything is read."""
    lifetime = token_lifetime(expires_in, ttl_days=ttl_days,
                              impersonated=impersonated_by is not None)
    token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    with engine.begin() as conn:
        person = people.person_by_name(conn, name)
        operator = None
        if impersonated_by is not None:
            operator = people.person_by_name(conn, impersonated_by)
            if not operator.holds(OPERATOR_PERMISSION) or operator.is_guest:
                raise PermissionDeniedError(f"--impersonated-by {impersonated_by!r}: acting "
                                            f"as someone needs the {OPERATOR_PERMISSION} "
                                            "permission")
            if operator.id == person.id:
                raise InvalidInputError("--impersonated-by: a person does not act as "
                                        "themselves")
        expires_at = people.insert_token(conn, person, token, lifetime=lifetime,
                                         impersonated_by=operator)
    return IssuedToken(token, expires_at)


def revoke(engine: Engine, *, name: str) -> int:
    """Revoke every live token of the person called ``name``, with those they hold to act
    as someone else; how many were live."""
    with engine.begin() as conn:
        return people.revoke_tokens(conn, people.person_by_name(conn, name))


@dataclass(frozen=True)
class Deleted:
    """A deleted person, and how many of their query records went with them: ``None`` when
    none could be looked for (no application key; :data:`NO_KEY` says why) or the erasure
    failed (``erase_error``). The person is gone either way: the caller must still be told
    their id, the only way left to erase their records (``analytics erase ID --id``)."""

    person: Person
    records_erased: int | None
    erase_error: RagplateError | None = None


def delete(engine: Engine, *, name: str, settings: Settings | None = None) -> Deleted:
    """Delete the person called ``name`` with their tokens and conversations, then (with
    ``settings``, which hold the application keys) their query analytics records. A failing
    erasure does not raise: it is returned with the deleted person."""
    with engine.begin() as conn:
        person = people.person_by_name(conn, name)
        people.delete_person(conn, person)
    if settings is None or settings.app_key is None:
        return Deleted(person, None)
    try:
        return Deleted(person, erase(make_query_log(settings, engine), settings,
                                     user_id=person.id))
    except RagplateError as exc:
        return Deleted(person, None, exc)
    except Exception as exc:  # a broken store: its class only (a message may quote a record)
        return Deleted(person, None, StoreError(
            f"the query analytics store failed ({exc.__class__.__name__})"))


def list_all(engine: Engine) -> list[PersonRow]:
    """Every person, with their count of live tokens and the nearest expiry among them."""
    with engine.connect() as conn:
        return people.list_people(conn)


def authenticate(engine: Engine, authorization: str | None) -> Person:
    """The person of an ``Authorization: Bearer <token>`` header value.

    Raises :class:`AuthenticationError` (401) for a missing header, another scheme, a
    malformed, unknown, revoked or expired token. The message never holds the token, and
    for an expired one says only that (not whose it was, nor when it expired)."""
    if not authorization:
        raise AuthenticationError("missing Authorization header: send 'Authorization: "
                                  "Bearer <token>' (ragplate users token NAME issues one)")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationError("the Authorization header must be 'Bearer <token>'")
    if (len(token) > MAX_TOKEN_CHARS or not token.startswith(TOKEN_PREFIX)
            or not token.isascii() or not token.isprintable()):
        raise AuthenticationError("the bearer token is not valid")
    with engine.connect() as conn:
        found = people.check_token(conn, token)
    if found.status == "expired":
        raise AuthenticationError("token expired: ask for a new one (ragplate users token "
                                  "NAME)")
    if found.status != "live" or found.person is None:
        raise AuthenticationError("the bearer token is not valid (unknown or revoked)")
    return found.person
