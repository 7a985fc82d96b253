"""The CRUD service: reads and writes of application entities as a person, deciding the
permission and then the row-level ACL at the moment of each call.

- A missing permission is a :class:`PermissionDeniedError` (403); a row the person may not
  see is a :class:`NotFoundError` (404), worded as for a row that does not exist.
- A write to a moderated entity by a person without its approve permission is stored as a
  pending modification (``pending_approval``); an approver of that entity and tenant
  applies it (``approve``) or marks it (``disapprove``), never on their own request.
- Each write, and each approval applying one, runs in one transaction holding the row lock
  of its target (and of the modification): two approvals at once apply it once.
- An applied write to an embeddable entity re-embeds the changed texts in that transaction,
  when ``RAGPLATE_EMBEDDINGS_MODULES`` admits its module.

The caller passes the :class:`Person` read from the database for this request (the API
does so on every request), so a revoked permission counts from the next call.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.crud import (
    CRUD_ENTITIES,
    AlreadyDecidedError,
    CrudEntity,
    Operation,
    RowScope,
    WriteOutcome,
    crud_entity,
)
from ragplate.catalog.entities import SHIPPED
from ragplate.catalog.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from ragplate.catalog.people import LOCALE_PATTERN, Person
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra import crud as crud_sql
from ragplate.infra import people as people_sql
from ragplate.tasks.crud import acl
from ragplate.tasks.crud.embedding import (
    EmbedderFor,
    admitted,
    embedded,
    forget_vectors,
    refresh_vectors,
)
from ragplate.tasks.crud.payloads import payload_sha256, validate

if TYPE_CHECKING:
    from ragplate.infra.records.es_search import ElasticsearchRecords
from ragplate.tasks.records.search_index import forget_records, refresh_records
from ragplate.tasks.records.texts import embedding_profiles_for_writes

#: The largest page a list answers, and the furthest it pages.
MAX_LIMIT = 100
MAX_OFFSET = 1_000_000


@dataclass(frozen=True)
class CrudService:
    """Reads, writes and approvals over :data:`~ragplate.catalog.crud.CRUD_ENTITIES`.

    ``embedder_for`` builds the embedder of a profile; ``embeddings_modules`` is
    ``RAGPLATE_EMBEDDINGS_MODULES``; ``profiles_for_writes`` gives the profiles a write
    embeds with (the serving one, and a switch's target while one runs).
    """

    engine: Engine
    embedder_for: EmbedderFor
    embeddings_modules: Sequence[str] = ()
    profiles_for_writes: Callable[[Engine], builtins.list[EmbeddingProfile]] = (
        embedding_profiles_for_writes)
    #: The Elasticsearch application-search indexes, kept in step with each write (in the
    #: write's transaction, before its commit); ``None`` without Elasticsearch.
    search_index: ElasticsearchRecords | None = None

    # -- reads -------------------------------------------------------------------------

    def read(self, person: Person, *, entity: str, key: str | int) -> dict[str, Any]:
        """The record ``key`` of ``entity`` as ``person`` may see it."""
        spec = crud_entity(entity)
        acl.require(person, spec, "read")
        number = acl.parse_key(key, spec)
        with self.engine.connect() as conn:
            found = crud_sql.read_record(conn, spec.name, number, acl.row_scope(person, spec))
        if found is None:
            raise _absent(spec, number)
        return found

    def list(self, person: Person, *, entity: str, limit: int = 20, offset: int = 0,
             locale: str | None = None) -> dict[str, Any]:
        """A page of the records ``person`` may see, by key: ``{"items", "total", "limit",
        "offset"}``; a content's translations cut to ``locale`` when given."""
        spec = crud_entity(entity)
        acl.require(person, spec, "read")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(f"limit: between 1 and {MAX_LIMIT}")
        if not 0 <= offset <= MAX_OFFSET:
            raise InvalidInputError(f"offset: between 0 and {MAX_OFFSET}")
        if locale is not None and not LOCALE_PATTERN.fullmatch(locale):
            raise InvalidInputError(f"locale: {locale[:40]!r} is not a language tag such as "
                                    "en or it-IT")
        with self.engine.connect() as conn:
            items, total = crud_sql.list_records(conn, spec.name, acl.row_scope(person, spec),
                                                 limit=limit, offset=offset, locale=locale)
        return {"items": items, "total": total, "limit": limit, "offset": offset}

    # -- writes ------------------------------------------------------------------------

    def create(self, person: Person, *, entity: str, payload: Mapping[str, Any],
               conn: Connection | None = None) -> WriteOutcome:
        """Create a record in the person's tenant (or propose it for approval); in ``conn``'s
        transaction when given, else in one of its own."""
        spec = crud_entity(entity)
        acl.require(person, spec, "create")
        tenant = acl.write_tenant(person)
        values = validate(spec, "create", payload)
        profiles = self._profiles(spec)
        with self._transaction(conn) as conn:
            if acl.needs_approval(person, spec):
                return self._propose(conn, spec, "create", None, values, person, tenant)
            record = self._apply(conn, spec, "create", None, values, tenant=tenant,
                                 reporter_id=person.id, profiles=profiles)
        return WriteOutcome("applied", spec.name, "create", record=record)

    def update(self, person: Person, *, entity: str, key: str | int,
               changes: Mapping[str, Any], conn: Connection | None = None) -> WriteOutcome:
        """Change fields of a record the person sees, in their tenant (in ``conn``'s
        transaction when given)."""
        return self._write(person, spec=crud_entity(entity), operation="update", key=key,
                           payload=changes, conn=conn)

    def delete(self, person: Person, *, entity: str, key: str | int,
               conn: Connection | None = None) -> WriteOutcome:
        """Delete a record the person sees, in their tenant (in ``conn``'s transaction when
        given)."""
        return self._write(person, spec=crud_entity(entity), operation="delete", key=key,
                           payload={}, conn=conn)

    def _transaction(self, conn: Connection | None) -> AbstractContextManager[Connection]:
        """The caller's transaction, or a new one committed at the end of the block."""
        return nullcontext(conn) if conn is not None else self.engine.begin()

    def _write(self, person: Person, *, spec: CrudEntity, operation: Operation,
               key: str | int, payload: Mapping[str, Any],
               conn: Connection | None) -> WriteOutcome:
        acl.require(person, spec, operation)
        tenant = acl.write_tenant(person)
        number = acl.parse_key(key, spec)
        profiles = self._profiles(spec)
        with self._transaction(conn) as conn:
            target = crud_sql.read_record(conn, spec.name, number,
                                          acl.row_scope(person, spec), lock=True)
            if target is None:
                raise _absent(spec, number)
            acl.check_writable(person, target)
            # After the row: what a payload may hold is no hint of whether a row exists.
            values = validate(spec, "update", payload) if operation == "update" else {}
            self._check_translation(conn, spec, number, values)
            if acl.needs_approval(person, spec):
                return self._propose(conn, spec, operation, number, values, person, tenant)
            record = self._apply(conn, spec, operation, number, values, tenant=tenant,
                                 reporter_id=None, profiles=profiles)
        return WriteOutcome("applied", spec.name, operation, record=record)

    # -- approvals ---------------------------------------------------------------------

    def pending(self, person: Person) -> builtins.list[dict[str, Any]]:
        """The pending modifications ``person`` may decide (not their own), oldest first."""
        entities = self._approvable(person)
        with self.engine.connect() as conn:
            return crud_sql.list_modifications(conn, entities=entities,
                                               tenant=acl.write_tenant(person),
                                               exclude_requester=person.id)

    def approve(self, person: Person, *, modification_id: uuid.UUID) -> WriteOutcome:
        """Apply a pending modification's stored payload, once: the target must still exist
        and the payload still validate; a decided one is an :class:`AlreadyDecidedError`."""
        self._approvable(person)
        with self.engine.connect() as conn:
            seen = crud_sql.read_modification(conn, modification_id)
        spec = self._decidable(person, seen, modification_id)
        profiles = self._profiles(spec)
        with self.engine.begin() as conn:
            mod = crud_sql.read_modification(conn, modification_id, lock=True)
            spec = self._decidable(person, mod, modification_id)
            assert mod is not None
            number = None if mod["record_key"] is None else int(mod["record_key"])
            self._requester_may(conn, spec, mod, number)
            operation: Operation = mod["operation"]
            values = (validate(spec, operation, mod["payload"])
                      if operation in ("create", "update") else {})
            if number is not None:
                target = crud_sql.read_record(conn, spec.name, number,
                                              RowScope(tenants=(mod["tenant"],)), lock=True)
                if target is None:
                    raise NotFoundError(f"the {spec.name} record {number} of this "
                                        "modification no longer exists: disapprove it")
                self._check_translation(conn, spec, number, values)
            record = self._apply(conn, spec, operation, number, values, tenant=mod["tenant"],
                                 reporter_id=mod["requested_by"], profiles=profiles)
            crud_sql.decide_modification(conn, modification_id, status="approved",
                                         decided_by=person.id)
        return WriteOutcome("applied", spec.name, operation, record=record)

    def disapprove(self, person: Person, *, modification_id: uuid.UUID) -> dict[str, Any]:
        """Mark a pending modification disapproved; the record is left as it is."""
        self._approvable(person)
        with self.engine.begin() as conn:
            mod = crud_sql.read_modification(conn, modification_id, lock=True)
            self._decidable(person, mod, modification_id)
            crud_sql.decide_modification(conn, modification_id, status="disapproved",
                                         decided_by=person.id)
            decided = crud_sql.read_modification(conn, modification_id)
        assert decided is not None
        return decided

    def _approvable(self, person: Person) -> builtins.list[str]:
        """The moderated entities ``person`` approves; 403 when none."""
        if person.is_guest:
            raise PermissionDeniedError("a guest cannot decide modifications")
        names = [e.name for e in CRUD_ENTITIES.values() if acl.is_approver(person, e)]
        if not names:
            raise PermissionDeniedError(
                "deciding modifications needs an approve permission (e.g. sao.tickets.approve)")
        acl.write_tenant(person)
        return names

    def _decidable(self, person: Person, mod: dict[str, Any] | None,
                   modification_id: uuid.UUID) -> CrudEntity:
        """The entity of a modification ``person`` may decide now; another entity's or
        tenant's is a 404, their own a 403, a decided one a 409."""
        spec = CRUD_ENTITIES.get(mod["entity"]) if mod is not None else None
        if (mod is None or spec is None or not acl.is_approver(person, spec)
                or mod["tenant"] != acl.write_tenant(person)):
            raise NotFoundError(f"no pending modification {modification_id}")
        if mod["requested_by"] == person.id:
            raise PermissionDeniedError("a modification is decided by another approver than "
                                        "the person who requested it")
        if mod["status"] != "pending":
            raise AlreadyDecidedError(f"modification {modification_id} is already "
                                      f"{mod['status']}")
        return spec

    @staticmethod
    def _requester_may(conn: Connection, spec: CrudEntity, mod: dict[str, Any],
                       number: int | None) -> None:
        """:class:`PermissionDeniedError` unless the person who requested ``mod`` may still
        make it (on record ``number``; ``None`` for a create): an approval applies a change
        with its requester's authority as it stands now (as a confirmed assistant write is
        checked again when confirmed). A requester deleted, made a guest, moved to another
        tenant, without the operation's permission, or no longer seeing the target record,
        leaves the modification to be disapproved."""
        operation: Operation = mod["operation"]
        requester = (None if mod["requested_by"] is None
                     else people_sql.person_by_id(conn, mod["requested_by"]))
        if requester is None:
            raise PermissionDeniedError("the person who requested this modification no longer "
                                        "exists: disapprove it")
        permission = spec.permission(operation)
        try:
            tenant: str | None = acl.write_tenant(requester)
        except PermissionDeniedError:
            tenant = None  # writes in no tenant now
        if requester.is_guest or not requester.holds(permission) or tenant != mod["tenant"]:
            raise PermissionDeniedError(
                f"{requester.name}, who requested this modification, may no longer make it "
                f"({permission} in tenant {mod['tenant']!r}): disapprove it")
        if number is not None and crud_sql.read_record(
                conn, spec.name, number, acl.row_scope(requester, spec)) is None:
            raise PermissionDeniedError(
                f"{requester.name}, who requested this modification, no longer sees the "
                f"{spec.name} record {number}: disapprove it")

    # -- the writes themselves -----------------------------------------------------------

    def profiles_for(self, entity: str) -> builtins.list[EmbeddingProfile]:
        """The profiles an applied write of ``entity`` embeds with (see :meth:`_profiles`);
        a caller that passes its own transaction reads them before opening it."""
        return self._profiles(crud_entity(entity))

    def _profiles(self, spec: CrudEntity) -> builtins.list[EmbeddingProfile]:
        """The profiles an applied write of ``spec`` keeps in step, read before its
        transaction opens: none when the entity has no vectors, or when its module is not
        admitted and no search index holds its documents."""
        if not embedded(spec.name):
            return []
        if not self._admitted(spec) and self.search_index is None:
            return []
        return self.profiles_for_writes(self.engine)

    def _admitted(self, spec: CrudEntity) -> bool:
        return admitted(spec.module, self.embeddings_modules)

    @staticmethod
    def _check_translation(conn: Connection, spec: CrudEntity, key: int,
                           values: Mapping[str, str]) -> None:
        # A translation is created by an update naming a new locale: it needs both texts.
        locale = values.get("locale")
        if locale is None or crud_sql.translation_exists(conn, key, locale):
            return
        for name in ("title", "body"):
            if name not in values:
                raise InvalidInputError(f"{name}: required to add the {locale} translation")

    @staticmethod
    def _propose(conn: Connection, spec: CrudEntity, operation: Operation, key: int | None,
                 values: Mapping[str, str], person: Person, tenant: str) -> WriteOutcome:
        modification = crud_sql.insert_modification(
            conn, entity=spec.name, record_key=None if key is None else str(key),
            operation=operation, payload=values, payload_sha256=payload_sha256(values),
            requested_by=person.id, tenant=tenant)
        return WriteOutcome("pending_approval", spec.name, operation,
                            modification_id=modification)

    def _apply(self, conn: Connection, spec: CrudEntity, operation: Operation,
               key: int | None, values: Mapping[str, str], *, tenant: str,
               reporter_id: int | None, profiles: Sequence[EmbeddingProfile]
               ) -> dict[str, Any] | None:
        """Write to the (locked) row and keep its vectors in step; the record as saved."""
        if operation == "delete":
            assert key is not None
            if embedded(spec.name):
                # Whatever the allowlist says: a deleted record's vectors point at nothing.
                forget_vectors(conn, spec.name, key)
                forget_records(self.search_index, spec.name, [str(key)])
            crud_sql.delete_record(conn, spec.name, key)
            return None
        if spec.name == "cms.contents":
            if key is None:
                key = crud_sql.insert_content(
                    conn, tenant=tenant, status=values.get("status", "draft"),
                    locale=values["locale"], title=values["title"], body=values["body"])
            else:
                crud_sql.update_content(conn, key, status=values.get("status"),
                                        locale=values.get("locale"), title=values.get("title"),
                                        body=values.get("body"))
        elif key is None:
            key = crud_sql.insert_ticket(conn, tenant=tenant, reporter_id=reporter_id,
                                         values=values)
        else:
            crud_sql.update_ticket(conn, key, values)
        if profiles:
            if self._admitted(spec):
                refresh_vectors(conn, spec.name, key, profiles=profiles,
                                embedder_for=self.embedder_for)
            # The search index follows every write (status, texts), embedded or not: a
            # record unpublished here must leave fast search now, not at the next switch.
            refresh_records(self.search_index, conn, SHIPPED[spec.name], profiles,
                            keys=[str(key)])
        return crud_sql.read_record(conn, spec.name, key, RowScope(tenants=(tenant,)))


def _absent(spec: CrudEntity, key: int) -> NotFoundError:
    return NotFoundError(f"no {spec.name} record {key}")
