"""The strict OpenAPI/JSON-Schema checker the contract tests rely on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.models.conftest import SPECS
from tests.testing.openapi_contract import ContractDocument, UnknownKeyword


def _doc(tmp_path: Path, schemas: dict[str, Any]) -> ContractDocument:
    path = tmp_path / "doc.openapi.json"
    path.write_text(json.dumps({"openapi": "3.1.0", "paths": {},
                                "components": {"schemas": schemas}}))
    return ContractDocument(path)


def test_checker_refuses_a_keyword_it_has_not_learned(tmp_path: Path) -> None:
    doc = _doc(tmp_path, {"A": {"type": "object", "properties": {
        "b": {"type": "string", "contentEncoding": "base64"}}}})

    with pytest.raises(UnknownKeyword, match="contentEncoding"):
        doc.validate({}, doc.schema("A"))
    with pytest.raises(UnknownKeyword, match="date-time"):
        doc.validate("x", {"type": "string", "format": "date-time"})


def test_checker_treats_objects_as_closed_unless_they_say_otherwise(tmp_path: Path) -> None:
    doc = _doc(tmp_path, {
        "Closed": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "Open": {"type": "object", "properties": {"a": {"type": "integer"}},
                 "additionalProperties": True},
    })

    assert doc.errors({"a": 1, "b": 2}, doc.schema("Closed")) == ["$: field 'b' is not declared"]
    assert doc.errors({"a": 1, "b": 2}, doc.schema("Open")) == []


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        ({"type": "string", "nullable": True}, None, True),
        ({"type": "string"}, None, False),
        ({"type": ["string", "null"]}, None, True),
        ({"type": "integer"}, True, False),
        ({"type": "integer", "minimum": 0}, -1, False),
        ({"type": "integer", "exclusiveMinimum": 0}, 0, False),
        ({"type": "number", "minimum": 0, "exclusiveMinimum": True}, 0, False),
        ({"type": "integer", "format": "int32"}, 2**31, False),
        ({"type": "string", "minLength": 1}, "", False),
        ({"type": "string", "maxLength": 2}, "abc", False),
        ({"type": "string", "pattern": "^a"}, "ba", False),
        ({"type": "string", "format": "uri"}, "passage: a text", False),
        ({"type": "string", "format": "uri"}, "https://example.org/a.png", True),
        ({"type": "array", "items": {"type": "string"}, "minItems": 1}, [], False),
        ({"type": "array", "maxItems": 1}, [1, 2], False),
        ({"type": "array", "uniqueItems": True}, [1, 1], False),
        ({"enum": ["float", "base64"]}, "binary", False),
        ({"const": "rerank"}, "rerank", True),
        ({"oneOf": [{"type": "string"}, {"type": "string", "minLength": 1}]}, "a", False),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, 1, True),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1.5, False),
        ({"allOf": [{"type": "number"}, {"minimum": 2}]}, 1, False),
        ({"type": "object", "required": ["a"], "properties": {"a": {}}}, {}, False),
        ({"type": "string", "format": "binary"}, b"\x00", True),
    ],
)
def test_checker_keywords(tmp_path: Path, schema: dict[str, Any], value: Any,
                          valid: bool) -> None:
    doc = _doc(tmp_path, {})

    assert (doc.errors(value, schema) == []) is valid


def test_checker_reduces_an_answer_to_its_required_fields() -> None:
    if not (SPECS / "infinity.openapi.json").is_file():
        pytest.skip(f"API documents not found at {SPECS}")
    infinity = ContractDocument(SPECS / "infinity.openapi.json")
    full = {"object": "rerank", "results": [{"relevance_score": 0.5, "index": 0,
                                             "document": "x"}],
            "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}, "id": "a",
            "created": 1}

    reduced = infinity.reduce(full, infinity.schema("ReRankResult"))

    assert reduced == {"results": [{"relevance_score": 0.5, "index": 0}], "model": "m",
                       "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    assert not infinity.requires(infinity.schema("ReRankResult"), "results[].document")
    assert not infinity.requires(infinity.schema("ReRankResult"), "id")
