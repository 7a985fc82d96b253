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
from ragplate.infra.worker_watch import watch_worker
from ragplate.tasks.evaluation import cases, documentation, steps
from ragplate.tasks.evaluation.pages import markdown_summary, table_rows
from ragplate.tasks.evaluation.reports import html_path
from ragplate.tasks.evaluation.scoring import measured_by_scope
from ragplate.tasks.flow_runs import crash_gone
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
    cases_output: str | None = None,
    min_hit_at_5: float | None = None,
    min_mrr: float | None = None,
) -> dict[str, Any]:
    """Evaluate ``dataset`` on the ``index`` documentation index and write the report to
    ``output`` (and ``<output>.html``, which lists the failing cases). ``mode``: ``live``
    (the real index) or ``deterministic`` (the fixture corpus, Level 1); ``strategy``:
    ``vector`` or ``hybrid`` (default: the ``RAGPLATE_DOCS_RETRIEVAL`` setting);
    ``cases_output``: also write each case's expected and returned labels there (refused
    for a private dataset). With ``min_hit_at_5`` or ``min_mrr`` the run fails (after
    writing the report) when the figure is below."""
    watch_worker()  # this run ends with the worker that started it
    crash_gone()
    thresholds = cases.Thresholds(min_hit_at_5=min_hit_at_5, min_mrr=min_mrr)
    if mode not in documentation.MODES:
        raise InvalidInputError(f"--mode {mode!r}: expected deterministic or live")
    runtime = Runtime(get_settings())
    chosen: DocsRetrieval = strategy or runtime.settings.docs_retrieval
    if chosen not in STRATEGIES:
        raise InvalidInputError(f"--retrieval {chosen!r}: expected one of {', '.join(STRATEGIES)}")
    path = steps.check_output(output, force, dataset)
    if cases_output is not None:
        steps.check_cases_output(cases_output, path, force, dataset)
    loaded = steps.load_documentation_dataset(dataset, index)
    cases.refuse_private_cases(loaded.data, cases_output)
    cases.refuse_unmeasurable(thresholds, loaded.data)
    steps.validate_dataset(loaded)
    setup = steps.prepare_retrieval(runtime, index, mode, chosen, corpus)
    steps.warn_absent_labels(loaded.data, setup)
    outcomes = steps.run_documentation_cases(loaded.data, setup)
    report = documentation.build_report(loaded, outcomes, setup)
    steps.validate_report(report, "documentation", path)
    title = documentation.report_title(report)
    private = loaded.data.data_classification == "private"
    rows = None if private else cases.case_rows(outcomes)
    written = steps.write_report(path, report, force,
                                 cases.report_page(report, rows, title=title,
                                                   measured=measured_by_scope(outcomes)))
    if cases_output is not None and rows is not None:
        steps.write_cases(cases_output, cases.cases_document(report, rows), force)
    page = html_path(written)
    create_table_artifact(table_rows(report), key="evaluate-documentation-metrics",
                          description=title)
    create_markdown_artifact(markdown_summary(report, title=title, page=str(page)),
                             key="evaluate-documentation-report", description=title)
    print(f"{title}: {documentation.summary_line(report, outcomes)}; report {written}, "
          f"page {page}")
    steps.check_thresholds(thresholds, outcomes, report, str(written))
    return report
