"""Request field types shared by the routers.

Requests are strict: an unknown field is refused (a client sending ``index`` or
``tenant`` where the route has none must learn it is ignored, not be answered as if it
were honoured), numbers must be JSON numbers, and search text must be usable text (see
:mod:`ragplate.catalog.text`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from ragplate.catalog.text import text_problem


def _search_text(value: str) -> str:
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _tenant_text(value: str) -> str:
    problem = text_problem(value, blank_ok=True)
    if problem:
        raise ValueError(problem)
    return value


#: A query: not blank, no NUL character.
SearchText = Annotated[str, AfterValidator(_search_text)]
#: A tenant id: no NUL character.
TenantText = Annotated[str, AfterValidator(_tenant_text)]


class StrictRequest(BaseModel):
    """Base of request bodies: unknown fields and coerced types are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)
