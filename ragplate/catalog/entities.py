"""Embeddable entities: application records whose texts are embedded and searched.

An entity is declared, not coded: a table of records (key, tenant, status) and a table of
translations (one row per record and locale) whose text fields are embedded together.
ragplate ships ``cms.contents``; more can be declared with ``RAGPLATE_ENTITIES`` (a JSON
list of :class:`Entity` objects) over tables the operator creates.

Every name here is interpolated into SQL, so each one must be a plain lower-case
identifier: the model refuses anything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from ragplate.catalog.errors import ConfigurationError, UnknownEntityError

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]{0,62}$")]
KeyType = Literal["bigint", "integer", "text", "uuid"]

#: The entity shipped with ragplate (tables created by migration 0002).
CMS_CONTENTS = "cms.contents"
#: Statuses of a ``cms.contents`` record; only ``published`` ones are searchable.
CONTENT_STATUSES: tuple[str, ...] = ("draft", "published", "archived")


class EntityTranslations(BaseModel):
    """The per-locale texts of an entity's records."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table: Identifier = Field(description="Table with one row per record and locale.")
    key_column: Identifier = Field(description="Column referencing the record's key.")
    locale_column: Identifier = Field(default="locale", description="The locale (en, it, …).")
    text_fields: tuple[Identifier, ...] = Field(
        min_length=1,
        description="Columns embedded and searched, in order; the first is the hit's title, "
        "the others its body. The embedded text joins the non-empty ones with a blank line.",
    )
    search_column: Identifier | None = Field(
        default=None,
        description="A stored tsvector column for keyword search (GIN-indexed). Without "
        "one, keyword search computes the vector of the text fields per query, in the "
        "language of each translation's locale.",
    )
    search_language: Literal["simple", "locale"] = Field(
        default="simple",
        description="How search_column was computed, so that queries are read alike: "
        "simple (one configuration for every locale), or locale (ragplate's configuration "
        "of the translation's locale, ragplate_<language>, as cms.contents' column).",
    )


class Entity(BaseModel):
    """One embeddable entity: where its records, texts, tenant and status live."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")] = (
        Field(description="module.entity, e.g. cms.contents; the `entity` of model_embeddings.")
    )
    table: Identifier = Field(description="Table with one row per record.")
    key_column: Identifier = Field(default="id", description="The record key column.")
    key_type: KeyType = Field(
        default="bigint",
        description="SQL type of the key; model_embeddings stores keys as text and casts "
        "them back to join, so key order is the type's order.",
    )
    tenant_column: Identifier | None = Field(
        default="tenant",
        description="Tenant of a record ('global' = every tenant sees it); none: no filter.",
    )
    status_column: Identifier | None = Field(
        default="status", description="Record status; none: every record is searchable."
    )
    searchable_statuses: tuple[str, ...] = Field(
        default=("published",), min_length=1, description="Statuses that are searchable."
    )
    translations: EntityTranslations

    @model_validator(mode="after")
    def _distinct_tables(self) -> Entity:
        if self.table == self.translations.table:
            raise ValueError(f"entity {self.name}: records and translations need two tables")
        return self

    @property
    def title_field(self) -> str:
        """The text field shown as a hit's title."""
        return self.translations.text_fields[0]

    @property
    def body_fields(self) -> tuple[str, ...]:
        """The text fields shown as a hit's excerpt."""
        return self.translations.text_fields[1:]


SHIPPED: dict[str, Entity] = {
    CMS_CONTENTS: Entity(
        name=CMS_CONTENTS,
        table="cms_contents",
        translations=EntityTranslations(
            table="cms_content_translations",
            key_column="content_id",
            text_fields=("title", "body"),
            search_column="search",
            search_language="locale",
        ),
    )
}


class DeclaredEntities(Protocol):
    """What the registry reads of the settings (:class:`~ragplate.catalog.settings.
    Settings` is one): the entities the operator declared."""

    @property
    def entities(self) -> Sequence[Entity]: ...


def entities(settings: DeclaredEntities) -> dict[str, Entity]:
    """Every declared entity by name: the shipped ones, then ``RAGPLATE_ENTITIES``."""
    registry = dict(SHIPPED)
    for entity in settings.entities:
        if entity.name in registry:
            raise ConfigurationError(f"RAGPLATE_ENTITIES declares entity '{entity.name}' twice "
                                     "(or redeclares a shipped one)")
        registry[entity.name] = entity
    return registry


def get_entity(name: str, settings: DeclaredEntities) -> Entity:
    """The entity called ``name``; raises :class:`UnknownEntityError` (HTTP 422) naming it."""
    registry = entities(settings)
    try:
        return registry[name]
    except KeyError:
        raise UnknownEntityError(name, sorted(registry)) from None
