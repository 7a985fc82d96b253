"""The Prefect tasks of the analytics flows: thin wrappers over the plain functions, the
I/O steps retried."""

from __future__ import annotations

from ragplate.infra.runtime import Runtime
from ragplate.tasks.analytics import retention
from ragplate.tasks.retries import io_task


@io_task("prune-query-records")
def prune_records(runtime: Runtime) -> int:
    """Delete the records older than the retention window; how many."""
    return retention.prune(runtime.query_log,
                           retention_days=runtime.settings.query_logging_retention_days)
