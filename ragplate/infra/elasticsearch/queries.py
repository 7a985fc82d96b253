"""Query clauses in the published API's own form (the long forms: the OpenAPI document
declares ``{"term": {field: {"value": v}}}``, not the shorthand ``{field: v}``)."""

from __future__ import annotations

from typing import Any


def term(field: str, value: Any) -> dict[str, Any]:
    """``field`` holds exactly ``value``."""
    return {"term": {field: {"value": value}}}
