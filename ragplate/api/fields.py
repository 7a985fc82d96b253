"""Request field types shared by the routers.

Requests are strict: an unknown field is refused (a client sending ``index`` or
``tenant`` where the route has none must learn it is ignored, not be answered as if it
were honoured), numbers must be JSON numbers, and search text must be usable text (see
:mod:`ragplate.catalog.text`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
)

from ragplate.catalog.people import TENANT_PATTERN
from ragplate.catalog.text import text_problem


def _usable(*, blank_ok: bool) -> AfterValidator:
    def check(value: str) -> str:
        problem = text_problem(value, blank_ok=blank_ok)
        if problem:
            raise ValueError(problem)
        return value

    return AfterValidator(check)


#: The validators' rules as JSON Schema patterns, so that the OpenAPI document says what a
#: request may hold (the validators keep their own, clearer messages).
_NO_NUL = "^[^\\x00]*$"
_NOT_BLANK = "^[^\\x00]*[^\\x00\\s][^\\x00]*$"

#: A query, an entity name, a locale: not blank, no NUL character, valid Unicode.
SearchText = Annotated[str, _usable(blank_ok=False),
                       Field(json_schema_extra={"pattern": _NOT_BLANK})]
# The bound sits inside the type: on an optional field (``SearchText | None =
# Field(max_length=…)``) pydantic checks it after validation and calls the characters "items".
#: SearchText of at most 200 characters: a title, a page's resource or record key.
LabelText = Annotated[str, StringConstraints(max_length=200), _usable(blank_ok=False),
                      Field(json_schema_extra={"pattern": _NOT_BLANK})]
#: SearchText of at most 100 characters: a module's name.
NameText = Annotated[str, StringConstraints(max_length=100), _usable(blank_ok=False),
                     Field(json_schema_extra={"pattern": _NOT_BLANK})]
#: A tenant id: no NUL character, valid Unicode (blank is the global tenant).
#: A tenant id as ``users create`` accepts it (:data:`~ragplate.catalog.people.TENANT_PATTERN`),
#: or blank (the person's own): a tenant no person can belong to is refused, not searched.
TenantText = Annotated[str, Field(pattern=f"^(?:{TENANT_PATTERN.pattern.strip('^$')})?$")]


def _integral(value: object) -> object:
    # JSON Schema's integer is a number without a fraction: 10.0 is one; "10" is not.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: A whole number, written as a JSON number (``10`` or ``10.0``, never ``"10"``).
WholeNumber = Annotated[int, BeforeValidator(_integral)]


class StrictRequest(BaseModel):
    """Base of request bodies: unknown fields and coerced types are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)
