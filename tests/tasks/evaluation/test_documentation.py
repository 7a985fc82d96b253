"""Level-1 documentation evaluation: the committed baselines, byte for byte.

Regenerate them after an intended change with ``RAGPLATE_BASELINE_REGEN=1 pytest
tests/tasks/evaluation/test_documentation.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ragplate.catalog.datasets import DatasetError, DocumentationCase, DocumentationDataset
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.infra.stores.base import SourceRecord
from ragplate.tasks.evaluation import documentation
from ragplate.tasks.evaluation.cases import case_rows, report_page
from ragplate.tasks.evaluation.dataset_files import read_dataset
from ragplate.tasks.evaluation.reports import assert_no_content, render_json
from ragplate.tasks.evaluation.scoring import (
    CaseOutcome,
    documentation_metrics,
    measured_by_scope,
)

DATASETS = PROJECT_ROOT / "datasets"
BASELINES = DATASETS / "baselines"
RUNS = [(index, strategy) for index in ("developer", "user") for strategy in ("vector", "hybrid")]
REGEN = os.environ.get("RAGPLATE_BASELINE_REGEN", "").strip() in ("1", "true", "yes")


def deterministic(index: Any, strategy: Any) -> tuple[dict[str, Any], str, str]:
    """(report, JSON text, HTML page) of one Level-1 run, as the flow builds them."""
    loaded = read_dataset(DATASETS / f"documentation-{index}-fixture.json", DocumentationDataset)
    setup = documentation.fixture_setup(index, strategy=strategy)
    outcomes = documentation.run_cases(loaded.data, documentation.case_retriever(setup),
                                       timed=False)
    report = documentation.build_report(loaded, outcomes, setup)
    page = report_page(report, case_rows(outcomes), title=documentation.report_title(report),
                       measured=measured_by_scope(outcomes))
    return report, render_json(report), page


def baseline(index: str, strategy: str) -> Path:
    return BASELINES / f"documentation-{index}-fixture-{strategy}.json"


@pytest.mark.parametrize(("index", "strategy"), RUNS)
def test_baseline_is_byte_identical(index: str, strategy: str) -> None:
    report, text, page = deterministic(index, strategy)
    path = baseline(index, strategy)
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.with_suffix(".html").write_text(page, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path} differs: rerun with " \
        "RAGPLATE_BASELINE_REGEN=1 if the change is intended"
    assert path.with_suffix(".html").read_text(encoding="utf-8") == page
    assert deterministic(index, strategy)[1] == text  # two runs, same bytes
    assert_no_content(report)
    assert report["driver"] == f"{index}-documentation-fixture"
    assert report["latency_ms"] == {"average": 0.0, "p50": 0.0, "p95": 0.0, "max": 0.0}


def test_the_baselines_gate_quality() -> None:
    """Floors under the committed figures, so a regression also reads as one."""
    for index, strategy in RUNS:
        metrics = deterministic(index, strategy)[0]["metrics"]
        assert metrics["source_hit_at_k"] == 1.0, (index, strategy)
        assert metrics["unavailable_rate"] == 0.0
    user = deterministic("user", "vector")[0]
    assert user["metrics"]["authorized_empty_accuracy"] == 1.0
    assert user["slices"]["category"]["sections"]["source_hit_at_k"] == 1.0
    assert user["slices"]["category"]["tenant"]["source_hit_at_k"] == 1.0
    assert deterministic("developer", "hybrid")[0]["metrics"]["mean_reciprocal_rank"] >= \
        deterministic("developer", "vector")[0]["metrics"]["mean_reciprocal_rank"]


def test_user_cases_run_with_their_principal() -> None:
    setup = documentation.fixture_setup("user", strategy="vector")
    dataset = read_dataset(DATASETS / "documentation-user-fixture.json",
                           DocumentationDataset).data
    retrieve = documentation.case_retriever(setup)
    by_id = {c.id: c for c in dataset.cases}
    assert retrieve(by_id["perm-it-hidden"]) == []
    assert retrieve(by_id["perm-it-credit-note"]) == ["Fatturazione · Fatture · Note di credito"]
    assert "Workspace · Acme help" not in retrieve(by_id["tenant-globex"])
    assert retrieve(by_id["tenant-acme"])[0] == "Workspace · Acme help"
    context = documentation.access_context(by_id["perm-credit-note"])
    assert context.permissions == frozenset({"billing.admin"}) and context.tenant is None


def test_a_failing_retrieval_is_unavailable_not_fatal() -> None:
    dataset = read_dataset(DATASETS / "documentation-developer-fixture.json",
                           DocumentationDataset).data

    def broken(case: DocumentationCase) -> list[str]:
        if case.id == "kw-bm25":
            raise RuntimeError("store down")
        return ["faq-fixture-ops/BACKUPS.md"]

    outcomes = documentation.run_cases(dataset, broken, clock=iter(range(100)).__next__)
    failed = next(o for o in outcomes if o.case_id == "kw-bm25")
    assert failed.unavailable and failed.ranked == ()
    assert all(o.latency_ms == 1000.0 for o in outcomes)


def test_a_failed_case_logs_its_reason_without_the_query(
        caplog: pytest.LogCaptureFixture) -> None:
    dataset = read_dataset(DATASETS / "documentation-developer-fixture.json",
                           DocumentationDataset).data
    failing = next(c for c in dataset.cases if c.id == "kw-bm25")

    def broken(case: DocumentationCase) -> list[str]:
        if case is failing:
            raise InvalidInputError(f"query {case.query!r} is refused\n[SQL: SELECT 1]")
        return []

    with caplog.at_level("WARNING", logger=documentation.log.name):
        documentation.run_cases(dataset, broken)
    assert [r.getMessage() for r in caplog.records] == [
        "case kw-bm25: retrieval failed (InvalidInputError: query '(the query)' is refused)"]


def test_a_failure_reason_masks_the_query_labels_of_a_private_dataset_and_paths() -> None:
    case = DocumentationCase.model_validate({
        "id": "c", "query": "where is backup.md", "locale": "en", "top_k": 5,
        "expected_source_labels": ["ops/backup.md"], "expected_citation_labels": [],
        "expect_authorized_empty": False, "expect_supported_answer": True,
        "expect_refusal": False, "slices": [], "tenant_scope": "global", "tenant_id": None,
        "effective_permissions": []})
    error = RuntimeError("no ops/backup.md for where is backup.md at /srv/x/sock")
    assert documentation.failure_reason(error, case, private=False) == (
        "RuntimeError: no ops/backup.md for (the query) at (a path)")
    assert documentation.failure_reason(error, case, private=True) == (
        "RuntimeError: no (a label) for (the query) at (a path)")
    assert documentation.failure_reason(KeyError(), case, private=True) == "KeyError"
    long = documentation.failure_reason(RuntimeError("x" * 500), case, private=False)
    assert len(long) == len("RuntimeError: ") + documentation.MAX_REASON_CHARS


def test_the_dataset_must_target_the_index() -> None:
    dataset = read_dataset(DATASETS / "documentation-user-fixture.json",
                           DocumentationDataset).data
    with pytest.raises(DatasetError, match="index_profile is 'user'"):
        documentation.check_index(dataset, "developer")


def test_the_report_names_each_recipe_of_the_measured_vectors_once() -> None:
    def record(source: str, recipe: str) -> SourceRecord:
        return SourceRecord(source, "h", "local:m", 1, recipe)

    assert documentation.vector_recipes([]) == []
    assert documentation.vector_recipes(
        [record("a", "document-context=1.0"), record("b", "document-context=1.0")]
    ) == ["document-context=1.0"]
    # Partly rebuilt since the recipe changed, and a source stored before recipes were.
    assert documentation.vector_recipes(
        [record("a", "document-context=1.0"), record("b", "document-context=0.0"),
         record("c", "")]
    ) == ["document-context=0.0", "document-context=1.0", "unrecorded"]


@pytest.mark.integration
def test_a_live_evaluation_of_an_unbuilt_index_is_refused(settings: Any) -> None:
    from ragplate.infra.runtime import Runtime
    from ragplate.infra.stores.pgvector import PgvectorStore

    class NeverBuilt(Runtime):
        """The configured database, with an index nobody has built."""

        def store(self, index: str, profile: Any = None) -> Any:
            store = PgvectorStore("never-built", profile or self.active_profile(), self.engine)
            store.reset()
            return store

    with pytest.raises(InvalidInputError, match=r"^--index developer: the index holds no "
                                                r"chunks .*ragplate index-docs --profile "
                                                r"developer"):
        documentation.live_setup(NeverBuilt(settings), "developer", strategy="vector")


def test_expected_labels_the_index_lacks_are_named() -> None:
    loaded = read_dataset(DATASETS / "documentation-developer-fixture.json",
                          DocumentationDataset)
    setup = documentation.fixture_setup("developer", strategy="vector")
    assert documentation.absent_labels(loaded.data, setup) == []

    first = loaded.data.cases[0]
    stale = first.model_copy(update={"expected_source_labels": [
        *first.expected_source_labels, "faq-fixture-ops/RETIRED.md"]})
    changed = loaded.data.model_copy(update={"cases": [stale, *loaded.data.cases[1:]]})
    assert documentation.absent_labels(changed, setup) == ["faq-fixture-ops/RETIRED.md"]

    user = documentation.fixture_setup("user", strategy="vector")
    assert documentation.absent_labels(changed, user) == []  # section labels: not checked


def _outcome(case_id: str, *, relevant: tuple[str, ...] = (), expect_empty: bool = False,
             ranked: tuple[str, ...] = ("a.md",)) -> CaseOutcome:
    return CaseOutcome(case_id=case_id, locale="en", slices=(), ranked=ranked,
                       relevant=relevant, citable=relevant, expect_authorized_empty=False,
                       expect_supported_answer=bool(relevant), expect_empty=expect_empty)


@pytest.mark.parametrize(("outcomes", "floor", "line"), [
    ([_outcome("a", relevant=("a.md",))], 0.82, "hit@k 1.0, MRR 1.0"),
    ([_outcome("a", relevant=("a.md",)), _outcome("b", expect_empty=True, ranked=())], 0.82,
     "hit@k 1.0, MRR 1.0; refusal accuracy 1.0"),
    # Only no-answer cases: no figure over no case.
    ([_outcome("b", expect_empty=True, ranked=())], 0.82,
     "no case expects a source (hit@k and MRR do not apply); refusal accuracy 1.0"),
    ([_outcome("b", expect_empty=True)], None,
     "no case expects a source (hit@k and MRR do not apply); refusal accuracy 0.0 (no "
     "similarity floor: set RAGPLATE_MIN_SIMILARITY, see ragplate tune-floor)"),
])
def test_the_summary_line_gives_only_the_figures_the_cases_define(
        outcomes: list[CaseOutcome], floor: float | None, line: str) -> None:
    report = {"metrics": documentation_metrics(outcomes),
              "retrieval": {"min_similarity": floor}}
    assert documentation.summary_line(report, outcomes) == line
