"""The embedding-model switch's state row (``embedding_switch``, one row, id 1): read it,
write it, and the targets a stored switch names (what record writes embed with too).

Writers hold the state advisory lock (:func:`ragplate.infra.locks.state_transaction`);
the state's rules are :mod:`ragplate.tasks.switch.state`'s.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.schema import embedding_switch
from ragplate.catalog.switch import SwitchState

#: The table of the state; records writes read it by name (see :func:`stored_targets`).
TABLE = embedding_switch.name
_ROW = 1


def _from_row(row: Any) -> SwitchState:
    if row is None:
        return SwitchState()
    data = dict(row.data or {})
    # The columns win: they are what other readers see.
    data.update(status=row.status, phase=row.phase, target=row.target, previous=row.previous)
    return SwitchState.model_validate(data)


def read_state(conn_or_engine: Connection | Engine, *, for_update: bool = False) -> SwitchState:
    """The stored state (idle when the row is missing)."""
    query = sa.select(embedding_switch).where(embedding_switch.c.id == _ROW)
    if for_update:
        query = query.with_for_update()
    if isinstance(conn_or_engine, Engine):
        with conn_or_engine.connect() as conn:
            return _from_row(conn.execute(query).first())
    return _from_row(conn_or_engine.execute(query).first())


def write_state(conn: Connection, state: SwitchState) -> None:
    """Store ``state`` in the caller's transaction (which holds the state lock)."""
    data = state.model_dump(mode="json")
    values = {"status": state.status, "phase": state.phase, "target": state.target,
              "previous": state.previous, "data": data, "updated_at": sa.func.now()}
    updated = conn.execute(
        embedding_switch.update().where(embedding_switch.c.id == _ROW).values(**values)
    )
    if updated.rowcount == 0:
        conn.execute(embedding_switch.insert().values(id=_ROW, **values))


def stored_targets(conn: Connection) -> list[str]:
    """The target of a switch stored ``running`` or ``failed`` (a list: at most one);
    none without the table (no switch ever ran) or without such a row."""
    if not conn.execute(sa.text("SELECT to_regclass(:t) IS NOT NULL"),
                        {"t": TABLE}).scalar_one():
        return []
    return [str(key) for key in conn.execute(sa.text(
        f"SELECT DISTINCT target FROM {TABLE} WHERE status IN ('running', 'failed') "
        "AND target IS NOT NULL ORDER BY target"
    )).scalars()]
