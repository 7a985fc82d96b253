"""What the assistant may do with application data for one person.

:func:`offered_operations` is the single answer: the entity/operation pairs the operator
opted into (``RAGPLATE_TOOLS_CRUD_ENTITIES``) that the compiled policy admits (reads under
``crud_reads``, writes under ``governed_writes``) and that the person is permitted to
perform now. A write to an entity without approvals is offered only when the operator
listed the entity in ``RAGPLATE_TOOLS_CRUD_UNMODERATED_WRITES``. Approving and
disapproving are not operations here: they are never offered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragplate.catalog.assistant import Policy
from ragplate.catalog.crud import CRUD_ENTITIES, OPERATIONS, Operation
from ragplate.catalog.errors import PermissionDeniedError
from ragplate.catalog.people import Person
from ragplate.catalog.settings import Settings
from ragplate.tasks.crud import acl


@dataclass(frozen=True)
class OfferedOperation:
    """One entity and operation the assistant may use for the person."""

    entity: str
    operation: Operation
    #: A write of this person to this entity waits for an approver.
    requires_approval: bool

    @property
    def kind(self) -> Literal["read", "write"]:
        """``read`` or ``write``."""
        return "read" if self.operation == "read" else "write"

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape (capabilities)."""
        return {"entity": self.entity, "operation": self.operation, "kind": self.kind,
                "requires_approval": self.requires_approval}


def _writes_in_a_tenant(person: Person) -> bool:
    try:
        acl.write_tenant(person)
    except PermissionDeniedError:
        return False
    return True


def offered_operations(person: Person, policy: Policy, *,
                       entities: Mapping[str, Sequence[str]],
                       unmoderated_writes: Sequence[str]) -> list[OfferedOperation]:
    """The pairs offered to ``person`` under ``policy`` (see the module docstring), by
    entity then in the order read, create, update, delete. ``entities`` and
    ``unmoderated_writes`` are the two settings."""
    if person.is_guest:
        return []
    reads, writes = policy.allows("crud_reads"), policy.allows("governed_writes")
    can_write = writes and _writes_in_a_tenant(person)
    offered: list[OfferedOperation] = []
    for name in sorted(entities):
        spec = CRUD_ENTITIES.get(name)
        if spec is None:  # the settings refuse it; a hand-built mapping is ignored
            continue
        opted = set(entities[name])
        for operation in OPERATIONS:
            if operation not in opted or not person.holds(spec.permission(operation)):
                continue
            if operation == "read":
                if reads:
                    offered.append(OfferedOperation(name, operation, False))
                continue
            if not can_write or (not spec.moderated and name not in unmoderated_writes):
                continue
            offered.append(OfferedOperation(name, operation, acl.needs_approval(person, spec)))
    return offered


def offered_for(person: Person, policy: Policy, settings: Settings) -> list[OfferedOperation]:
    """:func:`offered_operations` with the two settings read from ``settings``."""
    return offered_operations(person, policy, entities=settings.tools_crud_entities,
                              unmoderated_writes=settings.tools_crud_unmoderated_writes)
