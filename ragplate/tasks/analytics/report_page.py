"""The corpus-gap report for people: a self-contained HTML page (inline SVG charts, no
script, nothing fetched: its Content-Security-Policy allows inline styles only) and a
Markdown summary of the figures for the flow's artifact.

The page shows the questions people typed, so every value from a record is escaped as
text; the Markdown summary holds no question at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ragplate.tasks.analytics.report import artifact_rows
from ragplate.tasks.evaluation.pages import html_table

BLUE, ORANGE, GREY, INK = "#3b6fb6", "#d9822b", "#e6e6e6", "#1a1a1a"
_CSS = """body{font-family:system-ui,sans-serif;margin:2rem auto;color:#1a1a1a;max-width:72rem;
padding:0 1.5rem;line-height:1.4}h1{font-size:1.6rem;margin-bottom:0.2rem}
h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:0.2rem}
.sub{color:#555;margin-top:0}table{border-collapse:collapse;margin:0.5rem 0 1.2rem}
th,td{border:1px solid #ccc;padding:0.3rem 0.6rem;text-align:right;vertical-align:top}
th{background:#f2f2f2}th:first-child,td:first-child{text-align:left}
td.text,th.text{text-align:left}td.question{text-align:left;max-width:24rem;
overflow-wrap:anywhere}td.question ul{margin:0.3rem 0 0;padding-left:1.1rem;color:#555;
font-size:0.9em}.cards{display:flex;flex-wrap:wrap;gap:0.8rem;margin:1rem 0}
.card{border:1px solid #ddd;border-radius:6px;padding:0.6rem 1rem;min-width:9rem}
.card b{display:block;font-size:1.5rem}.card span{color:#555;font-size:0.9em}
.empty{border:1px solid #d9822b;background:#fdf3e8;border-radius:6px;padding:1rem 1.2rem;
font-size:1.1rem}.note{color:#555;font-size:0.92em}.thin{color:#b35c00;font-weight:600}
.nowrap{white-space:nowrap}.small{color:#555;font-size:0.88em}
svg{display:block;margin:0.5rem 0 1rem;max-width:100%;height:auto}
svg text{font-size:13px;font-family:system-ui,sans-serif;fill:#1a1a1a}
.charts{display:flex;flex-wrap:wrap;gap:0 2.5rem;align-items:flex-start}"""
#: A chart label's characters: what 300 px holds at 13 px beside its bar.
LABEL_CHARS = 36
#: The topics the charts show (the table lists every one).
TOPICS_CHARTED = 25
TEXT_COLUMNS = ("representative question", "nearest source")
_CSP = "default-src 'none'; style-src 'unsafe-inline'"


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"


def percent(value: float) -> str:
    """A share as a percentage with one decimal."""
    return f"{value * 100:.1f} %"


def _svg(width: int, height: int, title: str, body: Sequence[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}"><title>{escape(title)}</title>'
            f'<text x="0" y="15" font-weight="bold">{escape(title)}</text>'
            + "".join(body) + "</svg>")


def bars(series: Sequence[tuple[str, float, float, str]], *, title: str,
         label_width: int = 150, bar_width: int = 320,
         colour: Sequence[str] | None = None) -> str:
    """Horizontal bars as inline SVG, one per ``(label, value, part, caption)``: the bar is
    ``value`` long (scaled to the largest), its first ``part`` drawn in orange (0: none),
    ``caption`` written after it. ``colour`` gives each bar its own colour instead."""
    row = 24
    top = 28
    largest = max((v for _, v, _, _ in series), default=0.0) or 1.0
    body = []
    for i, (label, value, part, caption) in enumerate(series):
        y = top + i * row
        full = round(bar_width * max(0.0, value) / largest, 1)
        inner = round(bar_width * max(0.0, min(part, value)) / largest, 1)
        fill = colour[i] if colour else BLUE
        body += [f'<text x="0" y="{y + 14}">{escape(label)}</text>',
                 f'<rect x="{label_width}" y="{y + 3}" width="{bar_width}" height="16" '
                 f'fill="{GREY}"/>',
                 f'<rect x="{label_width}" y="{y + 3}" width="{full}" height="16" '
                 f'fill="{fill}"/>']
        if inner > 0:
            body.append(f'<rect x="{label_width}" y="{y + 3}" width="{inner}" height="16" '
                        f'fill="{ORANGE}"/>')
        body.append(f'<text x="{label_width + bar_width + 8}" y="{y + 14}">'
                    f'{escape(caption)}</text>')
    width = label_width + bar_width + 150
    return _svg(width, top + row * len(series) + 6, title, body)


def _legend(x: int, y: int, items: Sequence[tuple[str, str]]) -> list[str]:
    parts = []
    for label, fill in items:
        parts += [f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{fill}"/>',
                  f'<text x="{x + 17}" y="{y}">{escape(label)}</text>']
        x += 30 + 8 * len(label)  # room for the label at 13 px
    return parts


def _legend_end(x: int, items: Sequence[tuple[str, str]]) -> int:
    """Where the legend :func:`_legend` draws from ``x`` ends (its last label's end)."""
    for label, _ in items[:-1]:
        x += 30 + 8 * len(label)
    return x + 17 + 8 * len(items[-1][0]) if items else x


#: The width of a bold title character at 13 px, generously (for a chart's least width).
TITLE_CHAR_PX = 9


def day_chart(days: Sequence[Mapping[str, Any]]) -> str:
    """The records of each day as a column, its unanswered part in orange, the day's
    abstention rate above it (when the columns are wide enough to hold it). At least as
    wide as its title and legend: a window of a day or two has few columns."""
    title = "Abstentions by day (UTC)"
    legend = (("answered", BLUE), ("unanswered", ORANGE))
    step = max(6, min(56, 840 // max(1, len(days))))
    left, top, plot_h = 40, 48, 180
    plot_end = left + step * len(days) + 10
    width = max(plot_end + 10, _legend_end(left, legend) + 10,
                TITLE_CHAR_PX * len(title) + 10)
    largest = max((int(d["records"]) for d in days), default=0) or 1
    body = _legend(left, 34, legend)
    for share in (0.0, 0.5, 1.0):
        y = top + plot_h - round(plot_h * share)
        body += [f'<line x1="{left}" x2="{plot_end}" y1="{y}" y2="{y}" stroke="#ddd"/>',
                 f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">'
                 f'{round(largest * share)}</text>']
    label_every = max(1, -(-46 // step))  # a date label is ~40 px wide
    for i, day in enumerate(days):
        x = left + i * step + 2
        total, missed = int(day["records"]), int(day["unanswered"])
        high = plot_h * total / largest
        low = plot_h * missed / largest
        base = top + plot_h
        body += [f'<rect x="{x}" y="{base - high:.1f}" width="{step - 4}" height="{high:.1f}" '
                 f'fill="{BLUE}"><title>{escape(day["day"])}: {total} question(s), {missed} '
                 f'unanswered</title></rect>',
                 f'<rect x="{x}" y="{base - low:.1f}" width="{step - 4}" height="{low:.1f}" '
                 f'fill="{ORANGE}"/>']
        if total and step >= 34:
            body.append(f'<text x="{x + (step - 4) / 2:.1f}" y="{base - high - 4:.1f}" '
                        f'text-anchor="middle">{round(100 * day["abstention_rate"])} %</text>')
        if i % label_every == 0:
            body.append(f'<text x="{x + (step - 4) / 2:.1f}" y="{base + 16}" '
                        f'text-anchor="middle">{escape(str(day["day"])[5:])}</text>')
    return _svg(width, top + plot_h + 26, title, body)


def _cards(report: Mapping[str, Any]) -> str:
    totals = report["totals"]
    latency = report["latency_ms"]
    cards = [(str(totals["records"]), "questions logged"),
             (str(totals["unanswered"]), "unanswered"),
             (percent(totals["abstention_rate"]), "abstention rate"),
             (str(len(report["topics"])), "unanswered topics"),
             (f"{latency['p50']:g} ms", "median retrieval")]
    return '<div class="cards">' + "".join(
        f'<div class="card"><b>{escape(v)}</b><span>{escape(k)}</span></div>'
        for v, k in cards) + "</div>"


def _question_cell(topic: Mapping[str, Any]) -> str:
    others = "".join(f"<li>{escape(w)}</li>" for w in topic["wordings"])
    more = int(topic["distinct_wordings"]) - 1 - len(topic["wordings"])
    if more > 0:
        others += f"<li>… and {more} more wording(s)</li>"
    return escape(topic["representative"]) + (f"<ul>{others}</ul>" if others else "")


def _source_cell(topic: Mapping[str, Any]) -> str:
    source = topic.get("nearest_source")
    if not source:
        return '<span class="thin">none: the index is empty</span>'
    section = f'<br><span class="small">{escape(source["section"])}</span>' if source[
        "section"] else ""
    path = (f'<br><span class="small">{escape(source["source"])}</span>'
            if source["source"] != source["label"] else "")
    return escape(source["label"]) + section + path


def _similarity_cell(topic: Mapping[str, Any], floor: float) -> str:
    source = topic.get("nearest_source")
    if not source:
        return "–"
    value = float(source["similarity"])
    if value < floor:
        return f'<span class="thin">{value:.3f} below the floor</span>'
    return f"{value:.3f}"


def similarity_chart(topics: Sequence[Mapping[str, Any]], floor: float) -> str:
    """The nearest-source similarity of each topic, lowest first, on an axis from just
    below the lowest value (or the floor) to 1, with the evidence floor drawn: the model's
    similarities sit in a narrow band, which a scale from 0 would flatten."""
    found = sorted((t for t in topics if t.get("nearest_source")),
                   key=lambda t: (t["nearest_source"]["similarity"], t["rank"]))
    if not found:
        return ""
    low = min([floor, *(float(t["nearest_source"]["similarity"]) for t in found)])
    start = max(-1.0, math.floor((low - 0.03) * 20) / 20)  # a multiple of 0.05 below
    label_w, bar_w, row, top = 300, 300, 24, 44

    def x(value: float) -> float:
        return round(label_w + bar_w * (value - start) / (1.0 - start), 1)

    body = []
    step = 0.05 if 1.0 - start <= 0.3 else 0.1 if 1.0 - start <= 0.6 else 0.25
    for n in range(round((1.0 - start) / step) + 1):
        tick = start + n * step
        body.append(f'<text x="{x(tick)}" y="{top - 6}" text-anchor="middle">{tick:.2f}</text>')
    bottom = top + row * len(found)
    grid = [f'<line x1="{x(start + n * step)}" x2="{x(start + n * step)}" y1="{top}" '
            f'y2="{bottom}" stroke="#fff" stroke-width="1.5"/>'
            for n in range(1, round((1.0 - start) / step))]
    for i, topic in enumerate(found):
        y = top + i * row
        value = float(topic["nearest_source"]["similarity"])
        fill = ORANGE if value < floor else BLUE
        body += [f'<text x="0" y="{y + 14}">#{topic["rank"]} '
                 f'{escape(shorten(topic["representative"], LABEL_CHARS))}</text>',
                 f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="16" fill="{GREY}"/>',
                 f'<rect x="{label_w}" y="{y + 3}" width="{x(value) - label_w:.1f}" '
                 f'height="16" fill="{fill}"/>',
                 f'<text x="{label_w + bar_w + 8}" y="{y + 14}">{value:.3f} · '
                 f'{escape(shorten(topic["nearest_source"]["label"], 30))}</text>']
    body += [*grid, f'<line x1="{x(floor)}" x2="{x(floor)}" y1="{top - 2}" y2="{bottom + 2}" '
             f'stroke="{INK}" stroke-dasharray="4 3"/>',
             f'<text x="{x(floor) + 4}" y="{bottom + 16}">evidence floor {floor:g}</text>']
    return _svg(label_w + bar_w + 320, bottom + 24,
                "How close the documentation comes (nearest source, lowest first)", body)


def topics_section(report: Mapping[str, Any]) -> str:
    """The topics: a chart by count, a chart of how close the nearest source comes, and
    the table of representatives and sources."""
    topics = report["topics"]
    grouping = report["grouping"]
    floor = float(report["evidence_floor"])
    parts = ["<h2>Unanswered questions by topic</h2>"]
    missing = int(grouping["without_text"])
    if not topics:
        reason = ("query_text_mode is off: records hold no question text"
                  if report["logging"]["query_text_mode"] == "off" or missing else
                  "every question in the window was answered")
        parts.append(f"<p>No topics: {escape(reason)}.</p>")
    else:
        shown = topics[:TOPICS_CHARTED]
        parts.append(bars(
            [(f"#{t['rank']} {shorten(t['representative'], LABEL_CHARS)}", t["count"], 0,
              str(t["count"])) for t in shown],
            title="Topics by number of unanswered questions", label_width=300,
            bar_width=300))
        parts.append(similarity_chart(shown, floor))
        parts.append('<p class="note">How close the documentation comes to each topic: the '
                     "cosine similarity of its representative question with the nearest "
                     "section of the index it was asked of, on the serving model's scale. "
                     "The lowest are where the corpus is thin; below the assistant's evidence "
                     f"floor ({floor:g}, orange) it has nothing to answer from. A topic close "
                     "to a source was unanswered for another reason: the source may not say "
                     "it, or not to the person who asked (permissions, tenant, locale).</p>")
        head = "".join(
            f'<th class="text">{escape(h)}</th>' if h in TEXT_COLUMNS else f"<th>{escape(h)}</th>"
            for h in ("#", "questions", "representative question", "locales", "index",
                      "nearest source", "module", "similarity"))
        rows = "".join(
            "<tr>" + f"<td>{t['rank']}</td><td>{t['count']}</td>"
            f'<td class="question">{_question_cell(t)}</td>'
            f'<td class="nowrap">{escape(", ".join(f"{k} {v}" for k, v in t["locales"].items()))}'
            "</td>"
            f"<td>{escape(t['index'])}</td><td class=\"text\">{_source_cell(t)}</td>"
            f"<td>{escape(t['module'])}</td><td>{_similarity_cell(t, floor)}</td></tr>"
            for t in topics)
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    notes = [f"Questions are grouped by {escape(grouping['method'])}: every two questions of "
             f"a topic have cosine similarity ≥ {grouping['threshold']:g} under the serving "
             "model; the representative is the question closest to the topic's centre."]
    if missing:
        notes.append(f"{missing} unanswered question(s) hold no text (logged with "
                     "query_text_mode off) and are in no topic.")
    if grouping["left_out"]:
        notes.append(f"{grouping['left_out']} unanswered question(s) past the first "
                     "distinct wordings were not grouped: narrow the window with --since.")
    parts.append('<p class="note">' + " ".join(notes) + "</p>")
    if report["modules"]:
        parts += ["<h2>Unanswered questions per module</h2>",
                  '<p class="note">The module of each topic\'s nearest source '
                  "(unknown: no source, or one that names no module).</p>",
                  '<div class="charts">',
                  bars([(m["module"], m["unanswered"], 0, str(m["unanswered"]))
                        for m in report["modules"]], title="Unanswered questions per module"),
                  html_table(["module", "unanswered questions"],
                             [[m["module"], m["unanswered"]] for m in report["modules"]]),
                  "</div>"]
    return "".join(parts)


def _figures_section(report: Mapping[str, Any]) -> str:
    locales = report["locales"]
    latency = report["latency_ms"]
    days = report["by_day"]
    parts = ["<h2>Abstentions over time</h2>", day_chart(days) if days else "",
             "<details><summary>Figures by day</summary>",
             html_table(["day (UTC)", "questions", "unanswered", "abstention rate"],
                        [[d["day"], d["records"], d["unanswered"],
                          percent(d["abstention_rate"])] for d in days]),
             "</details>",
             "<h2>Locale mix</h2>", '<div class="charts">',
             bars([(loc["locale"], loc["records"], loc["unanswered"],
                    f"{loc['records']} ({loc['unanswered']} unanswered)") for loc in locales],
                  title="Questions per locale (orange: unanswered)"),
             html_table(["locale", "questions", "share", "unanswered", "abstention rate"],
                        [[loc["locale"], loc["records"], percent(loc["share"]),
                          loc["unanswered"], percent(loc["abstention_rate"])]
                         for loc in locales]),
             "</div>",
             "<h2>Retrieval latency</h2>", '<div class="charts">',
             bars([(k, v, 0, f"{v:g} ms") for k, v in latency.items()],
                  title="Retrieval latency (ms)", label_width=60),
             html_table(["percentile", "ms"], [[k, v] for k, v in latency.items()]),
             "</div>"]
    return "".join(parts)


def render_page(report: Mapping[str, Any]) -> str:
    """The whole report as one self-contained HTML page."""
    window = report["window"]
    since, until = window["since"], window["until"]
    title = str(report["title"])
    span = f"{since[:16].replace('T', ' ')} to {until[:16].replace('T', ' ')} UTC"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             f'<p class="sub">Questions asked of the documentation assistant, {escape(span)}'
             f"</p>"]
    logging = report["logging"]
    if not logging["enabled"]:
        parts.append('<p class="note">Query logging was off where this report was made '
                     "(RAGPLATE_QUERY_LOGGING_ENABLED): a server started without it records no "
                     "new question.</p>")
    if report["totals"]["records"] == 0:
        parts.append(f'<p class="empty">Nothing to report: no question was logged from '
                     f"{escape(span)}.</p>")
    else:
        totals = report["totals"]
        parts += [_cards(report),
                  f'<p class="note">{totals["answered"]} answered, {totals["unanswered"]} '
                  f"unanswered (the assistant abstained); "
                  f"{escape(_index_text(report['indexes']))}.</p>",
                  topics_section(report), _figures_section(report)]
    if report["topics"]:
        parts.append('<p class="note">This page holds questions as people typed them. The '
                     f"query log keeps them {int(logging['retention_days'])} days and erases "
                     "a person's on request; this file is outside both: share it with care "
                     "and delete it when done.</p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _index_text(indexes: Mapping[str, int]) -> str:
    return "asked of the " + " and ".join(f"{name} index ({n})"
                                           for name, n in indexes.items())


def markdown_summary(report: Mapping[str, Any], *, page: str | None = None) -> str:
    """The figures as Markdown for the flow's artifact: totals, latency, locales, modules
    and the topics' counts and sources — no question."""
    totals = report["totals"]
    window = report["window"]
    lines = [f"# {report['title']}", "",
             f"{window['since']} to {window['until']}", ""]
    if totals["records"] == 0:
        lines += ["Nothing to report: no question was logged in the window.", ""]
    lines += ["| figure | value |", "|---|---|",
              *(f"| {k.replace('_', ' ')} | {v} |" for k, v in totals.items()),
              *(f"| latency {k} (ms) | {v} |" for k, v in report["latency_ms"].items()),
              f"| topics | {len(report['topics'])} |", ""]
    if report["locales"]:
        lines += ["| locale | questions | unanswered |", "|---|---|---|",
                  *(f"| {loc['locale']} | {loc['records']} | {loc['unanswered']} |"
                    for loc in report["locales"]), ""]
    if report["modules"]:
        lines += ["| module | unanswered |", "|---|---|",
                  *(f"| {m['module']} | {m['unanswered']} |" for m in report["modules"]), ""]
    rows = artifact_rows(report)
    if rows:
        lines += ["| # | questions | index | nearest source | module | similarity |",
                  "|---|---|---|---|---|---|",
                  *(f"| {r['rank']} | {r['count']} | {r['index']} | {r['nearest_source']} | "
                    f"{r['module']} | {r['similarity']} |" for r in rows), ""]
    if page:
        lines += [f"HTML report: `{page}`"]
    return "\n".join(lines) + "\n"
