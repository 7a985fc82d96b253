"""People and tokens in the embedded PostgreSQL: checked fields, hashed tokens, expiry,
revocation and deletion."""

from __future__ import annotations

import uuid
from datetime import UTC, timedelta

import pytest
import sqlalchemy as sa

from ragplate.catalog.errors import AuthenticationError, InvalidInputError, UnknownUserError
from ragplate.catalog.people import OPERATOR_PERMISSION
from ragplate.catalog.schema import api_tokens, conversations, users
from ragplate.infra.conversations import insert_conversation
from ragplate.infra.people import token_hash
from ragplate.tasks.people import accounts

pytestmark = pytest.mark.integration


def unique(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def test_a_person_is_created_with_their_fields(engine: sa.Engine) -> None:
    name = unique("mario")
    person = accounts.create_person(engine, name=name, permissions=["crud.read", "docs.user"],
                                    tenant="acme", locale="it")

    assert (person.name, person.tenant, person.locale) == (name, "acme", "it")
    assert person.permissions == {"crud.read", "docs.user"} and not person.is_guest
    listed = {row.person.name: row for row in accounts.list_all(engine)}
    assert listed[name].person == person and listed[name].active_tokens == 0


@pytest.mark.parametrize(("field", "value", "named"), [
    ("name", "bad name", "user name"),
    ("name", "", "user name"),
    ("permissions", ["Docs Developer"], "permission"),
    ("tenant", "a/b", "tenant"),
    ("locale", "english", "locale"),
])
def test_a_bad_field_is_refused_naming_it_and_nothing_is_written(
    engine: sa.Engine, field: str, value: object, named: str
) -> None:
    before = accounts.list_all(engine)
    fields: dict[str, object] = {"name": unique("ok"), field: value}

    with pytest.raises(InvalidInputError, match=named):
        accounts.create_person(engine, **fields)  # type: ignore[arg-type]
    assert accounts.list_all(engine) == before


def test_a_taken_name_is_refused(engine: sa.Engine) -> None:
    name = unique("ada")
    accounts.create_person(engine, name=name)

    with pytest.raises(InvalidInputError, match="already exists"):
        accounts.create_person(engine, name=name, tenant="acme")


def test_a_token_is_stored_only_as_its_hash_and_authenticates(engine: sa.Engine) -> None:
    name = unique("grace")
    person = accounts.create_person(engine, name=name)
    token = accounts.issue_token(engine, name=name)

    with engine.connect() as conn:
        stored = conn.execute(sa.select(api_tokens).where(api_tokens.c.user_id == person.id)
                              ).one()
    assert token.startswith("rp_") and len(token) >= 40
    assert stored.token_hash != token and token not in stored.token_hash
    assert token.startswith(stored.hint) and len(stored.hint) == 8
    assert accounts.authenticate(engine, f"Bearer {token}") == person
    assert accounts.authenticate(engine, f"bearer   {token}  ") == person


def test_revoking_ends_every_token_and_a_new_one_works(engine: sa.Engine) -> None:
    name = unique("linus")
    accounts.create_person(engine, name=name)
    first, second = (accounts.issue_token(engine, name=name) for _ in range(2))

    assert accounts.revoke(engine, name=name) == 2
    for token in (first, second):
        with pytest.raises(AuthenticationError):
            accounts.authenticate(engine, f"Bearer {token}")
    third = accounts.issue_token(engine, name=name)
    assert accounts.authenticate(engine, f"Bearer {third}").name == name


@pytest.mark.parametrize("header", [None, "", "Token abc", "Bearer ", "Bearer rp_\x00x",
                                    "Bearer rp_nope"])
def test_a_bad_header_is_an_authentication_error(engine: sa.Engine, header: str | None
                                                 ) -> None:
    with pytest.raises(AuthenticationError):
        accounts.authenticate(engine, header)


def test_an_unknown_person_is_named(engine: sa.Engine) -> None:
    with pytest.raises(UnknownUserError, match="nobody-here"):
        accounts.issue_token(engine, name="nobody-here")


def test_deleting_a_person_deletes_their_tokens_and_conversations(engine: sa.Engine) -> None:
    name = unique("temp")
    person = accounts.create_person(engine, name=name)
    accounts.issue_token(engine, name=name)
    with engine.begin() as conn:
        insert_conversation(conn, user_id=person.id, title="t")

    accounts.delete(engine, name=name)

    with engine.connect() as conn:
        for table, column in ((users, users.c.id), (api_tokens, api_tokens.c.user_id),
                              (conversations, conversations.c.user_id)):
            count = conn.execute(sa.select(sa.func.count()).select_from(table)
                                 .where(column == person.id)).scalar_one()
            assert count == 0, table.name


def expiry_of(engine: sa.Engine, token: str) -> tuple[timedelta, timedelta]:
    """A stored token's lifetime (its expiry less its issue) and what is left of it now."""
    with engine.connect() as conn:
        row = conn.execute(sa.select(
            (api_tokens.c.expires_at - api_tokens.c.created_at).label("lifetime"),
            (api_tokens.c.expires_at - sa.func.now()).label("left"))
            .where(api_tokens.c.token_hash == token_hash(token))).one()
    return row.lifetime, row.left


def test_a_token_expires_after_the_ttl_or_what_expires_in_says(engine: sa.Engine) -> None:
    name = unique("ttl")
    accounts.create_person(engine, name=name)

    default = accounts.issue(engine, name=name)
    weekly = accounts.issue(engine, name=name, ttl_days=7)
    short = accounts.issue(engine, name=name, ttl_days=7, expires_in="12h")

    assert expiry_of(engine, default.token)[0] == timedelta(days=90)
    assert expiry_of(engine, weekly.token)[0] == timedelta(days=7)
    lifetime, left = expiry_of(engine, short.token)
    assert lifetime == timedelta(hours=12) and timedelta(hours=11) < left <= lifetime
    assert short.as_dict() == {"token": short.token,
                               "expires_at": short.expires_at.astimezone(UTC).isoformat()}
    assert short.as_dict()["expires_at"].endswith("+00:00")
    assert accounts.authenticate(engine, f"Bearer {short.token}").name == name


def test_a_token_acting_as_someone_is_short_lived(engine: sa.Engine) -> None:
    name, operator = unique("acted"), unique("operator")
    accounts.create_person(engine, name=name)
    accounts.create_person(engine, name=operator, permissions=[OPERATOR_PERMISSION])

    acting = accounts.issue(engine, name=name, impersonated_by=operator, ttl_days=365)
    assert expiry_of(engine, acting.token)[0] == timedelta(hours=8)
    longer = accounts.issue(engine, name=name, impersonated_by=operator, expires_in="24h")
    assert expiry_of(engine, longer.token)[0] == timedelta(hours=24)
    with pytest.raises(InvalidInputError, match="--expires-in '2d': a token lives at most"):
        accounts.issue(engine, name=name, impersonated_by=operator, expires_in="2d")


def test_revoking_an_operator_ends_the_tokens_they_hold_to_act_as_someone(
        engine: sa.Engine) -> None:
    name, operator = unique("acted"), unique("operator")
    accounts.create_person(engine, name=name)
    accounts.create_person(engine, name=operator, permissions=[OPERATOR_PERMISSION])
    own = accounts.issue(engine, name=name)
    acting = accounts.issue(engine, name=name, impersonated_by=operator)
    operators = accounts.issue(engine, name=operator)

    assert accounts.revoke(engine, name=operator) == 2

    for gone in (acting, operators):
        with pytest.raises(AuthenticationError, match="unknown or revoked"):
            accounts.authenticate(engine, f"Bearer {gone.token}")
    # The person's own token is theirs, not the operator's: it still works.
    assert accounts.authenticate(engine, f"Bearer {own.token}").name == name


def test_a_token_acting_as_someone_ends_when_its_operator_loses_the_permission(
        engine: sa.Engine) -> None:
    """The operator's permission is checked at every use of a token acting as someone,
    not only when it was issued: taken away, or the operator made a guest, it is refused."""
    name, operator = unique("acted"), unique("operator")
    accounts.create_person(engine, name=name)
    accounts.create_person(engine, name=operator, permissions=[OPERATOR_PERMISSION])
    acting = accounts.issue(engine, name=name, impersonated_by=operator)
    own = accounts.issue(engine, name=name)
    assert accounts.authenticate(engine, f"Bearer {acting.token}").name == name

    for change in ("permissions = '{}'", "is_guest = true"):
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE users SET {change} WHERE name = :n"), {"n": operator})
        with pytest.raises(AuthenticationError, match="unknown or revoked"):
            accounts.authenticate(engine, f"Bearer {acting.token}")
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE users SET permissions = :p, is_guest = false "
                                 "WHERE name = :n"),
                         {"p": [OPERATOR_PERMISSION], "n": operator})
        assert accounts.authenticate(engine, f"Bearer {acting.token}").name == name
    assert accounts.authenticate(engine, f"Bearer {own.token}").name == name


def test_a_bad_expires_in_is_refused_before_anything_is_written(engine: sa.Engine) -> None:
    name = unique("nope")
    accounts.create_person(engine, name=name)

    for bad in ("soon", "0m", "3651d"):
        with pytest.raises(InvalidInputError, match=f"--expires-in '{bad}'"):
            accounts.issue(engine, name=name, expires_in=bad)
    # Checked before the person is even looked up.
    with pytest.raises(InvalidInputError, match="--expires-in 'soon'"):
        accounts.issue(engine, name="nobody-here", expires_in="soon")
    listed = {row.person.name: row for row in accounts.list_all(engine)}
    assert (listed[name].active_tokens, listed[name].next_token_expiry) == (0, None)


def test_an_expired_token_is_refused_saying_only_that(engine: sa.Engine) -> None:
    name = unique("expired")
    accounts.create_person(engine, name=name, tenant="acme")
    issued = accounts.issue(engine, name=name)
    with engine.begin() as conn:
        conn.execute(api_tokens.update()
                     .where(api_tokens.c.token_hash == token_hash(issued.token))
                     .values(expires_at=sa.func.now() - timedelta(seconds=1)))

    with pytest.raises(AuthenticationError) as refused:
        accounts.authenticate(engine, f"Bearer {issued.token}")

    message = str(refused.value)
    assert message.startswith("token expired")
    for secret in (name, "acme", issued.token, issued.token[:8], str(issued.expires_at.year)):
        assert secret not in message
    # An unknown token is told apart from an expired one only by being unknown.
    with pytest.raises(AuthenticationError, match="unknown or revoked"):
        accounts.authenticate(engine, f"Bearer {issued.token}x")
    listed = {row.person.name: row for row in accounts.list_all(engine)}
    assert (listed[name].active_tokens, listed[name].next_token_expiry) == (0, None)
    assert accounts.revoke(engine, name=name) == 0
