"""Pages for people of the ranking reports (strategies here, tuning in
:mod:`ragplate.tasks.tuning.pages`): self-contained HTML (tables and inline SVG charts, no
script, nothing from the network) and Prefect table rows. Deterministic: the same report
gives the same bytes.

The application-content report has the shape of the documentation reports and is rendered
by :func:`ragplate.tasks.evaluation.pages.render_html`; this module reuses its context table
and bar chart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ragplate.tasks.evaluation.pages import context_rows, number_cell, svg_bar_chart
from ragplate.tasks.evaluation.pages import html_table as report_html_table

_COLORS = ("#3b6fb6", "#e08a2e", "#4f9d5d", "#9b59b6")
_CSS = """body{font-family:system-ui,sans-serif;margin:2rem;color:#1a1a1a;max-width:75rem}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem}th,td{border:1px solid #ccc;
padding:0.25rem 0.6rem;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f2f2f2}h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}
.ctx td{text-align:left}.warn{color:#a33;font-weight:bold}pre{background:#f6f6f6;padding:1rem}
svg text{font-size:12px;font-family:system-ui,sans-serif}"""


def dash_cell(value: Any) -> str:
    """A table cell, ``None`` shown as a dash."""
    return "—" if value is None else number_cell(value)


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], css: str = "") -> str:
    """A plain HTML table (``None`` shown as a dash)."""
    return report_html_table(header, rows, css, cell=dash_cell)


def svg_grouped_bars(groups: Sequence[tuple[str, Sequence[float | None]]],
                     series: Sequence[str], *, title: str) -> str:
    """Horizontal grouped bars as inline SVG: per group one bar per series (values in
    ``[0, 1]``; ``None`` draws no bar), with a legend."""
    label_w, bar_w, bar_h = 330, 380, 10
    group_h = bar_h * len(series) + 8
    height = 44 + group_h * len(groups)
    width = label_w + bar_w + 70
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}">',
             f"<title>{escape(title)}</title>",
             f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>']
    for i, name in enumerate(series):
        x = label_w + i * 130
        parts += [f'<rect x="{x}" y="22" width="10" height="10" '
                  f'fill="{_COLORS[i % len(_COLORS)]}"/>',
                  f'<text x="{x + 14}" y="31">{escape(name)}</text>']
    for g, (label, values) in enumerate(groups):
        y = 40 + g * group_h
        parts.append(f'<text x="0" y="{y + group_h / 2 + 2}">{escape(label)}</text>')
        for i, value in enumerate(values):
            if value is None:
                continue
            share = max(0.0, min(1.0, value))
            top = y + i * bar_h
            parts += [f'<rect x="{label_w}" y="{top}" width="{round(bar_w * share, 1)}" '
                      f'height="{bar_h - 2}" fill="{_COLORS[i % len(_COLORS)]}"/>',
                      f'<text x="{label_w + bar_w + 6}" y="{top + bar_h - 2}" '
                      f'font-size="10">{dash_cell(value)}</text>']
    parts.append("</svg>")
    return "".join(parts)


def page(title: str, body: Sequence[str]) -> str:
    """A whole HTML page: ``title`` as heading, then ``body``."""
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
                      f"<h1>{escape(title)}</h1>", *body, "</body></html>\n"])


def context_section(report: Mapping[str, Any], skip: Sequence[str]) -> str:
    """The context table of a report, without the keys of ``skip``."""
    rows = context_rows({k: v for k, v in report.items() if k not in skip})
    return "<h2>Context</h2>" + html_table(["key", "value"], rows, "ctx")


# -- strategies -------------------------------------------------------------------------

def strategy_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per ordering with the cases it ran on and its metrics (table artifact)."""
    return [{"strategy": name, "cases": report["strategy_cases"][name], **values}
            for name, values in report["metrics"].items()]


def strategies_html(report: Mapping[str, Any], *, title: str, warning: str | None) -> str:
    """The strategies report page: context, the reranker, metrics per ordering, charts."""
    rows = strategy_rows(report)
    keys = [k for k in rows[0] if k not in ("strategy", "cases")] if rows else []
    body = [context_section(report, ("metrics", "strategy_cases"))]
    if warning:
        body.append(f'<p class="warn">{escape(warning)}</p>')
    body += ["<h2>Metrics per strategy</h2>",
             html_table(["strategy", "cases", *keys],
                        [[r["strategy"], r["cases"], *(r[k] for k in keys)] for r in rows])]
    for metric in ("ndcg_at_5", "mean_reciprocal_rank", "hit_at_5"):
        body.append(svg_bar_chart([(r["strategy"], float(r[metric])) for r in rows],
                                  title=f"{metric} per strategy"))
    return page(title, body)
