"""Reports for people: an HTML page (tables and inline SVG charts), a Markdown summary and
table rows for Prefect artifacts.

Works on any metric report shaped like the evaluation reports: a ``metrics`` block of
floats, an optional ``latency_ms`` block, ``slices`` (``{"locale": {...}, "category":
{...}}``) and scalar or small-object context keys. The page is self-contained (no script,
no stylesheet or font from the network) and deterministic: the same report gives the same
bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

_BLOCKS = ("metrics", "latency_ms", "slices")
_CSS = """body{font-family:system-ui,sans-serif;margin:2rem;color:#1a1a1a;max-width:70rem}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem}th,td{border:1px solid #ccc;
padding:0.25rem 0.6rem;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f2f2f2}h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}
.ctx td{text-align:left}svg text{font-size:12px;font-family:system-ui,sans-serif}"""


def json_text(value: Any) -> str:
    """A plain value as the JSON report writes it (``null``, ``true``), not as Python
    would (``None``, ``True``): the page shows the report's own words."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def number_cell(value: Any) -> str:
    """A table cell: numbers as their ``repr`` (every digit kept), the rest as text."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return escape(json_text(value))
    return escape(repr(value))


def context_rows(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, value)`` of every context entry (everything but the metric blocks); nested
    objects are flattened as ``parent.child``, lists of plain values joined by commas."""
    rows: list[tuple[str, str]] = []
    for key, value in report.items():
        if key in _BLOCKS:
            continue
        if isinstance(value, Mapping):
            for name, inner in value.items():
                if isinstance(inner, list) and all(_plain(v) for v in inner):
                    rows.append((f"{key}.{name}", ", ".join(json_text(v) for v in inner)))
                elif not isinstance(inner, Mapping | list):
                    rows.append((f"{key}.{name}", json_text(inner)))
        elif not isinstance(value, list):
            rows.append((key, json_text(value)))
    return rows


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def table_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per scope (overall, then each locale, then each category) with every metric:
    the rows of the Prefect table artifact."""
    metrics = report.get("metrics") or {}
    rows: list[dict[str, Any]] = [{"scope": "overall", "slice": "all", **metrics}]
    for group, slices in (report.get("slices") or {}).items():
        for name, values in slices.items():
            rows.append({"scope": group, "slice": name, **values})
    return rows


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], css: str = "",
               cell: Callable[[Any], str] = number_cell) -> str:
    """A plain HTML table, each value written by ``cell``."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    klass = f' class="{css}"' if css else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def svg_bar_chart(series: Sequence[tuple[str, float]], *, title: str,
                  maximum: float = 1.0) -> str:
    """A horizontal bar chart as inline SVG: one bar per ``(label, value)``, scaled to
    ``maximum`` (values above it are drawn full length)."""
    label_w, bar_w, row_h = 190, 360, 22
    height = 28 + row_h * len(series)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{label_w + bar_w + 70}"'
             f' height="{height}" viewBox="0 0 {label_w + bar_w + 70} {height}">',
             f"<title>{escape(title)}</title>",
             f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>']
    for i, (label, value) in enumerate(series):
        y = 26 + i * row_h
        share = 0.0 if maximum <= 0 else max(0.0, min(1.0, value / maximum))
        width = round(bar_w * share, 1)
        parts += [f'<text x="0" y="{y + 14}">{escape(label)}</text>',
                  f'<rect x="{label_w}" y="{y + 2}" width="{bar_w}" height="{row_h - 6}"'
                  ' fill="#eee"/>',
                  f'<rect x="{label_w}" y="{y + 2}" width="{width}" height="{row_h - 6}"'
                  ' fill="#3b6fb6"/>',
                  f'<text x="{label_w + bar_w + 6}" y="{y + 14}">{number_cell(value)}</text>']
    parts.append("</svg>")
    return "".join(parts)


class NotMeasured:
    """A metric over no case: its cell reads ``n/a`` and its chart leaves it out (the
    report's own figure, 0.0, would read as a measured failure)."""

    def __repr__(self) -> str:
        return "n/a"

    __str__ = __repr__


NOT_MEASURED = NotMeasured()


def shown(values: Mapping[str, Any], counts: Mapping[str, int] | None) -> dict[str, Any]:
    """``values`` with each metric ``counts`` says no case measures replaced by
    :data:`NOT_MEASURED` (all kept when ``counts`` is ``None``, unknown)."""
    if counts is None:
        return dict(values)
    return {key: NOT_MEASURED if counts.get(key) == 0 else value
            for key, value in values.items()}


def _cell(value: Any) -> str:
    return "n/a" if value is NOT_MEASURED else number_cell(value)


def _chart(series: Sequence[tuple[str, Any]], *, title: str) -> str:
    return svg_bar_chart([(k, float(v)) for k, v in series if v is not NOT_MEASURED],
                         title=title)


def _slice_section(name: str, slices: Mapping[str, Mapping[str, Any]]) -> str:
    if not slices:
        return ""
    keys = list(next(iter(slices.values())))
    rows = [[slice_name, *(values.get(k, "") for k in keys)]
            for slice_name, values in slices.items()]
    charts = "".join(
        _chart([(s, v.get(metric, 0.0)) for s, v in slices.items()],
               title=f"{metric} per {name}")
        for metric in keys[:2])
    return (f"<h2>Per {escape(name)}</h2>" + html_table([name, *keys], rows, cell=_cell)
            + charts)


def render_html(report: Mapping[str, Any], *, title: str, sections: Sequence[str] = (),
                measured: Mapping[str, Any] | None = None) -> str:
    """The report as a self-contained HTML page: context, overall metrics with a chart,
    ``sections`` (ready HTML, e.g. the failing cases), latency, and per-locale and
    per-category tables with charts of the first two metrics. ``measured`` (the cases
    each metric is measured over, overall and per slice, as
    :func:`ragplate.tasks.evaluation.scoring.measured_by_scope` gives them) makes a metric
    over no case read ``n/a``."""
    counts = measured or {}
    metrics = shown(report.get("metrics") or {}, counts.get("metrics"))
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             "<h2>Context</h2>", html_table(["key", "value"], context_rows(report), "ctx"),
             "<h2>Overall</h2>",
             html_table(["metric", "value"], list(metrics.items()), cell=_cell),
             _chart(list(metrics.items()), title="overall"),
             *sections]
    latency = report.get("latency_ms")
    if isinstance(latency, Mapping):
        parts += ["<h2>Latency (ms)</h2>", html_table(list(latency), [list(latency.values())])]
    slice_counts = counts.get("slices") or {}
    for name, slices in (report.get("slices") or {}).items():
        group = slice_counts.get(name) or {}
        parts.append(_slice_section(str(name), {
            slice_name: shown(values, group.get(slice_name) if measured else None)
            for slice_name, values in slices.items()}))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def markdown_summary(report: Mapping[str, Any], *, title: str, page: str | None = None) -> str:
    """The figures as Markdown (context, overall, latency, slices), for a flow artifact."""
    lines = [f"# {title}", ""]
    lines += ["| key | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in context_rows(report)]
    rows = table_rows(report)
    if rows:
        keys = [k for k in rows[0] if k not in ("scope", "slice")]
        lines += ["", "| scope | slice | " + " | ".join(keys) + " |",
                  "|---|---|" + "---|" * len(keys)]
        lines += [f"| {r['scope']} | {r['slice']} | "
                  + " | ".join(str(r.get(k, "")) for k in keys) + " |" for r in rows]
    latency = report.get("latency_ms")
    if isinstance(latency, Mapping):
        lines += ["", "| latency (ms) | " + " | ".join(latency) + " |",
                  "|---|" + "---|" * len(latency),
                  "| | " + " | ".join(str(v) for v in latency.values()) + " |"]
    if page:
        lines += ["", f"HTML report: `{page}`"]
    return "\n".join(lines) + "\n"
