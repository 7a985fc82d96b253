"""Pages for people of the tuning report: its HTML page (verdict, charts, tables), the
Prefect table rows and the ready-to-paste profile block. Deterministic: the same report
gives the same bytes."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from ragplate.catalog.search_tuning import REPORTS_DIR
from ragplate.tasks.evaluation.ranking_pages import (
    context_section,
    html_table,
    page,
    svg_grouped_bars,
)

#: How many candidates the tuning page charts and lists (the JSON holds them all).
TOP_CANDIDATES = 20


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
    body.append(context_section(report, ("candidates", "committed", "class_winners",
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
    return page(title, body)


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
