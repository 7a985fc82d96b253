"""``evaluate-assistant``: the Level-1 assistant evaluation as a flow — every case of a
dataset through the real answer path with a scripted model and the fixture corpus, the
report (JSON + HTML) written and attached to the run as artifacts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ragplate.catalog.assistant import compile_policy
from ragplate.infra.environment import get_settings
from ragplate.infra.worker_watch import watch_worker
from ragplate.tasks.evaluation import assistant, assistant_steps, steps
from ragplate.tasks.evaluation.pages import markdown_summary, table_rows
from ragplate.tasks.evaluation.reports import html_path
from ragplate.tasks.flow_runs import crash_gone


@flow(name="evaluate-assistant", log_prints=True)
def evaluate_assistant(dataset: str, output: str, force: bool = False,
                       corpus: str | None = None) -> dict[str, Any]:
    """Evaluate the assistant dataset ``dataset`` (Level 1) and write the report to
    ``output`` (and ``<output>.html``, which lists the failing cases by id); ``corpus``:
    the fixture documentation (default ``datasets/fixtures/assistant``)."""
    watch_worker()  # this run ends with the worker that started it
    crash_gone()
    runtime = assistant.evaluation_runtime(get_settings())
    path = steps.check_output(output, force, dataset)
    loaded = assistant_steps.load_dataset(dataset)
    where = Path(corpus) if corpus else assistant.ASSISTANT_CORPUS
    sources = assistant_steps.prepare_sources(runtime, where)
    outcomes = assistant_steps.run_cases(runtime, loaded.data, sources)
    version = compile_policy(assistant.PROFILE, runtime.settings).policy_version
    report = assistant.build_report(loaded, outcomes, sources, where, version)
    written = steps.write_report(path, report, force, assistant.report_page(report, outcomes))
    title = assistant.report_title(report)
    page = html_path(written)
    create_table_artifact(table_rows(report), key="evaluate-assistant-metrics",
                          description=title)
    create_markdown_artifact(markdown_summary(report, title=title, page=str(page)),
                             key="evaluate-assistant-report", description=title)
    metrics = report["metrics"]
    print(f"{title}: surface routing {metrics['surface_routing_accuracy']}, citation "
          f"assembly {metrics['citation_assembly']}, refusal {metrics['refusal_accuracy']}; "
          f"report {written}, page {page}")
    return report
