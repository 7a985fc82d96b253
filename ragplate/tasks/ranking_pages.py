"""Pages for people of the strategies and tuning reports: self-contained HTML (tables and
inline SVG charts, no script, nothing from the network), Prefect table rows, and the
ready-to-paste tuning block. Deterministic: the same report gives the same bytes.

The application-content report has the shape of part A's reports and is rendered by
:func:`ragplate.tasks.report_render.render_html`; this module reuses its context table and
bar chart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ragplate.catalog.search_tuning import REPORTS_DIR
from ragplate.tasks.report_render import context_rows, number_cell, svg_bar_chart
from ragplate.tasks.report_render import html_table as report_html_table

#: How many candidates the tuning page charts and lists (the JSON holds them all).
TOP_CANDIDATES = 20
_COLORS = ("#3b6fb6", "#e08a2e", "#4f9d5d", "#9b59b6")
_CSS = """body{font-family:system-ui,sans-serif;margin:2rem;color:#1a1a1a;max-width:75rem}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem}th,td{border:1px solid #ccc;
padding:0.25rem 0.6rem;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f2f2f2}h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}
.ctx td{text-align:left}.warn{color:#a33;font-weight:bold}pre{background:#f6f6f6;padding:1rem}
svg text{font-size:12px;font-family:system-ui,sans-serif}"""


def _cell(value: Any) -> str:
    return "—" if value is None else number_cell(value)


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], css: str = "") -> str:
    """A plain HTML table (``None`` shown as a dash)."""
    return report_html_table(header, rows, css, cell=_cell)


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
                      f'font-size="10">{_cell(value)}</text>']
    parts.append("</svg>")
    return "".join(parts)


def _page(title: str, body: Sequence[str]) -> str:
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
                      f"<h1>{escape(title)}</h1>", *body, "</body></html>\n"])


def _context(report: Mapping[str, Any], skip: Sequence[str]) -> str:
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
    body = [_context(report, ("metrics", "strategy_cases"))]
    if warning:
        body.append(f'<p class="warn">{escape(warning)}</p>')
    body += ["<h2>Metrics per strategy</h2>",
             html_table(["strategy", "cases", *keys],
                        [[r["strategy"], r["cases"], *(r[k] for k in keys)] for r in rows])]
    for metric in ("ndcg_at_5", "mean_reciprocal_rank", "hit_at_5"):
        body.append(svg_bar_chart([(r["strategy"], float(r[metric])) for r in rows],
                                  title=f"{metric} per strategy"))
    return _page(title, body)


# -- tuning -----------------------------------------------------------------------------

def _name(params: Mapping[str, Any]) -> str:
    short = {"keyword_weight": "kw", "vector_weight": "vec", "hybrid_weight": "hyb",
             "rrf_k": "k", "rrf_weight": "rrf", "agreement_boost": "agr"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in params.items()) or "(planner)"


def tuning_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The committed profile, then the candidates best first: selection and hold-out
    score of the metric, the gain and the per-class scores (table artifact)."""
    metric = report["metric"]

    def row(label: str, entry: Mapping[str, Any], delta: Any) -> dict[str, Any]:
        holdout = entry.get("holdout_metrics")
        return {"candidate": label, "selection": entry["metrics"][metric],
                "holdout": holdout[metric] if holdout else None, "delta_selection": delta,
                **{f"class_{k}": v for k, v in entry["per_class_metrics"].items()}}

    committed = report["committed"]
    rows = [row("committed v" + str(committed["version"]), committed, 0.0)]
    rows += [row(f"#{c['index']} {_name(c['params'])}", c, c["delta_vs_committed"]["selection"])
             for c in report["candidates"]]
    return rows


def _verdict(report: Mapping[str, Any]) -> list[str]:
    lines = [f"outcome: {report['outcome']}",
             f"noise: {report['noise']['status']} (gain {report['noise']['gain']}, margin "
             f"{report['noise']['margin']}, {report['noise']['selection_cases']} cases)",
             f"hold-out validation: {report['validation']['status']} "
             f"({report['validation']['holdout_cases']} cases)"]
    if report["winner"] is None:
        lines.append("no winner: keep the committed profile")
    return lines


def tuning_html(report: Mapping[str, Any], *, title: str, warning: str | None) -> str:
    """The tuning report page: verdict, context, charts of the candidates' scores
    (selection vs hold-out) and per class, and the tables."""
    metric = report["metric"]
    rows = tuning_rows(report)
    top = rows[:TOP_CANDIDATES + 1]
    classes = sorted({k for r in rows for k in r if k.startswith("class_")})
    body = [f"<p>{escape(line)}</p>" for line in _verdict(report)]
    if warning:
        body.append(f'<p class="warn">{escape(warning)}</p>')
    body.append(_context(report, ("candidates", "committed", "class_winners",
                                  "class_winners_skipped")))
    body.append(svg_grouped_bars([(r["candidate"], [r["selection"], r["holdout"]])
                                  for r in top], ["selection", "hold-out"],
                                 title=f"{metric}: committed and the best candidates"))
    best = rows[1] if len(rows) > 1 else rows[0]
    body.append(svg_grouped_bars(
        [(c.removeprefix("class_"), [rows[0].get(c), best.get(c),
                                     max((r.get(c) or 0.0) for r in rows[1:]) if len(rows) > 1
                                     else None]) for c in classes],
        ["committed", "best overall", "best for the class"],
        title=f"{metric} per query class (selection cases)"))
    body += ["<h2>Class overrides</h2>",
             html_table(["class", "cases", "gain", "params"],
                        [[w["class"], w["selection_cases"], w["gain"], _name(w["params"])]
                         for w in report["class_winners"]]),
             "<h2>Withheld class overrides</h2>",
             html_table(["class", "cases", "gain", "reason"],
                        [[s["class"], s["selection_cases"], s["gain"], s["reason"]]
                         for s in report["class_winners_skipped"]]),
             f"<h2>Candidates (best {TOP_CANDIDATES} of {len(rows) - 1})</h2>",
             html_table(["candidate", "selection", "hold-out", "Δ selection", *classes],
                        [[r["candidate"], r["selection"], r["holdout"], r["delta_selection"],
                          *(r.get(c) for c in classes)] for r in top])]
    return _page(title, body)


def paste_block(report: Mapping[str, Any], report_file: str) -> str:
    """The ready-to-paste ``PROFILE`` for ``ragplate/catalog/search_tuning.py``, or the
    comment saying to keep the committed one."""
    committed = report["committed"]
    lines = [f"# Retrieval tuning profile measured by {report_file} ({report['metric']})."]
    status = report["validation"]["status"]
    if status in ("skipped", "disabled"):
        lines.append(f"# NOT validated on held-out cases (validation {status}): read the "
                     "per-class table before pasting.")
    winner = report["winner"]
    if winner is None:
        lines.append(f"# No winner ({report['outcome']}): keep the committed profile "
                     f"(version {committed['version']}). Nothing to paste.")
        return "\n".join(lines) + "\n"
    classes = {w["class"]: w["params"] for w in report["class_winners"]}
    lines += [f"# Copy the report to {REPORTS_DIR}/ and keep the name below.",
              "PROFILE = TuningProfile(",
              f"    version={committed['version'] + 1},",
              f"    default={winner['params']!r},",
              f"    classes={classes!r},",
              f'    report="{REPORTS_DIR}/{report_file}",', ")"]
    return "\n".join(lines) + "\n"
