"""The payloads of writes: exactly the fields an entity declares, each text of bounded
length, a choice among its values where it has them. A problem is an
:class:`InvalidInputError` naming the field."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from ragplate.catalog.crud import CrudEntity
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.people import LOCALE_PATTERN
from ragplate.catalog.text import text_problem


def _value(entity: CrudEntity, name: str, value: object) -> str:
    spec = entity.field(name)
    if not isinstance(value, str):
        raise InvalidInputError(f"{name}: must be text")
    problem = text_problem(value, blank_ok=spec.blank_ok)
    if problem is not None:
        raise InvalidInputError(f"{name}: {problem}")
    if len(value) > spec.max_chars:
        raise InvalidInputError(f"{name}: at most {spec.max_chars} characters")
    if spec.choices and value not in spec.choices:
        raise InvalidInputError(f"{name}: {value[:40]!r} is not one of "
                                f"{', '.join(spec.choices)}")
    if name == "locale" and not LOCALE_PATTERN.fullmatch(value):
        raise InvalidInputError(f"locale: {value[:40]!r} is not a language tag such as en "
                                "or it-IT")
    return value


def validate(entity: CrudEntity, operation: Literal["create", "update"],
             payload: object) -> dict[str, str]:
    """The checked fields of a create or update payload of ``entity``."""
    if not isinstance(payload, Mapping):
        raise InvalidInputError("payload: must be an object of fields")
    declared = [f.name for f in entity.fields]
    for name in payload:
        if name not in declared:
            shown = name[:40] if isinstance(name, str) else repr(name)
            raise InvalidInputError(f"{shown}: not a field of {entity.name} (fields: "
                                    f"{', '.join(declared)})")
    values = {name: _value(entity, name, value) for name, value in payload.items()}
    if operation == "create":
        for name in entity.create_required:
            if name not in values:
                raise InvalidInputError(f"{name}: required to create a {entity.name} record")
        return values
    if not set(values) - set(entity.selectors):
        raise InvalidInputError(f"payload: an update of {entity.name} changes at least one "
                                f"of {', '.join(n for n in declared if n not in entity.selectors)}")
    if "locale" in entity.selectors:
        texts = {"title", "body"} & set(values)
        if texts and "locale" not in values:
            raise InvalidInputError(f"locale: required to change {', '.join(sorted(texts))} "
                                    "(the translation it belongs to)")
        if "locale" in values and not texts:
            raise InvalidInputError("locale: names the translation of title or body; send "
                                    "one of them")
    return values


def payload_sha256(payload: Mapping[str, Any]) -> str:
    """SHA-256 of the payload's canonical JSON (sorted keys, no spaces): the same payload
    has the same hash wherever it is computed."""
    canonical = json.dumps(dict(payload), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
