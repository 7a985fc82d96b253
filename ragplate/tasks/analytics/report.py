"""The corpus-gap report: what the documentation did not answer, over the query records of
a window.

Figures (pure functions over records, tested with literal lists): the abstention rate and
its counts, the abstentions by day, the locale mix, retrieval latency percentiles, and, in
``raw`` text mode only, the unanswered questions grouped into topics
(:mod:`ragplate.tasks.analytics.topics`), each with its count, a representative question
and the nearest documentation source in the index the questions went to — a low
similarity there is where the corpus is thin — and the unanswered questions per module of
those sources.

The report is data (:func:`build_report`); the page is written in a separate step
(:mod:`ragplate.tasks.analytics.report_page`). It holds the questions as people typed them:
the Prefect artifacts get the figures only (:func:`artifact_rows`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragplate.catalog.documents import breadcrumb_text
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.settings import Settings
from ragplate.infra.analytics import QueryLog
from ragplate.tasks.analytics import topics as grouping
from ragplate.tasks.evaluation.metrics import percentile, ratio
from ragplate.tasks.evaluation.reports import write_atomic
from ragplate.tasks.writes.audit import parse_since

if TYPE_CHECKING:

    from ragplate.infra.runtime import Runtime
    from ragplate.infra.stores.base import DocumentStore

#: The retrieval latency percentiles the report gives (nearest rank), besides the maximum.
PERCENTILES = (50, 90, 99)
#: A window longer than this is charted by day from its first record (without one, over
#: this many days back from now), not from ``since``.
MAX_CHART_DAYS = 92
#: The other wordings a topic lists besides its representative.
WORDINGS_SHOWN = 4
UNKNOWN_MODULE = "unknown"
INDEXES = ("user", "developer")

Record = Mapping[str, Any]
#: ``(index, vector) -> nearest source or None``: how a topic finds its closest document.
Nearest = Callable[[str, np.ndarray], dict[str, Any] | None]


# -- Figures --------------------------------------------------------------------------------

def abstention_rate(unanswered: int, total: int) -> float:
    """Unanswered over all, rounded to four decimals; 0.0 for no records."""
    return ratio(unanswered, total)


def totals(records: Sequence[Record]) -> dict[str, Any]:
    """Records, answered, unanswered, the abstention rate, and how many hold their text."""
    unanswered = [r for r in records if not r["answered"]]
    return {"records": len(records), "answered": len(records) - len(unanswered),
            "unanswered": len(unanswered),
            "abstention_rate": abstention_rate(len(unanswered), len(records)),
            "with_text": sum(1 for r in records if r.get("query") is not None),
            "unanswered_with_text": sum(1 for r in unanswered if r.get("query") is not None)}


def latency_percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 (nearest rank) and the maximum, in ms to two decimals; all 0.0 for
    no values."""
    figures = {f"p{q}": round(float(percentile(values_ms, q)), 2) + 0.0 for q in PERCENTILES}
    figures["max"] = round(float(max(values_ms)), 2) + 0.0 if values_ms else 0.0
    return figures


def locale_mix(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per locale: records, unanswered, share of all records and abstention rate; the most
    frequent first (ties by name)."""
    seen = Counter(str(r["locale"]) for r in records)
    missed = Counter(str(r["locale"]) for r in records if not r["answered"])
    return [{"locale": name, "records": n, "unanswered": missed[name],
             "share": ratio(n, len(records)), "abstention_rate": abstention_rate(missed[name], n)}
            for name, n in sorted(seen.items(), key=lambda item: (-item[1], item[0]))]


def utc_day(moment: datetime) -> date:
    """The UTC calendar day of ``moment`` (a naive one is taken as UTC)."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).date()


def by_day(records: Sequence[Record], *, first: date, last: date) -> list[dict[str, Any]]:
    """One row per UTC day from ``first`` to ``last`` (days without a record included):
    records, unanswered, abstention rate."""
    seen = Counter(utc_day(r["logged_at"]) for r in records)
    missed = Counter(utc_day(r["logged_at"]) for r in records if not r["answered"])
    rows = []
    day = first
    while day <= last:
        rows.append({"day": day.isoformat(), "records": seen[day], "unanswered": missed[day],
                     "abstention_rate": abstention_rate(missed[day], seen[day])})
        day += timedelta(days=1)
    return rows


def chart_days(records: Sequence[Record], *, since: datetime, now: datetime
               ) -> tuple[date, date]:
    """The days the abstention chart spans: from ``since`` (when the window is longer than
    :data:`MAX_CHART_DAYS`, from the first record, or with none the last
    :data:`MAX_CHART_DAYS` days: ``--since 0001-01-01`` is not 740,000 empty days) to
    ``now``."""
    first, last = utc_day(since), utc_day(now)
    if (last - first).days > MAX_CHART_DAYS:
        first = max(first, min(utc_day(r["logged_at"]) for r in records) if records
                    else last - timedelta(days=MAX_CHART_DAYS))
    return first, last


def per_module(topics: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Unanswered questions per module of each topic's nearest source (``unknown`` when it
    has none), the most first (ties by name)."""
    counts: Counter[str] = Counter()
    for topic in topics:
        counts[str(topic.get("module") or UNKNOWN_MODULE)] += int(topic["count"])
    return [{"module": name, "unanswered": n}
            for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


# -- Topics ---------------------------------------------------------------------------------

def find_topics(records: Sequence[Record], *, embed: Callable[[str], np.ndarray],
                nearest: Nearest, threshold: float = grouping.THRESHOLD,
                limit: int = grouping.MAX_WORDINGS) -> tuple[list[dict[str, Any]], int]:
    """The topics of the unanswered records that hold their text, index by index (a topic
    belongs to the index its questions were asked of), the most asked first, and how many
    unanswered questions were left out of the grouping (past ``limit`` distinct wordings
    per index)."""
    found: list[dict[str, Any]] = []
    left_out = 0
    for index in sorted({str(r["index"]) for r in records}):
        asked = [r for r in records
                 if not r["answered"] and r.get("query") is not None and r["index"] == index]
        wordings = grouping.distinct_wordings([str(r["query"]) for r in asked])
        left_out += sum(n for _, n in wordings[limit:])
        wordings = wordings[:limit]
        if not wordings:
            continue
        locales: dict[str, Counter[str]] = {}
        for r in asked:
            locales.setdefault(grouping.normalised(str(r["query"])), Counter())[
                str(r["locale"])] += 1
        # Grouped by their content words; the nearest source is searched with the question.
        vectors = np.vstack([embed(text) for text, _ in wordings])
        grouped = np.vstack([embed(grouping.topic_words(text)) for text, _ in wordings])
        weights = [float(n) for _, n in wordings]
        for rows in grouping.group(grouped, threshold):
            chosen = grouping.representative(grouped, rows, weights)
            mix: Counter[str] = Counter()
            for row in rows:
                mix.update(locales.get(grouping.normalised(wordings[row][0]), Counter()))
            source = nearest(index, vectors[chosen])
            found.append({
                "count": int(sum(weights[row] for row in rows)),
                "representative": wordings[chosen][0],
                "wordings": [wordings[row][0] for row in rows if row != chosen
                             ][:WORDINGS_SHOWN],
                "distinct_wordings": len(rows),
                "locales": dict(sorted(mix.items(), key=lambda item: (-item[1], item[0]))),
                "index": index,
                "nearest_source": source,
                "module": source["module"] if source else UNKNOWN_MODULE,
            })
    found.sort(key=lambda t: (-t["count"], t["representative"].casefold()))
    return [{"rank": n, **topic} for n, topic in enumerate(found, 1)], left_out


def nearest_source(store: DocumentStore, vector: np.ndarray) -> dict[str, Any] | None:
    """The chunk of ``store`` most similar to ``vector`` as a source: its label (the safe
    label on the user index), source, section, module (``unknown`` when it declares none)
    and cosine similarity; ``None`` when the index is empty. Unfiltered: the report is the
    operator's, and asks whether the corpus holds the subject at all."""
    hits = store.search(np.asarray(vector, dtype=np.float32), top_k=1)
    if not hits:
        return None
    hit = hits[0]
    return {"label": str(hit.metadata.get("safe_source_label") or hit.source),
            "source": hit.source,
            "section": breadcrumb_text(hit.metadata.get("heading_breadcrumb") or []),
            "module": str(hit.metadata.get("module") or UNKNOWN_MODULE),
            "similarity": round(float(hit.score), 4) + 0.0}


# -- The report -----------------------------------------------------------------------------

def evidence_floor(settings: Settings) -> float:
    """The similarity the assistant needs to answer (its floor, or RAGPLATE_MIN_SIMILARITY
    when higher): a topic whose nearest source is below it has nothing to answer from."""
    floor = settings.assistant_min_similarity
    return floor if settings.min_similarity is None else max(floor, settings.min_similarity)


def build_report(records: Sequence[Record], *, since: datetime, now: datetime,
                 topics: Sequence[Mapping[str, Any]], left_out: int = 0,
                 settings: Settings, threshold: float = grouping.THRESHOLD
                 ) -> dict[str, Any]:
    """The report's data, JSON-ready: the window, the logging settings, the figures and
    ``topics`` (from :func:`find_topics`)."""
    window = [r for r in records if since <= r["logged_at"] <= now]
    first, last = chart_days(window, since=since, now=now)
    figures = totals(window)
    return {
        "title": "Corpus-gap report",
        "window": {"since": since.astimezone(UTC).isoformat(timespec="seconds"),
                   "until": now.astimezone(UTC).isoformat(timespec="seconds")},
        "logging": {"enabled": settings.query_logging_enabled,
                    "query_text_mode": settings.query_logging_query_text_mode,
                    "retention_days": settings.query_logging_retention_days},
        "totals": figures,
        "indexes": dict(sorted(Counter(str(r["index"]) for r in window).items())),
        "by_day": by_day(window, first=first, last=last),
        "locales": locale_mix(window),
        "latency_ms": latency_percentiles([float(r["latency_ms"]) for r in window]),
        "grouping": {"method": "complete linkage on cosine", "threshold": threshold,
                     "grouped": sum(int(t["count"]) for t in topics),
                     "left_out": left_out,
                     "without_text": figures["unanswered"] - figures["unanswered_with_text"]},
        "evidence_floor": evidence_floor(settings),
        "topics": [dict(t) for t in topics],
        "modules": per_module(topics),
    }


def artifact_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The topics as rows of a Prefect table artifact: figures and sources, never a
    question (the Prefect server keeps artifacts past the retention window and erasure)."""
    rows = []
    for topic in report["topics"]:
        source = topic.get("nearest_source") or {}
        rows.append({"rank": topic["rank"], "count": topic["count"], "index": topic["index"],
                     "locales": ", ".join(f"{k} {v}" for k, v in topic["locales"].items()),
                     "nearest_source": source.get("label", ""),
                     "module": topic["module"], "similarity": source.get("similarity")})
    return rows


# -- I/O ------------------------------------------------------------------------------------

def read_window(store: QueryLog, since: datetime, now: datetime) -> list[dict[str, Any]]:
    """The records logged from ``since`` to ``now``, oldest first (``[]`` without a
    store)."""
    return [r for r in store.read(since=since) if r["logged_at"] <= now]


def runtime_topics(runtime: Runtime, records: Sequence[Record],
                   threshold: float = grouping.THRESHOLD) -> tuple[list[dict[str, Any]], int]:
    """:func:`find_topics` with the serving embedder and the serving profile's stores
    (opened only when there is a question to group)."""
    if not any(not r["answered"] and r.get("query") is not None for r in records):
        return [], 0
    profile = runtime.active_profile()
    embedder = runtime.embedder(profile)
    stores: dict[str, DocumentStore] = {}

    def nearest(index: str, vector: np.ndarray) -> dict[str, Any] | None:
        if index not in INDEXES:  # a record of an index this version does not serve
            return None
        if index not in stores:
            stores[index] = runtime.store(index, profile)
        return nearest_source(stores[index], vector)

    return find_topics(records, embed=embedder.embed_query, nearest=nearest,
                       threshold=threshold)


def make_report(runtime: Runtime, *, since: datetime, now: datetime | None = None
                ) -> dict[str, Any]:
    """Read the window, group its unanswered questions and build the report."""
    end = now or datetime.now(UTC)
    records = read_window(runtime.query_log, since, end)
    topics, left_out = runtime_topics(runtime, records)
    return build_report(records, since=since, now=end, topics=topics, left_out=left_out,
                        settings=runtime.settings)


def window_start(since: str, now: datetime) -> datetime:
    """The report's ``--since`` (see :func:`~ragplate.tasks.writes.audit.parse_since`),
    refused when it is after ``now``: a window that ends before it begins."""
    start = parse_since(since, now)
    if start > now:
        raise InvalidInputError(f"--since: {since[:40]!r} is in the future; the report "
                                "covers the records from then to now")
    return start


def check_page_output(output: Path | str) -> Path:
    """Refuse an output that is a directory or whose directory does not exist."""
    path = Path(output)
    if path.is_dir():
        raise InvalidInputError(f"--output {path}: is a directory, not a file")
    if not (path.parent if str(path.parent) else Path(".")).is_dir():
        raise InvalidInputError(f"--output {path}: directory {path.parent} does not exist")
    return path


#: The page holds questions people typed: readable by its owner only, as is the folder
#: the flow writes pages to.
PAGE_MODE, FOLDER_MODE = 0o600, 0o700


def write_page(output: Path | str, html: str) -> Path:
    """Write the page atomically (a reader never sees half of it), readable by its owner
    only (:data:`PAGE_MODE`); the path."""
    path = check_page_output(output)
    try:
        write_atomic(path, html, mode=PAGE_MODE)
    except OSError as exc:
        raise InvalidInputError(f"--output {path}: cannot write it "
                                f"({exc.strerror or exc})") from exc
    return path


def default_output(settings: Settings, now: datetime) -> Path:
    """Where the flow writes its page when given none: ``<home>/reports/analytics/``,
    one page per UTC day; the folder is its owner's only (:data:`FOLDER_MODE`), made so
    if it was not."""
    folder = settings.home / "reports" / "analytics"
    folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    folder.chmod(FOLDER_MODE)
    return folder / f"corpus-gap-{utc_day(now).isoformat()}.html"

