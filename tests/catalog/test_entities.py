"""The registry of embeddable entities."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from ragplate.catalog.entities import CMS_CONTENTS, Entity, entities, get_entity
from ragplate.catalog.errors import ConfigurationError, InvalidInputError, UnknownEntityError
from ragplate.catalog.settings import Settings

TICKETS = {
    "name": "sao.tickets",
    "table": "sao_tickets",
    "key_type": "text",
    "tenant_column": None,
    "searchable_statuses": ["open", "closed"],
    "translations": {"table": "sao_ticket_texts", "key_column": "ticket_id",
                     "text_fields": ["subject", "description", "resolution"]},
}


def test_cms_contents_is_shipped() -> None:
    entity = get_entity(CMS_CONTENTS, Settings())

    assert (entity.table, entity.key_column, entity.key_type) == ("cms_contents", "id", "bigint")
    assert (entity.tenant_column, entity.status_column) == ("tenant", "status")
    assert entity.searchable_statuses == ("published",)
    translations = entity.translations
    assert (translations.table, translations.key_column, translations.locale_column) == (
        "cms_content_translations", "content_id", "locale")
    assert translations.text_fields == ("title", "body")
    assert translations.search_column == "search"
    assert (entity.title_field, entity.body_fields) == ("title", ("body",))


def test_unknown_entity_is_named_with_the_known_ones() -> None:
    with pytest.raises(UnknownEntityError) as caught:
        get_entity("cms.pages", Settings())

    assert isinstance(caught.value, InvalidInputError)
    assert caught.value.http_status == 422
    assert str(caught.value) == "unknown entity 'cms.pages' (known: cms.contents)"


def test_extra_entities_come_from_ragplate_entities(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPLATE_ENTITIES", json.dumps([TICKETS]))
    settings = Settings()

    assert list(entities(settings)) == [CMS_CONTENTS, "sao.tickets"]
    tickets = get_entity("sao.tickets", settings)
    assert tickets.tenant_column is None and tickets.key_type == "text"
    assert tickets.title_field == "subject"
    assert tickets.body_fields == ("description", "resolution")
    assert tickets.translations.search_column is None  # computed per query


def test_an_entity_declared_twice_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shipped = get_entity(CMS_CONTENTS, Settings()).model_dump()
    monkeypatch.setenv("RAGPLATE_ENTITIES", json.dumps([shipped]))

    with pytest.raises(ConfigurationError, match=r"declares entity 'cms\.contents' twice"):
        entities(Settings())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("table", 'tickets"; DROP TABLE settings; --'),
        ("table", "Tickets"),
        ("name", "tickets"),
        ("key_type", "json"),
        ("searchable_statuses", []),
        ("colour", "blue"),
    ],
)
def test_names_that_would_reach_sql_are_plain_identifiers(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Entity.model_validate({**TICKETS, field: value})

    assert field in str(caught.value)


def test_records_and_translations_need_two_tables() -> None:
    same = {**TICKETS, "translations": {**TICKETS["translations"], "table": "sao_tickets"}}

    with pytest.raises(ValidationError, match="two tables"):
        Entity.model_validate(same)
