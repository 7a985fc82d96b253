"""Token expiry in the SQL of :mod:`ragplate.infra.people`, by the database's clock.

Inside one transaction PostgreSQL's ``now()`` is fixed, so a token can be put exactly at
its expiry instant, or one microsecond before it, and checked there."""

from __future__ import annotations

import uuid
from datetime import UTC, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from ragplate.catalog.people import Person
from ragplate.catalog.schema import api_tokens
from ragplate.infra import people

pytestmark = pytest.mark.integration


def person_with_token(conn: sa.Connection, lifetime: timedelta = timedelta(days=1)
                      ) -> tuple[Person, str]:
    person = people.insert_person(conn, name=f"exp-{uuid.uuid4().hex[:8]}", tenant=None,
                                  locale="en", permissions=frozenset(), is_guest=False)
    token = f"rp_{uuid.uuid4().hex}"
    people.insert_token(conn, person, token, lifetime=lifetime)
    return person, token


def set_expiry(conn: sa.Connection, token: str, expires_at: sa.ColumnElement[object]
               ) -> None:
    conn.execute(api_tokens.update().where(api_tokens.c.token_hash == people.token_hash(token))
                 .values(expires_at=expires_at))


def now(plus: timedelta = timedelta(0)) -> sa.ColumnElement[object]:
    """The database's ``now()`` (of this transaction), ``plus`` a span."""
    return sa.func.now() + sa.literal(plus, sa.Interval())


def test_the_expiry_is_the_lifetime_from_now_by_the_database_clock(conn: sa.Connection
                                                                    ) -> None:
    person = people.insert_person(conn, name=f"exp-{uuid.uuid4().hex[:8]}", tenant=None,
                                  locale="en", permissions=frozenset(), is_guest=False)

    expires_at = people.insert_token(conn, person, "rp_a" + uuid.uuid4().hex,
                                     lifetime=timedelta(hours=12))

    db_now = conn.execute(sa.select(sa.func.now())).scalar_one()
    assert expires_at.tzinfo is not None
    assert expires_at - db_now == timedelta(hours=12)
    stored = conn.execute(sa.select(api_tokens.c.created_at, api_tokens.c.expires_at)
                          .where(api_tokens.c.user_id == person.id)).one()
    assert stored.expires_at == expires_at == stored.created_at + timedelta(hours=12)


def test_a_token_is_live_until_the_instant_of_its_expiry_and_expired_from_it(
    conn: sa.Connection,
) -> None:
    person, token = person_with_token(conn)

    set_expiry(conn, token, now(timedelta(microseconds=1)))
    assert people.check_token(conn, token).status == "live"
    assert people.check_token(conn, token).person == person

    set_expiry(conn, token, now())
    expired = people.check_token(conn, token)
    assert (expired.status, expired.person) == ("expired", None)

    set_expiry(conn, token, now(-timedelta(days=1)))
    assert people.check_token(conn, token).status == "expired"


def test_a_revoked_token_is_unknown_whether_or_not_it_expired(conn: sa.Connection) -> None:
    person, token = person_with_token(conn)
    assert people.revoke_tokens(conn, person) == 1

    assert people.check_token(conn, token).status == "unknown"
    set_expiry(conn, token, now(-timedelta(days=1)))
    assert people.check_token(conn, token).status == "unknown"
    assert people.check_token(conn, "rp_never-issued").status == "unknown"


def test_a_row_without_an_expiry_cannot_be_written(conn: sa.Connection) -> None:
    person, _ = person_with_token(conn)

    with pytest.raises(IntegrityError, match="expires_at"), conn.begin_nested():
        conn.execute(api_tokens.insert().values(user_id=person.id, token_hash="x" * 64,
                                                hint="rp_xxxxx"))


def test_a_token_whose_expiry_is_missing_is_refused_not_allowed(conn: sa.Connection) -> None:
    # Were the NOT NULL ever lost (a hand-edited database), the check still fails closed.
    # The DDL is rolled back with the test's transaction.
    conn.execute(sa.text("ALTER TABLE api_tokens ALTER COLUMN expires_at DROP NOT NULL"))
    _, token = person_with_token(conn)
    set_expiry(conn, token, sa.null())

    assert people.check_token(conn, token).status == "expired"


def test_revoking_and_listing_count_only_live_tokens(conn: sa.Connection) -> None:
    person, soon = person_with_token(conn, timedelta(hours=1))
    later = f"rp_{uuid.uuid4().hex}"
    people.insert_token(conn, person, later, lifetime=timedelta(days=30))
    dead = f"rp_{uuid.uuid4().hex}"
    people.insert_token(conn, person, dead, lifetime=timedelta(days=1))
    set_expiry(conn, dead, now(-timedelta(seconds=1)))
    db_now = conn.execute(sa.select(sa.func.now())).scalar_one()

    row = next(r for r in people.list_people(conn) if r.person.id == person.id)
    assert row.active_tokens == 2
    assert row.next_token_expiry == db_now + timedelta(hours=1)
    nearest = (db_now + timedelta(hours=1)).astimezone(UTC).isoformat()
    assert row.as_dict()["next_token_expiry"] == nearest

    set_expiry(conn, soon, now(-timedelta(seconds=1)))
    row = next(r for r in people.list_people(conn) if r.person.id == person.id)
    assert (row.active_tokens, row.next_token_expiry) == (1, db_now + timedelta(days=30))

    assert people.revoke_tokens(conn, person) == 1  # the expired ones are already dead
    row = next(r for r in people.list_people(conn) if r.person.id == person.id)
    assert (row.active_tokens, row.next_token_expiry) == (0, None)
    assert row.as_dict()["next_token_expiry"] is None


@pytest.mark.parametrize("lifetime", [timedelta(0), timedelta(seconds=-1)])
def test_a_lifetime_that_is_not_positive_is_never_stored(conn: sa.Connection,
                                                        lifetime: timedelta) -> None:
    person, _ = person_with_token(conn)

    with pytest.raises(ValueError, match="positive"):
        people.insert_token(conn, person, f"rp_{uuid.uuid4().hex}", lifetime=lifetime)
