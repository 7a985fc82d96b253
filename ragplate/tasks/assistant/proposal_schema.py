"""The JSON Schema subset a page may declare for a proposable target, and the check of a
proposed value against it.

The subset: ``type``, ``enum``, ``const``, ``minimum``, ``maximum``, ``exclusiveMinimum``,
``exclusiveMaximum``, ``minLength``, ``maxLength``, ``minItems``, ``maxItems``, ``items`` (one
schema), ``properties``, ``required`` and ``additionalProperties`` (a boolean only);
``title``, ``description``, ``default``, ``examples`` and ``$comment`` are ignored. It fails
closed: any other keyword (``pattern``, ``$ref``, ``oneOf``, ``format``, …), a keyword whose
value is not of its form, or a schema — or a sub-schema — that constrains nothing makes the
schema unusable. The page is the client's, so nothing of it is interpreted beyond this: a
client's regular expression or reference never runs here.

Values are compared as JSON compares them: ``1`` equals ``1.0``, ``true`` never equals ``1``.
A proposed value arrives as JSON text and is read strictly (:func:`parse_value`: no duplicate
key, no ``NaN``, bounded in size and depth, :func:`fits`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final, TypeGuard

__all__ = ["INVALID", "depth_exceeds", "fits", "is_proposable_schema", "json_equal",
           "parse_value", "satisfies"]

#: What :func:`parse_value` returns for a text that is not a usable value.
INVALID: Final = object()
TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
IGNORED: Final = frozenset({"title", "description", "default", "examples", "$comment"})
# "integer" is inside "number": a type list holding all of these admits every value.
_EVERY_TYPE: Final = frozenset({"string", "number", "boolean", "object", "array", "null"})


def _is_number(value: object) -> TypeGuard[int | float]:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value))


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_type(value: object) -> bool:
    if isinstance(value, str):
        return value in TYPES
    return (isinstance(value, list) and bool(value)
            and all(isinstance(t, str) and t in TYPES for t in value)
            and len(set(value)) == len(value))


def _is_names(value: object) -> bool:
    return (isinstance(value, list) and all(isinstance(n, str) for n in value)
            and len(set(value)) == len(value))


def _is_properties(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(name, str) and is_proposable_schema(sub) for name, sub in value.items())


_FORMS: Final[dict[str, Callable[[object], bool]]] = {
    "type": _is_type,
    "enum": lambda v: isinstance(v, list) and bool(v),
    "const": lambda v: True,
    "minimum": _is_number,
    "maximum": _is_number,
    "exclusiveMinimum": _is_number,
    "exclusiveMaximum": _is_number,
    "minLength": _is_count,
    "maxLength": _is_count,
    "minItems": _is_count,
    "maxItems": _is_count,
    "items": lambda v: is_proposable_schema(v),
    "properties": _is_properties,
    "required": _is_names,
    "additionalProperties": lambda v: isinstance(v, bool),
}


def _constrains(key: str, value: object) -> bool:
    """Whether a well-formed keyword narrows the values at all."""
    if key == "type":
        types = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        return not _EVERY_TYPE.issubset(types)
    if key in ("properties", "required"):
        return bool(value)
    if key == "additionalProperties":
        return value is False
    return True


def is_proposable_schema(schema: object) -> bool:
    """Whether ``schema`` is a schema of the subset that constrains something, with every
    sub-schema (``items``, each of ``properties``) one too. Callers bound its depth first."""
    if not isinstance(schema, dict):
        return False
    keywords = [key for key in schema if key not in IGNORED]
    if any(key not in _FORMS for key in keywords):
        return False
    if not all(_FORMS[key](schema[key]) for key in keywords):
        return False
    return any(_constrains(key, schema[key]) for key in keywords)


def _json_type(value: object) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _has_type(value: object, expected: str) -> bool:
    actual = _json_type(value)
    return actual == expected or (expected == "number" and actual == "integer")


def json_equal(a: object, b: object) -> bool:
    """Equality as JSON means it (numbers by value, booleans apart from numbers)."""
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _bounds(value: float, schema: dict[str, Any]) -> bool:
    return not (("minimum" in schema and value < schema["minimum"])
                or ("maximum" in schema and value > schema["maximum"])
                or ("exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"])
                or ("exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]))


def _sized(size: int, schema: dict[str, Any], low: str, high: str) -> bool:
    return not ((low in schema and size < schema[low]) or (high in schema and size > schema[high]))


def _object(value: dict[str, Any], schema: dict[str, Any]) -> bool:
    properties: dict[str, Any] = schema.get("properties", {})
    if any(name not in value for name in schema.get("required", [])):
        return False
    if schema.get("additionalProperties") is False and any(k not in properties for k in value):
        return False
    return all(satisfies(value[name], sub) for name, sub in properties.items() if name in value)


def satisfies(value: object, schema: dict[str, Any]) -> bool:
    """Whether ``value`` (parsed JSON) satisfies ``schema``, which
    :func:`is_proposable_schema` accepted. Each keyword applies to the values of its type,
    as in JSON Schema (``minLength`` says nothing of a number)."""
    if "type" in schema:
        types = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if not any(_has_type(value, t) for t in types):
            return False
    if "enum" in schema and not any(json_equal(value, option) for option in schema["enum"]):
        return False
    if "const" in schema and not json_equal(value, schema["const"]):
        return False
    if _is_number(value):
        return _bounds(value, schema)
    if isinstance(value, str):
        return _sized(len(value), schema, "minLength", "maxLength")
    if isinstance(value, list):
        return _sized(len(value), schema, "minItems", "maxItems") and (
            "items" not in schema or all(satisfies(item, schema["items"]) for item in value))
    if isinstance(value, dict):
        return _object(value, schema)
    return True


def depth_exceeds(value: object, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels (a scalar is
    level 0, ``{}`` level 1). Iterative, and stops at the first level past ``limit``: a
    hostile nesting neither recurses nor is walked to its end."""
    level = 0
    layer: list[Any] = [value] if isinstance(value, dict | list) else []
    while layer:
        level += 1
        if level > limit:
            return True
        layer = [child for node in layer
                 for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, dict | list)]
    return False


def fits(value: object, max_bytes: int, max_depth: int | None = None) -> bool:
    """Whether ``value`` is JSON of at most ``max_bytes`` as compact UTF-8 and at most
    ``max_depth`` levels (by default the most that ``max_bytes`` can nest, so a deeper value
    is refused before it is serialised)."""
    if depth_exceeds(value, max_bytes // 2 if max_depth is None else max_depth):
        return False
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return len(text.encode("utf-8")) <= max_bytes
    except (TypeError, ValueError, RecursionError):
        return False


def _unique_keys(items: list[tuple[str, Any]]) -> dict[str, Any]:
    if len({key for key, _ in items}) != len(items):
        raise ValueError("duplicate key")
    return dict(items)


def _no_constant(name: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def parse_value(text: object, max_bytes: int) -> Any:
    """The value a JSON text holds, or :data:`INVALID`: not text, not strict JSON (an object
    with a duplicate key, ``NaN``), or more than ``max_bytes`` as compact JSON."""
    # The text may carry whitespace around the value, but not without end.
    if not isinstance(text, str) or len(text) > 4 * max_bytes:
        return INVALID
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return INVALID
    return value if fits(value, max_bytes) else INVALID
