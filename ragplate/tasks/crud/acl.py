"""Who may do what to which rows: the permission of an operation, the rows a person sees
(their tenant and the global one, then the entity's visibility rule), the tenant they write
in, and whether their write waits for an approver.

Every answer is computed from the :class:`~ragplate.catalog.people.Person` the caller read
from the database for this call: nothing about a person is kept between calls.
"""

from __future__ import annotations

from typing import Any

from ragplate.catalog.crud import CrudEntity, Operation, RowScope
from ragplate.catalog.errors import NotFoundError, PermissionDeniedError
from ragplate.catalog.people import GLOBAL_TENANT, OPERATOR_PERMISSION, Person

#: The largest key a record can have (bigint): anything beyond names no record.
MAX_KEY = 2**63 - 1


def require(person: Person, entity: CrudEntity, operation: Operation) -> None:
    """:class:`PermissionDeniedError` unless ``person`` may ``operation`` on ``entity``."""
    if person.is_guest:
        raise PermissionDeniedError("a guest cannot use application data")
    needed = entity.permission(operation)
    if not person.holds(needed):
        raise PermissionDeniedError(f"{operation} on {entity.name} needs the {needed} "
                                    "permission")


def is_approver(person: Person, entity: CrudEntity) -> bool:
    """Whether ``person`` writes ``entity`` directly and decides others' modifications."""
    return entity.moderated and person.holds(entity.approve_permission)


def needs_approval(person: Person, entity: CrudEntity) -> bool:
    """Whether a write of ``person`` to ``entity`` becomes a pending modification."""
    return entity.moderated and not person.holds(entity.approve_permission)


def read_tenants(person: Person) -> tuple[str, ...]:
    """The tenants whose rows ``person`` sees: their own and the global one."""
    if person.tenant is None or person.tenant == GLOBAL_TENANT:
        return (GLOBAL_TENANT,)
    return (person.tenant, GLOBAL_TENANT)


def row_scope(person: Person, entity: CrudEntity) -> RowScope:
    """The rows of ``entity`` that ``person`` sees, for reads and for the row a write
    targets (a write outside it is a 404, like a row that does not exist)."""
    tenants = read_tenants(person)
    if entity.visibility == "published_or_editor":
        # Drafts and archived records are work in progress: their editors see them.
        statuses = None if person.holds(entity.permission("update")) else ("published",)
        return RowScope(tenants=tenants, statuses=statuses)
    if is_approver(person, entity):
        return RowScope(tenants=tenants)
    return RowScope(tenants=tenants, open_visibilities=("tenant",), reporter_id=person.id)


def write_tenant(person: Person) -> str:
    """The one tenant ``person`` writes in: their own; a person of no tenant writes global
    records only as an operator (:class:`PermissionDeniedError` otherwise). A person stored
    with the tenant ``global`` (which ``users create`` refuses) is one of no tenant: the
    records every tenant shares are never written without the operator's permission."""
    if person.tenant is not None and person.tenant != GLOBAL_TENANT:
        return person.tenant
    if person.holds(OPERATOR_PERMISSION):
        return GLOBAL_TENANT
    raise PermissionDeniedError("a person of no tenant writes global records only with the "
                                f"{OPERATOR_PERMISSION} permission")


def check_writable(person: Person, record: dict[str, Any]) -> None:
    """:class:`PermissionDeniedError` when a record ``person`` sees lies outside the tenant
    they write in (a global record seen by a tenant's member)."""
    if record["tenant"] != write_tenant(person):
        raise PermissionDeniedError(f"writes are limited to tenant {write_tenant(person)!r}; "
                                    f"this record belongs to {record['tenant']!r}")


def parse_key(key: str | int, entity: CrudEntity) -> int:
    """The record key as an integer; anything that cannot be a key is a 404, like a key
    that names no record."""
    text = str(key)
    if not text.isascii() or not text.isdigit() or len(text) > 19 or int(text) > MAX_KEY:
        raise NotFoundError(f"no {entity.name} record {text[:40]!r}")
    return int(text)
