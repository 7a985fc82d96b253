"""Fixtures of the infra tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa


@pytest.fixture
def conn(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A connection whose transaction is rolled back at the end: nothing is left behind."""
    with engine.connect() as connection:
        transaction = connection.begin()
        try:
            yield connection
        finally:
            transaction.rollback()
