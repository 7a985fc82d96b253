"""Application-content evaluation, per-strategy breakdown and retrieval tuning as Prefect
flows. Each writes its report (JSON, atomically, never over an existing one without
``force``) with an HTML page beside it, and attaches to the flow run a table artifact,
a Markdown summary and a link to the page."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)

from ragplate.catalog.datasets import ApplicationContentDataset
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.search_tuning import PROFILE
from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.worker_watch import watch_worker
from ragplate.tasks.evaluation import application_content, steps, strategies
from ragplate.tasks.evaluation.application_content import ContentSetup
from ragplate.tasks.evaluation.dataset_files import LoadedDataset
from ragplate.tasks.evaluation.pages import markdown_summary, render_html, table_rows
from ragplate.tasks.evaluation.ranking_pages import strategies_html, strategy_rows
from ragplate.tasks.evaluation.reports import html_path
from ragplate.tasks.evaluation.scoring import measured_by_scope
from ragplate.tasks.evaluation.strategies import RecordedCase
from ragplate.tasks.flow_runs import crash_gone
from ragplate.tasks.progress import SHOWN_BY_COMMAND
from ragplate.tasks.retrieval.strategy import MODES, Mode
from ragplate.tasks.tuning import report as tuning_report
from ragplate.tasks.tuning.grid import load_grid
from ragplate.tasks.tuning.pages import paste_block, tuning_html, tuning_rows
from ragplate.tasks.tuning.tuner import Safeguards


def _check_setup(setup: str) -> None:
    if setup not in steps.SETUPS:
        raise InvalidInputError(f"setup {setup!r}: expected live or deterministic")


def _publish(key: str, title: str, rows: Sequence[dict[str, Any]], summary: str,
             page: Path) -> None:
    create_table_artifact(list(rows), key=f"{key}-table", description=title)
    create_markdown_artifact(summary, key=f"{key}-report", description=title)
    create_link_artifact(page.resolve().as_uri(), link_text=page.name, key=f"{key}-page",
                         description=f"HTML page of {title}")


def _record(runtime: Runtime, source: str, dataset: str, output: str, force: bool,
            setup: steps.Setup,
            ) -> tuple[Path, LoadedDataset[ApplicationContentDataset], ContentSetup,
                       list[RecordedCase], dict[str, Any]]:
    """The steps the strategies and tuning flows share: refuse the output early, load and
    validate the dataset, then record every case's rankings once."""
    path = steps.check_output(output, force, dataset)
    loaded = steps.load_content_dataset(runtime, dataset, source)
    steps.validate_dataset(loaded)
    content = steps.prepare_search(runtime, setup, source)
    steps.warn_absent_hit_ids(loaded.data, content)
    recorded = steps.record_rankings(loaded.data, content)
    return path, loaded, content, recorded, steps.measure_context(loaded, content)


def _warn_if_reranker_idle(reranker: dict[str, Any]) -> str | None:
    """Log the warning of a reranker that was requested but did not run to the flow run's
    log, once and at WARNING; a ragplate command running the flow prints it itself on
    stderr, so its console leaves this record out (see :mod:`ragplate.tasks.progress`)."""
    warning = strategies.reranker_warning(reranker)
    if warning:
        get_run_logger().warning(warning, extra=SHOWN_BY_COMMAND)
    return warning


def _markdown(title: str, lines: Sequence[str], page: Path) -> str:
    return "\n".join([f"# {title}", "", *lines, "", f"HTML report: `{page}`"]) + "\n"


@flow(name="evaluate-application-content", log_prints=True)
def evaluate_application_content(source: str, dataset: str, output: str, force: bool = False,
                                 mode: Mode = "balanced", setup: steps.Setup = "live",
                                 ) -> dict[str, Any]:
    """Score ``dataset`` on application search of ``source`` (each case in its locale, as
    its tenant, in search ``mode``) and write the report to ``output`` and its page."""
    watch_worker()  # this run ends with the worker that started it
    crash_gone()
    _check_setup(setup)
    if mode not in MODES:
        raise InvalidInputError(f"--mode {mode!r}: expected fast, balanced or deep")
    runtime = Runtime(get_settings())
    path = steps.check_output(output, force, dataset)
    loaded = steps.load_content_dataset(runtime, dataset, source)
    steps.validate_dataset(loaded)
    content = steps.prepare_search(runtime, setup, source)
    steps.warn_absent_hit_ids(loaded.data, content)
    outcomes, served = steps.run_content_cases(loaded.data, content, mode)
    report = application_content.build_report(loaded, outcomes, served, content, mode)
    steps.validate_report(report, "application_content", path)
    title = application_content.report_title(report)
    written = steps.write_report(path, report, force, render_html(
        report, title=title, measured=measured_by_scope(outcomes)))
    page = html_path(written)
    _publish("evaluate-application-content", title, table_rows(report),
             markdown_summary(report, title=title, page=str(page)), page)
    print(f"{title}: hit@5 {report['metrics']['hit_at_5']}, MRR "
          f"{report['metrics']['mean_reciprocal_rank']}; report {written}, page {page}")
    return report


@flow(name="evaluate-retrieval-strategies", log_prints=True)
def evaluate_retrieval_strategies(source: str, dataset: str, output: str, force: bool = False,
                                  setup: steps.Setup = "live") -> dict[str, Any]:
    """Score each ordering (keyword, vector, hybrid, fused, reranked) on the cases with
    ground truth and write the report; warns when the reranker did not run."""
    watch_worker()  # this run ends with the worker that started it
    crash_gone()
    _check_setup(setup)
    path, loaded, content, recorded, context = _record(Runtime(get_settings()), source,
                                                       dataset, output, force, setup)
    report = strategies.build_report(loaded, recorded, content, context)
    steps.validate_report(report, "strategies", path)
    warning = _warn_if_reranker_idle(report["reranker"])
    title = strategies.report_title(report)
    written = steps.write_report(path, report, force,
                                 strategies_html(report, title=title, warning=warning))
    page = html_path(written)
    rows = strategy_rows(report)
    lines = ["| strategy | cases | hit_at_5 | MRR | ndcg_at_5 |", "|---|---|---|---|---|"]
    lines += [f"| {r['strategy']} | {r['cases']} | {r['hit_at_5']} | "
              f"{r['mean_reciprocal_rank']} | {r['ndcg_at_5']} |" for r in rows]
    reranker = report["reranker"]
    lines += ["", f"reranker: status {reranker['status']}, ran {reranker['ran']} of "
              f"{reranker['requested']}, model {reranker['model']}",
              "pre_authorization: true (a ranking diagnostic, not an access-control check)"]
    if warning:
        lines += ["", f"**Warning:** {warning}"]
    _publish("evaluate-retrieval-strategies", title, rows, _markdown(title, lines, page), page)
    print(f"{title}: " + ", ".join(f"{r['strategy']} nDCG@5 {r['ndcg_at_5']}" for r in rows)
          + f"; report {written}, page {page}")
    return report


@flow(name="tune-retrieval", log_prints=True)
def tune_retrieval(source: str, dataset: str, output: str, force: bool = False,
                   grid: str = "default", metric: str = "ndcg_at_5", holdout: float = 0.3,
                   min_class_cases: int = 8, class_margin: float = 0.01,
                   noise_margin: float | None = None, setup: steps.Setup = "live",
                   ) -> dict[str, Any]:
    """Record each case's rankings once, re-fuse them for every grid candidate, apply the
    guards and write the report; prints the ready-to-paste profile block.
    ``noise_margin`` ``None`` is ``auto``."""
    watch_worker()  # this run ends with the worker that started it
    crash_gone()
    _check_setup(setup)
    guards = Safeguards(metric=metric, holdout=holdout, min_class_cases=min_class_cases,
                        class_margin=class_margin, noise_margin=noise_margin)
    if grid != "default":
        steps.check_output(output, force, dataset, grid=grid)
    grid_name, candidates = load_grid(grid)
    path, loaded, content, recorded, context = _record(Runtime(get_settings()), source,
                                                       dataset, output, force, setup)
    report = tuning_report.build_report(loaded, recorded, grid_name=grid_name,
                                        grid=candidates, committed=PROFILE, guards=guards,
                                        driver=content.driver, context=context)
    steps.validate_report(report, "tuning", path)
    warning = _warn_if_reranker_idle(report["reranked"]["reranker"])
    title = tuning_report.report_title(report)
    written = steps.write_report(path, report, force,
                                 tuning_html(report, title=title, warning=warning))
    page = html_path(written)
    block = paste_block(report, written.name)
    lines = [f"outcome: **{report['outcome']}**, noise {report['noise']['status']}, "
             f"hold-out validation {report['validation']['status']}",
             f"class overrides: {len(report['class_winners'])}, withheld: "
             + ", ".join(f"{s['class']} ({s['reason']})" for s in report["class_winners_skipped"]),
             "", "```python", block.rstrip("\n"), "```"]
    _publish("tune-retrieval", title, tuning_rows(report), _markdown(title, lines, page), page)
    # The command prints the outcome, the report's path and the block itself (the block
    # on stdout, ready to paste): the flow run's log keeps them for the Prefect UI.
    get_run_logger().info("%s: outcome %s; report %s, page %s\n%s", title, report["outcome"],
                          written, page, block, extra=SHOWN_BY_COMMAND)
    return report


__all__ = ["evaluate_application_content", "evaluate_retrieval_strategies", "tune_retrieval"]
