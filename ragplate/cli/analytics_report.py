"""``ragplate analytics report``: the corpus-gap report of the query records (what the
documentation did not answer), printed, as JSON, or as an HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragplate.cli.output import console, print_json

#: Topics the terminal summary lists (the page and --json have every one).
TOPICS_SHOWN = 10


def report_command(
    since: Annotated[str, typer.Option(
        help="Records from then on: a span back from now (30m, 24h, 7d) or a date or time "
        "(2026-12-01, 2026-12-01T08:00Z).")] = "7d",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the report as a self-contained HTML page (charts "
        "included) to this file; an existing one is replaced.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report's data as "
                                              "JSON.")] = False,
) -> None:
    """The corpus-gap report: abstention rate, unanswered questions grouped into topics
    (raw text mode) with the nearest documentation source of each, unanswered questions
    per module, locale mix and retrieval latency percentiles. The page and the JSON hold
    the questions as typed: keep them no longer than the records.

    Examples:

        ragplate analytics report --since 7d --output reports/corpus-gap.html

        ragplate analytics report --since 2026-12-01 --json
    """
    from datetime import UTC, datetime

    from ragplate.tasks.analytics import report as gap

    now = datetime.now(UTC)
    start = gap.window_start(since, now)  # refused before any service starts

    if output is not None:
        gap.check_page_output(output)
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime

    data = gap.make_report(Runtime(get_settings()), since=start, now=now)
    if output is not None:
        from ragplate.tasks.analytics.report_page import render_page

        gap.write_page(output, render_page(data))
    if json_output:
        print_json(data)
        return
    _print(data, output)


def _print(data: dict[str, Any], output: Path | None) -> None:
    totals = data["totals"]
    window = data["window"]
    console.print(f"Corpus-gap report, {window['since']} to {window['until']}",
                  highlight=False)
    if not data["logging"]["enabled"]:
        # Read from this command's environment: the API that records questions has its own.
        console.print("query logging is off in this command's environment "
                      "(RAGPLATE_QUERY_LOGGING_ENABLED): a server started without it records "
                      "no new question", highlight=False)
    if totals["records"] == 0:
        console.print("nothing to report: no question was logged in the window",
                      highlight=False)
    else:
        latency = data["latency_ms"]
        console.print(
            f"{totals['records']} question(s), {totals['answered']} answered, "
            f"{totals['unanswered']} unanswered: abstention rate "
            f"{totals['abstention_rate'] * 100:.1f} %; retrieval p50 {latency['p50']:g} ms, "
            f"p90 {latency['p90']:g}, p99 {latency['p99']:g}, max {latency['max']:g}; "
            "locales " + ", ".join(f"{loc['locale']} {loc['records']}"
                                   for loc in data["locales"]), highlight=False)
        _topics(data)
    if output is not None:
        console.print(f"Page: {output}", highlight=False)


def _topics(data: dict[str, Any]) -> None:
    topics = data["topics"]
    if not topics:
        console.print("no topics (no unanswered question holds its text)", highlight=False)
        return
    table = Table(title=f"{len(topics)} unanswered topic(s)"
                  + (f", the first {TOPICS_SHOWN}" if len(topics) > TOPICS_SHOWN else ""))
    for column in ("#", "n", "representative question", "nearest source", "similarity"):
        table.add_column(column, justify="right" if column in ("#", "n", "similarity")
                         else "left")
    for topic in topics[:TOPICS_SHOWN]:
        source = topic["nearest_source"]
        table.add_row(str(topic["rank"]), str(topic["count"]),
                      escape(topic["representative"]),
                      escape(source["label"]) if source else "none",
                      f"{source['similarity']:.3f}" if source else "")
    console.print(table)
    console.print("per module: " + ", ".join(f"{m['module']} {m['unanswered']}"
                                             for m in data["modules"]), highlight=False)
