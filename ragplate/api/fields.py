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


def _usable(*, blank_ok: bool) -> AfterValidator:
    def check(value: str) -> str:
        problem = text_problem(value, blank_ok=blank_ok)
        if problem:
            raise ValueError(problem)
        return value

    return AfterValidator(check)


#: A query: not blank, no NUL character.
SearchText = Annotated[str, _usable(blank_ok=False)]
#: A tenant id: no NUL character.
TenantText = Annotated[str, _usable(blank_ok=True)]


class StrictRequest(BaseModel):
    """Base of request bodies: unknown fields and coerced types are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)
