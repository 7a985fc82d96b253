"""People and bearer tokens for API tests: a person is created in the test database and
their token returned as request headers."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from ragplate.catalog.people import DEVELOPER_PERMISSION, OPERATOR_PERMISSION
from ragplate.tasks.people.accounts import create_person, issue_token

#: What a test client that is not about access control signs in as.
OPERATOR = (DEVELOPER_PERMISSION, OPERATOR_PERMISSION)


def bearer(engine: sa.Engine, *, permissions: tuple[str, ...] = OPERATOR,
           tenant: str | None = None, locale: str = "en", is_guest: bool = False,
           name: str | None = None) -> dict[str, str]:
    """Headers of a new person's token (a unique name unless one is given)."""
    name = name or f"person-{uuid.uuid4().hex[:12]}"
    create_person(engine, name=name, permissions=list(permissions), tenant=tenant,
                  locale=locale, is_guest=is_guest)
    return {"Authorization": f"Bearer {issue_token(engine, name=name)}"}
