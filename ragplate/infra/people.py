"""People and API tokens in PostgreSQL (tables ``users`` and ``api_tokens``).

Only a token's SHA-256 is stored; a token is looked up by that hash, so the token itself
never reaches the database, a log or a listing. A token expires at ``expires_at``, set and
compared by the database's clock (``now()``), never the client's: it is live while
``expires_at > now()``, so at that instant it is expired, and a token whose expiry cannot
be compared is not live either.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from ragplate.catalog.errors import InvalidInputError, UnknownUserError
from ragplate.catalog.people import OPERATOR_PERMISSION, TOKEN_HINT_CHARS, Person
from ragplate.catalog.schema import api_tokens, users


def token_hash(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def _live() -> sa.ColumnElement[bool]:
    """A token that works: not revoked, and its expiry still ahead by the database's clock
    (a NULL expiry compares as NULL, which no WHERE admits)."""
    return sa.and_(api_tokens.c.revoked_at.is_(None), api_tokens.c.expires_at > sa.func.now())


@dataclass(frozen=True)
class PersonRow:
    """A person with what a listing shows of their tokens."""

    person: Person
    created_at: datetime
    active_tokens: int
    #: The nearest expiry of their live tokens (``None`` without one).
    next_token_expiry: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        """``users list --json``."""
        return {**self.person.as_dict(), "created_at": self.created_at.isoformat(),
                "active_tokens": self.active_tokens,
                "next_token_expiry": _iso(self.next_token_expiry)}


@dataclass(frozen=True)
class TokenCheck:
    """What a bearer token is: ``live`` (with its ``person``), ``expired``, or ``unknown``
    (never issued, or revoked)."""

    status: Literal["live", "expired", "unknown"]
    person: Person | None = None


def _person(row: Any) -> Person:
    return Person(id=int(row.id), name=str(row.name), tenant=row.tenant, locale=str(row.locale),
                  permissions=frozenset(row.permissions or ()), is_guest=bool(row.is_guest))


def insert_person(conn: sa.Connection, *, name: str, tenant: str | None, locale: str,
                  permissions: frozenset[str], is_guest: bool) -> Person:
    """Add a person; a name already taken is refused naming it."""
    try:
        with conn.begin_nested():
            row = conn.execute(users.insert().values(
                name=name, tenant=tenant, locale=locale, permissions=sorted(permissions),
                is_guest=is_guest).returning(*users.c)).one()
    except IntegrityError as exc:
        raise InvalidInputError(f"a user named {name!r} already exists") from exc
    return _person(row)


def person_by_name(conn: sa.Connection, name: str) -> Person:
    """The person called ``name``, or :class:`UnknownUserError`."""
    row = conn.execute(sa.select(users).where(users.c.name == name)).one_or_none()
    if row is None:
        raise UnknownUserError(name)
    return _person(row)


def person_by_id(conn: sa.Connection, person_id: int) -> Person | None:
    """The person with id ``person_id``, or ``None`` (deleted, or never there)."""
    row = conn.execute(sa.select(users).where(users.c.id == person_id)).one_or_none()
    return None if row is None else _person(row)


def check_token(conn: sa.Connection, token: str) -> TokenCheck:
    """Whether ``token`` is live, and whose it is only then. Liveness is decided in the
    query, by the database's clock: fail closed, anything but a true ``expires_at > now()``
    (an expiry at this instant, or none) is expired."""
    live = sa.func.coalesce(api_tokens.c.expires_at > sa.func.now(), sa.false())
    operator = users.alias("operator")
    row = conn.execute(
        sa.select(users, api_tokens.c.impersonated_by, live.label("live"),
                  operator.c.permissions.label("operator_permissions"),
                  operator.c.is_guest.label("operator_is_guest"))
        .join(api_tokens, api_tokens.c.user_id == users.c.id)
        .outerjoin(operator, operator.c.id == api_tokens.c.impersonated_by)
        .where(api_tokens.c.token_hash == token_hash(token), api_tokens.c.revoked_at.is_(None))
    ).one_or_none()
    if row is None:
        return TokenCheck("unknown")
    if row.live is not True:
        return TokenCheck("expired")
    person = _person(row)
    if row.impersonated_by is not None:
        # Acting as someone is the operator's permission, checked at every use: an operator
        # who lost it (or was deleted) no longer acts as anyone, whatever tokens they hold.
        if (OPERATOR_PERMISSION not in (row.operator_permissions or ())
                or row.operator_is_guest is not False):
            return TokenCheck("unknown")
        person = replace(person, impersonated_by=int(row.impersonated_by))
    return TokenCheck("live", person)


def insert_token(conn: sa.Connection, person: Person, token: str, *, lifetime: timedelta,
                 impersonated_by: Person | None = None) -> datetime:
    """Store a new token of ``person`` (its hash and hint) that expires ``lifetime`` from
    now by the database's clock; ``impersonated_by``: the operator who acts as them with
    it. Returns the expiry."""
    if lifetime <= timedelta(0):
        raise ValueError(f"a token's lifetime must be positive, not {lifetime}")
    expires_at: datetime = conn.execute(api_tokens.insert().values(
        user_id=person.id, token_hash=token_hash(token), hint=token[:TOKEN_HINT_CHARS],
        impersonated_by=None if impersonated_by is None else impersonated_by.id,
        expires_at=sa.func.now() + sa.literal(lifetime, sa.Interval()),
    ).returning(api_tokens.c.expires_at)).scalar_one()
    return expires_at


def revoke_tokens(conn: sa.Connection, person: Person) -> int:
    """Revoke every live token of ``person``: their own, and those they hold to act as
    someone else (``impersonated_by``), which would otherwise outlive the revocation of an
    operator. How many were live (an expired one is already dead, and not counted)."""
    result = conn.execute(
        api_tokens.update()
        .where(sa.or_(api_tokens.c.user_id == person.id,
                      api_tokens.c.impersonated_by == person.id), _live())
        .values(revoked_at=sa.func.now()))
    return int(result.rowcount or 0)


def delete_person(conn: sa.Connection, person: Person) -> None:
    """Delete ``person`` with their tokens, conversations and messages (cascade)."""
    conn.execute(users.delete().where(users.c.id == person.id))


def list_people(conn: sa.Connection) -> list[PersonRow]:
    """Every person, by name, with their count of live tokens and the nearest expiry among
    them."""
    tokens = (sa.select(api_tokens.c.user_id, sa.func.count().label("live"),
                        sa.func.min(api_tokens.c.expires_at).label("next_expiry"))
              .where(_live()).group_by(api_tokens.c.user_id).subquery())
    rows = conn.execute(
        sa.select(users, sa.func.coalesce(tokens.c.live, 0).label("live"),
                  tokens.c.next_expiry)
        .outerjoin(tokens, tokens.c.user_id == users.c.id).order_by(users.c.name))
    return [PersonRow(_person(r), r.created_at, int(r.live), r.next_expiry) for r in rows]
