"""``analytics-report``: the corpus-gap report over the query records of a window — the
HTML page written to ``output`` (default: ``<home>/reports/analytics/``) and the figures
as Prefect artifacts (a Markdown summary and a table of topics, never a question: the
Prefect server keeps artifacts past the retention window and erasure)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.worker_watch import watch_worker
from ragplate.tasks.analytics import report as gap
from ragplate.tasks.analytics.report_page import markdown_summary, render_page
from ragplate.tasks.flow_runs import crash_gone
from ragplate.tasks.retries import io_task

# The report's thin task wrappers live here, not in tasks/analytics/report.py, so that
# `ragplate analytics report` (which runs the plain functions) never imports Prefect;
# tasks/analytics/steps.py is their natural home once it can take them.


@io_task("read-query-records")
def read_records(runtime: Runtime, since: datetime, now: datetime) -> list[dict[str, Any]]:
    """The records of the window (:func:`ragplate.tasks.analytics.report.read_window`)."""
    return gap.read_window(runtime.query_log, since, now)


@io_task("group-unanswered-questions")
def group_topics(runtime: Runtime, records: list[dict[str, Any]]
                 ) -> tuple[list[dict[str, Any]], int]:
    """The topics and their nearest sources (the embedder and the store may be remote)."""
    return gap.runtime_topics(runtime, records)


@io_task("write-corpus-gap-page")
def write_page(output: str, html: str) -> Path:
    """Write the page atomically."""
    return gap.write_page(output, html)


# The report holds the questions people typed: no result of this flow is persisted (a
# stored result would outlive the retention window and an erasure).
@flow(name="analytics-report", log_prints=True, persist_result=False)
def analytics_report(since: str = "7d", output: str | None = None) -> dict[str, Any]:
    """Report on the records logged from ``since`` (a date or time, or a span back from
    now: ``7d``, ``24h``) and write the page to ``output``; the report's data."""
    watch_worker()  # this run ends with the worker that started it
    crash_gone()
    now = datetime.now(UTC)
    start = gap.window_start(since, now)
    runtime = Runtime(get_settings())
    page = gap.check_page_output(output) if output else gap.default_output(
        runtime.settings, now)
    records = read_records(runtime, start, now)
    topics, left_out = group_topics(runtime, records)
    data = gap.build_report(records, since=start, now=now, topics=topics,
                            left_out=left_out, settings=runtime.settings)
    written = write_page(str(page), render_page(data))
    description = f"Corpus-gap report from {data['window']['since']}"
    create_markdown_artifact(markdown_summary(data, page=str(written)),
                             key="analytics-report", description=description)
    create_table_artifact(gap.artifact_rows(data), key="analytics-report-topics",
                          description=description)
    totals = data["totals"]
    print(f"{totals['records']} question(s), {totals['unanswered']} unanswered "
          f"(abstention rate {totals['abstention_rate']}), {len(topics)} topic(s); "
          f"page {written}")
    return data
