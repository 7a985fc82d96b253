"""``evaluate-documentation``: score a documentation dataset through the real retrieval
path and write the report (JSON + HTML), attached to the flow run as artifacts."""

from __future__ import annotations

from typing import Any, Literal

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.settings import DocsRetrieval
from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.tasks.evaluation import documentation, steps
from ragplate.tasks.evaluation.pages import markdown_summary, render_html, table_rows
from ragplate.tasks.evaluation.reports import html_path
from ragplate.tasks.retrieval.documentation import STRATEGIES


@flow(name="evaluate-documentation", log_prints=True)
def evaluate_documentation(
    index: Literal["developer", "user"],
    dataset: str,
    output: str,
    force: bool = False,
    mode: documentation.Mode = "live",
    strategy: DocsRetrieval | None = None,
    corpus: str | None = None,
) -> dict[str, Any]:
    """Evaluate ``dataset`` on the ``index`` documentation index and write the report to
    ``output`` (and ``<output>.html``). ``mode``: ``live`` (the real index) or
    ``deterministic`` (the fixture corpus, Level 1); ``strategy``: ``vector`` or
    ``hybrid`` (default: the ``RAGPLATE_DOCS_RETRIEVAL`` setting)."""
    if mode not in documentation.MODES:
        raise InvalidInputError(f"--mode {mode!r}: expected deterministic or live")
    runtime = Runtime(get_settings())
    chosen: DocsRetrieval = strategy or runtime.settings.docs_retrieval
    if chosen not in STRATEGIES:
        raise InvalidInputError(f"--retrieval {chosen!r}: expected vector or hybrid")
    path = steps.check_output(output, force)
    loaded = steps.load_documentation_dataset(dataset, index)
    steps.validate_dataset(loaded)
    setup = steps.prepare_retrieval(runtime, index, mode, chosen, corpus)
    steps.warn_absent_labels(loaded.data, setup)
    outcomes = steps.run_documentation_cases(loaded.data, setup)
    report = documentation.build_report(loaded, outcomes, setup)
    steps.validate_report(report, "documentation", path)
    title = documentation.report_title(report)
    written = steps.write_report(path, report, force, render_html(report, title=title))
    page = html_path(written)
    create_table_artifact(table_rows(report), key="evaluate-documentation-metrics",
                          description=title)
    create_markdown_artifact(markdown_summary(report, title=title, page=str(page)),
                             key="evaluate-documentation-report", description=title)
    print(f"{title}: hit@k {report['metrics']['source_hit_at_k']}, MRR "
          f"{report['metrics']['mean_reciprocal_rank']}; report {written}, page {page}")
    return report
