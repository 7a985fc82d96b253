"""People and API tokens in PostgreSQL (tables ``users`` and ``api_tokens``).

Only a token's SHA-256 is stored; a token is looked up by that hash, so the token itself
never reaches the database, a log or a listing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from ragplate.catalog.errors import InvalidInputError, UnknownUserError
from ragplate.catalog.people import TOKEN_HINT_CHARS, Person
from ragplate.catalog.schema import api_tokens, users


def token_hash(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class PersonRow:
    """A person with what a listing shows of their tokens."""

    person: Person
    created_at: datetime
    active_tokens: int

    def as_dict(self) -> dict[str, Any]:
        """``users list --json``."""
        return {**self.person.as_dict(), "created_at": self.created_at.isoformat(),
                "active_tokens": self.active_tokens}


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


def person_by_token(conn: sa.Connection, token: str) -> Person | None:
    """The person a live (not revoked) token belongs to, or ``None``."""
    row = conn.execute(
        sa.select(users, api_tokens.c.impersonated_by)
        .join(api_tokens, api_tokens.c.user_id == users.c.id)
        .where(api_tokens.c.token_hash == token_hash(token), api_tokens.c.revoked_at.is_(None))
    ).one_or_none()
    if row is None:
        return None
    person = _person(row)
    if row.impersonated_by is None:
        return person
    return replace(person, impersonated_by=int(row.impersonated_by))


def insert_token(conn: sa.Connection, person: Person, token: str, *,
                 impersonated_by: Person | None = None) -> None:
    """Store a new token of ``person`` (its hash and hint); ``impersonated_by``: the
    operator who acts as them with it."""
    conn.execute(api_tokens.insert().values(
        user_id=person.id, token_hash=token_hash(token), hint=token[:TOKEN_HINT_CHARS],
        impersonated_by=None if impersonated_by is None else impersonated_by.id))


def revoke_tokens(conn: sa.Connection, person: Person) -> int:
    """Revoke every live token of ``person``; how many were live."""
    result = conn.execute(
        api_tokens.update()
        .where(api_tokens.c.user_id == person.id, api_tokens.c.revoked_at.is_(None))
        .values(revoked_at=sa.func.now()))
    return int(result.rowcount or 0)


def delete_person(conn: sa.Connection, person: Person) -> None:
    """Delete ``person`` with their tokens, conversations and messages (cascade)."""
    conn.execute(users.delete().where(users.c.id == person.id))


def list_people(conn: sa.Connection) -> list[PersonRow]:
    """Every person, by name, with their count of live tokens."""
    live = (sa.select(sa.func.count()).where(api_tokens.c.user_id == users.c.id,
                                             api_tokens.c.revoked_at.is_(None))
            .scalar_subquery())
    rows = conn.execute(sa.select(users, live.label("live")).order_by(users.c.name))
    return [PersonRow(_person(r), r.created_at, int(r.live)) for r in rows]
