"""``analytics-prune``: delete the query records older than
``RAGPLATE_QUERY_LOGGING_RETENTION_DAYS`` (the ``daily-analytics-prune`` deployment); it
works with logging switched off, and does nothing when the store does not exist."""

from __future__ import annotations

from prefect import flow

from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.worker_watch import watch_worker
from ragplate.tasks.analytics import steps
from ragplate.tasks.flow_runs import crash_gone


@flow(name="analytics-prune", log_prints=True)
def analytics_prune() -> dict[str, int]:
    """Prune the query analytics store: ``{"deleted": N}``."""
    watch_worker()  # this run ends with the worker that started it
    crash_gone()
    runtime = Runtime(get_settings())
    deleted = steps.prune_records(runtime)
    # The run's own log line (log_prints): what the nightly run did, seen in the UI.
    print(f"Deleted {deleted} query record(s) older than "
          f"{runtime.settings.query_logging_retention_days} day(s)")
    return {"deleted": deleted}
