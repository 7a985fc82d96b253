"""A small OpenAPI/JSON-Schema checker for contract tests against published documents.

It is strict on purpose, where a general validator is lenient:

- an object schema without ``additionalProperties`` is closed, so a field a client sends
  that the server does not declare fails (an object whose fields are declared only by its
  ``oneOf``/``anyOf``/``allOf`` branches leaves the branches to decide; the branches of an
  ``allOf`` accept the fields any of them declares; an object schema that declares no
  field at all, such as ``{"type": "object"}``, is free-form: user data);
- it knows the keywords ``type``, ``required``, ``properties``, ``additionalProperties``,
  ``items``, ``enum``, ``const``, ``pattern``, ``oneOf``, ``anyOf``, ``allOf``, ``nullable``,
  ``format``, ``discriminator`` (the property it names must be present; ``oneOf`` still
  decides) and the numeric, length, item and property-count bounds, and ignores
  annotations (``externalDocs`` among them); any other
  keyword anywhere in the schema being checked raises :class:`UnknownKeyword`, so a
  document that starts using one fails until the checker learns it.

Documents are read from ``../shared/specs`` by the tests, never copied into the project.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

KEYWORDS = frozenset({
    "$ref", "type", "required", "properties", "additionalProperties", "items", "enum",
    "const", "pattern", "oneOf", "anyOf", "allOf", "nullable", "format", "discriminator",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties",
})
# Annotations assert nothing. ``optional`` is not JSON Schema: OpenAI's document puts
# ``optional: true`` on a few properties, which ``required`` already says.
ANNOTATIONS = frozenset({
    "title", "description", "default", "example", "examples", "deprecated", "readOnly",
    "writeOnly", "optional", "externalDocs",
})
FORMATS = frozenset({"binary", "uri", "int32", "int64", "float", "double"})

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[^\s]*$")
_INT32 = (-(2**31), 2**31 - 1)


class UnknownKeyword(AssertionError):
    """A schema uses a keyword (or a format) the checker does not know."""


class ContractDocument:
    """One published OpenAPI document (JSON or YAML)."""

    def __init__(self, path: Path, *, union_one_of: bool = False) -> None:
        """``union_one_of``: read ``oneOf`` as ``anyOf``, for a document generated from
        union types whose branches overlap (Elasticsearch's ``FieldValue`` lists
        ``number`` twice and ``string`` twice, so every string would match two)."""
        self.path = path
        self.union_one_of = union_one_of
        text = path.read_text(encoding="utf-8")
        if path.suffix in (".yaml", ".yml"):
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            self.document: dict[str, Any] = yaml.load(text, Loader=loader)
        else:
            self.document = json.loads(text)

    # -- finding schemas -------------------------------------------------------------
    def schema(self, name: str) -> dict[str, Any]:
        """``#/components/schemas/<name>``."""
        return self.document["components"]["schemas"][name]

    def request_schema(
        self, path: str, method: str = "post", media: str = "application/json"
    ) -> dict[str, Any]:
        """The request body schema of an operation."""
        content = self.document["paths"][path][method]["requestBody"]["content"]
        return content[media]["schema"]

    def request_media_types(self, path: str, method: str = "post") -> list[str]:
        """The media types an operation's request body is declared with."""
        return list(self.document["paths"][path][method]["requestBody"]["content"])

    def response_schema(
        self, path: str, method: str = "post", status: str = "200",
        media: str = "application/json",
    ) -> dict[str, Any]:
        """The answer schema of an operation."""
        content = self.document["paths"][path][method]["responses"][status]["content"]
        return content[media]["schema"]

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Follow ``$ref`` (local references only) to the schema it names."""
        seen = 0
        while "$ref" in schema:
            ref = schema["$ref"]
            if not ref.startswith("#/"):
                raise UnknownKeyword(f"non-local $ref {ref}")
            node: Any = self.document
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            schema = node
            seen += 1
            if seen > 50:
                raise AssertionError(f"$ref loop at {ref}")
        return schema

    # -- keywords ---------------------------------------------------------------------
    def audit(self, schema: dict[str, Any], _seen: set[int] | None = None) -> None:
        """Raise :class:`UnknownKeyword` for any keyword or format the checker does not
        know, anywhere in ``schema`` and the schemas it references."""
        seen = _seen if _seen is not None else set()
        if id(schema) in seen:
            return
        seen.add(id(schema))
        for key in schema:
            if key not in KEYWORDS and key not in ANNOTATIONS and not key.startswith("x-"):
                raise UnknownKeyword(f"{self.path.name}: unknown schema keyword {key!r}")
        if set(schema.get("discriminator", {})) - {"propertyName", "mapping"}:
            raise UnknownKeyword(f"{self.path.name}: unknown discriminator field")
        if "format" in schema and schema["format"] not in FORMATS:
            raise UnknownKeyword(f"{self.path.name}: unknown format {schema['format']!r}")
        if "$ref" in schema:
            self.audit(self.resolve(schema), seen)
        for sub in schema.get("properties", {}).values():
            self.audit(sub, seen)
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                self.audit(schema[key], seen)
        for key in ("oneOf", "anyOf", "allOf"):
            for sub in schema.get(key, []):
                self.audit(sub, seen)

    # -- validation ---------------------------------------------------------------------
    def validate(self, instance: Any, schema: dict[str, Any]) -> None:
        """Raise AssertionError listing every way ``instance`` breaks ``schema``."""
        self.audit(schema)
        problems = self.errors(instance, schema)
        if problems:
            raise AssertionError(f"{self.path.name}: " + "; ".join(problems))

    def errors(self, value: Any, schema: dict[str, Any], at: str = "$",
               siblings: frozenset[str] | None = frozenset()) -> list[str]:
        """Every way ``value`` breaks ``schema`` (empty when it is valid). ``siblings``:
        fields other ``allOf`` branches declare (``None``: one of them is free-form)."""
        if value is None and schema.get("nullable") is True:
            return []
        out: list[str] = []
        if "$ref" in schema:
            out += self.errors(value, self.resolve(schema), at, siblings)
        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_is_type(value, t, schema.get("format")) for t in types):
                return [*out, f"{at}: expected {'/'.join(types)}, got {type(value).__name__}"]
        if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
            out.append(f"{at}: {value!r:.60} not in enum")
        if "const" in schema and not _same(value, schema["const"]):
            out.append(f"{at}: not the constant {schema['const']!r}")
        if isinstance(value, str):
            out += _string_errors(value, schema, at)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out += _number_errors(value, schema, at)
        if isinstance(value, list):
            out += self._array_errors(value, schema, at)
        if isinstance(value, dict) and _describes_object(schema):
            out += self._object_errors(value, schema, at, siblings)
        discriminator = schema.get("discriminator", {}).get("propertyName")
        if discriminator and isinstance(value, dict) and discriminator not in value:
            out.append(f"{at}: missing discriminator {discriminator!r}")
        if "allOf" in schema:
            names = self._declared(schema["allOf"])
            # A branch nested in another allOf also accepts the outer branches' fields.
            combined = None if names is None or siblings is None else names | siblings
            for sub in schema["allOf"]:
                out += self.errors(value, sub, at, combined)
        for key in ("anyOf", "oneOf"):
            if key not in schema:
                continue
            results = [self.errors(value, s, at) for s in schema[key]]
            matches = sum(1 for r in results if not r)
            if matches == 0:
                closest = min(results, key=len)
                out.append(f"{at}: matches none of {key} (closest: {'; '.join(closest[:3])})")
            elif key == "oneOf" and matches > 1 and not self.union_one_of:
                out.append(f"{at}: matches {matches} of oneOf, not exactly one")
        return out

    def _array_errors(self, value: list[Any], schema: dict[str, Any], at: str) -> list[str]:
        out: list[str] = []
        if len(value) < schema.get("minItems", 0):
            out.append(f"{at}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(f"{at}: more than {schema['maxItems']} items")
        if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(
            value
        ):
            out.append(f"{at}: items are not unique")
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                out += self.errors(item, schema["items"], f"{at}[{i}]")
        return out

    def _declared(self, branches: list[dict[str, Any]]) -> frozenset[str] | None:
        """The fields the ``allOf`` ``branches`` declare; ``None`` when one is open."""
        names: set[str] = set()
        for branch in branches:
            branch = self.resolve(branch)
            if "allOf" in branch:
                more = self._declared(branch["allOf"])
                if more is None:
                    return None
                names |= more
            elif branch.get("additionalProperties", False) is not False or (
                    branch.get("type") == "object" and "properties" not in branch):
                return None
            names |= set(branch.get("properties", {}))
        return frozenset(names)

    def _object_errors(self, value: dict[str, Any], schema: dict[str, Any], at: str,
                       siblings: frozenset[str] | None = frozenset()) -> list[str]:
        out = [f"{at}: missing required {name!r}" for name in schema.get("required", [])
               if name not in value]
        if len(value) < schema.get("minProperties", 0):
            out.append(f"{at}: fewer than {schema['minProperties']} properties")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            out.append(f"{at}: more than {schema['maxProperties']} properties")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", False)  # closed unless it says otherwise
        for name, item in value.items():
            if name in properties:
                out += self.errors(item, properties[name], f"{at}.{name}")
            elif siblings is None or name in siblings:
                continue
            elif extra is False:
                out.append(f"{at}: field {name!r} is not declared")
            elif isinstance(extra, dict):
                out += self.errors(item, extra, f"{at}.{name}")
        return out

    # -- answers reduced to what the server promises ------------------------------------
    def reduce(self, value: Any, schema: dict[str, Any]) -> Any:
        """``value`` with every property that is not required removed, recursively."""
        schema = self.resolve(schema)
        for key in ("oneOf", "anyOf"):
            if key in schema:
                branch = next(s for s in schema[key] if not self.errors(value, s))
                return self.reduce(value, branch)
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [self.reduce(item, schema["items"]) for item in value]
        if isinstance(value, dict):
            required, properties = self._object_view(schema)
            return {k: self.reduce(v, properties.get(k, {})) for k, v in value.items()
                    if k in required}
        return value

    def _object_view(self, schema: dict[str, Any]) -> tuple[set[str], dict[str, Any]]:
        schema = self.resolve(schema)
        required = set(schema.get("required", []))
        properties = dict(schema.get("properties", {}))
        for sub in schema.get("allOf", []):
            more_required, more_properties = self._object_view(sub)
            required |= more_required
            properties.update(more_properties)
        return required, properties

    def requires(self, schema: dict[str, Any], path: str) -> bool:
        """Whether every answer valid for ``schema`` has ``path`` (``data[].embedding``:
        property ``data``, each of its items, their property ``embedding``)."""
        parts = [p for p in path.replace("[]", ".[]").split(".") if p]
        return self._requires(schema, parts)

    def _requires(self, schema: dict[str, Any], parts: list[str]) -> bool:
        schema = self.resolve(schema)
        if not parts:
            return True
        for key in ("oneOf", "anyOf"):
            if key in schema:
                kind = "array" if parts[0] == "[]" else "object"
                branches = [s for s in schema[key] if _kind(self.resolve(s)) == kind]
                return bool(branches) and all(self._requires(s, parts) for s in branches)
        if parts[0] == "[]":
            items = schema.get("items")
            return isinstance(items, dict) and self._requires(items, parts[1:])
        required, properties = self._object_view(schema)
        name = parts[0]
        return name in required and name in properties and self._requires(
            properties[name], parts[1:]
        )


def _describes_object(schema: dict[str, Any]) -> bool:
    # An object schema is closed unless it says otherwise; one whose fields are declared by
    # its oneOf/anyOf/allOf branches leaves them to decide, and one that declares no field
    # at all is free-form.
    return "properties" in schema or "additionalProperties" in schema


def _kind(schema: dict[str, Any]) -> str | None:
    if schema.get("type") == "array" or "items" in schema:
        return "array"
    if schema.get("type") == "object" or "properties" in schema:
        return "object"
    return None


def _is_type(value: Any, name: str, fmt: str | None) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str) or (fmt == "binary" and isinstance(value, bytes))
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise UnknownKeyword(f"unknown type {name!r}")


def _same(value: Any, expected: Any) -> bool:
    # 1 == True in Python; in JSON they differ.
    return (type(value) is type(expected) and value == expected) or (
        isinstance(value, int | float) and isinstance(expected, int | float)
        and not isinstance(value, bool) and not isinstance(expected, bool) and value == expected
    )


def _string_errors(value: str, schema: dict[str, Any], at: str) -> list[str]:
    out: list[str] = []
    if len(value) < schema.get("minLength", 0):
        out.append(f"{at}: shorter than {schema['minLength']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.append(f"{at}: longer than {schema['maxLength']}")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        out.append(f"{at}: does not match the pattern")
    if schema.get("format") == "uri" and not _URI.match(value):
        out.append(f"{at}: not a URI")
    return out


def _number_errors(value: float, schema: dict[str, Any], at: str) -> list[str]:
    out: list[str] = []
    low, high = schema.get("minimum"), schema.get("maximum")
    exclusive_low, exclusive_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    # OpenAPI 3.0: boolean modifiers of minimum/maximum; 3.1: numbers of their own.
    if low is not None and (value < low or (exclusive_low is True and value == low)):
        out.append(f"{at}: below the minimum {low}")
    if high is not None and (value > high or (exclusive_high is True and value == high)):
        out.append(f"{at}: above the maximum {high}")
    if not isinstance(exclusive_low, bool) and exclusive_low is not None and value <= exclusive_low:
        out.append(f"{at}: not above {exclusive_low}")
    if (not isinstance(exclusive_high, bool) and exclusive_high is not None
            and value >= exclusive_high):
        out.append(f"{at}: not below {exclusive_high}")
    if schema.get("format") == "int32" and not _INT32[0] <= value <= _INT32[1]:
        out.append(f"{at}: outside int32")
    return out
