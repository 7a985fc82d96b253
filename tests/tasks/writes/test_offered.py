"""What the assistant may offer a person, decided from the opt-in, the profile and the
person's permissions alone (pure: no database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragplate.catalog.assistant import compile_policy
from ragplate.catalog.people import OPERATOR_PERMISSION, Person
from ragplate.catalog.settings import Settings
from ragplate.tasks.writes.offered import offered_operations

ALL = {"sao.tickets": ["read", "create", "update", "delete"],
       "cms.contents": ["read", "create", "update", "delete"]}
TICKETS = frozenset({"sao.tickets.read", "sao.tickets.create", "sao.tickets.update",
                     "sao.tickets.delete"})
CONTENTS = frozenset({"cms.contents.read", "cms.contents.update"})


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path)


def pairs(person: Person, settings: Settings, *, entities: dict[str, list[str]] = ALL,
          unmoderated: tuple[str, ...] = (), profile: str = "in_app"
          ) -> set[tuple[str, str, bool]]:
    offered = offered_operations(person, compile_policy(profile, settings), entities=entities,
                                 unmoderated_writes=unmoderated)
    return {(o.entity, o.operation, o.requires_approval) for o in offered}


def test_a_member_is_offered_what_they_hold_and_their_writes_wait_for_approval(
        settings: Settings) -> None:
    member = Person(id=1, name="m", tenant="acme", permissions=TICKETS)
    assert pairs(member, settings) == {
        ("sao.tickets", "read", False), ("sao.tickets", "create", True),
        ("sao.tickets", "update", True), ("sao.tickets", "delete", True)}
    approver = Person(id=2, name="a", tenant="acme",
                      permissions=TICKETS | {"sao.tickets.approve"})
    assert ("sao.tickets", "update", False) in pairs(approver, settings)


def test_only_the_opted_in_operations_are_offered(settings: Settings) -> None:
    member = Person(id=1, name="m", tenant="acme", permissions=TICKETS)
    assert pairs(member, settings, entities={"sao.tickets": ["read"]}) == {
        ("sao.tickets", "read", False)}
    assert pairs(member, settings, entities={}) == set()


def test_an_entity_without_approvals_gets_writes_only_when_listed(settings: Settings) -> None:
    editor = Person(id=3, name="e", tenant="acme", permissions=CONTENTS)
    assert pairs(editor, settings) == {("cms.contents", "read", False)}
    assert pairs(editor, settings, unmoderated=("cms.contents",)) == {
        ("cms.contents", "read", False), ("cms.contents", "update", False)}


def test_guests_people_of_no_tenant_and_the_developer_profile_get_no_writes(
        settings: Settings) -> None:
    guest = Person(id=4, name="g", tenant="acme", permissions=TICKETS, is_guest=True)
    assert pairs(guest, settings) == set()
    nobody = Person(id=5, name="n", tenant=None, permissions=TICKETS)
    assert pairs(nobody, settings) == {("sao.tickets", "read", False)}
    operator = Person(id=6, name="o", tenant=None, permissions=TICKETS | {OPERATOR_PERMISSION})
    assert ("sao.tickets", "update", True) in pairs(operator, settings)
    member = Person(id=1, name="m", tenant="acme", permissions=TICKETS)
    assert pairs(member, settings, profile="developer_help") == set()


def test_approving_is_never_an_operation_to_opt_into(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'approve' is not an operation"):
        Settings(home=tmp_path, tools_crud_entities={"sao.tickets": ["approve"]})
    with pytest.raises(ValueError, match="not an application entity"):
        Settings(home=tmp_path, tools_crud_entities={"crm.leads": ["read"]})
    with pytest.raises(ValueError, match="not an application entity"):
        Settings(home=tmp_path, tools_crud_unmoderated_writes=["cms.pages"])
