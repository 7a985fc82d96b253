"""Application-content evaluation, per-strategy breakdown and tuning on the seeded fixture
corpus: the committed baselines, byte for byte, and what each report must say.

Regenerate the baselines after an intended change with ``RAGPLATE_BASELINE_REGEN=1 pytest
tests/tasks/evaluation/test_application_content.py`` and review the diff.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from ragplate.catalog.datasets import ApplicationContentDataset, DatasetError
from ragplate.catalog.entities import Entity
from ragplate.catalog.errors import InvalidInputError, UnknownEntityError
from ragplate.catalog.search_tuning import PROFILE
from ragplate.catalog.settings import PROJECT_ROOT, ServerSettings, Settings
from ragplate.tasks.evaluation import application_content, strategies
from ragplate.tasks.evaluation.dataset_files import LoadedDataset, read_dataset
from ragplate.tasks.evaluation.pages import render_html
from ragplate.tasks.evaluation.ranking_pages import strategies_html
from ragplate.tasks.evaluation.reports import assert_no_content, render_json
from ragplate.tasks.evaluation.scoring import measured_by_scope
from ragplate.tasks.records.fixtures import FIXTURE_PROFILE, seed_fixture_corpus
from ragplate.tasks.retrieval.fusion import tuned_fusion
from ragplate.tasks.retrieval.strategy import RerankerFactory, configured_reranker
from ragplate.tasks.tuning import report as tuning_report
from ragplate.tasks.tuning.grid import default_grid
from ragplate.tasks.tuning.pages import tuning_html
from ragplate.tasks.tuning.tuner import Safeguards
from tests.testing.server_doubles import RERANK_MODEL, tei_double

pytestmark = pytest.mark.integration

DATASETS = PROJECT_ROOT / "datasets"
DATASET = DATASETS / "application-content-fixture.json"
BASELINES = DATASETS / "baselines"
REGEN = os.environ.get("RAGPLATE_BASELINE_REGEN", "").strip() in ("1", "true", "yes")
KINDS = ("application-content", "retrieval-strategies", "retrieval-tuning")


@pytest.fixture(scope="module")
def seeded(engine: sa.Engine) -> sa.Engine:
    seed_fixture_corpus(engine)
    return engine


@pytest.fixture(scope="module")
def loaded() -> LoadedDataset[ApplicationContentDataset]:
    return read_dataset(DATASET, ApplicationContentDataset)


@pytest.fixture(scope="module")
def reranker() -> Iterator[RerankerFactory]:
    with tei_double(model_id=RERANK_MODEL) as tei:
        factory = configured_reranker(
            Settings(servers={"rerank": ServerSettings(url=tei.url, api="tei")}))
        assert factory is not None
        yield factory


def setup(engine: sa.Engine, settings: Settings,
          reranker: RerankerFactory | None = None) -> application_content.ContentSetup:
    return application_content.fixture_setup(engine, settings, reranker)


def deterministic(kind: str, engine: sa.Engine, settings: Settings,
                  loaded: LoadedDataset[ApplicationContentDataset],
                  reranker: RerankerFactory | None) -> tuple[dict[str, Any], str, str]:
    """(report, JSON text, HTML page) of one fixture run, as the flows build them."""
    content = setup(engine, settings, reranker)
    if kind == "application-content":
        outcomes, served = application_content.run_cases(loaded.data, content, "balanced")
        report = application_content.build_report(loaded, outcomes, served, content, "balanced")
        return report, render_json(report), render_html(
            report, title=application_content.report_title(report),
            measured=measured_by_scope(outcomes))
    recorded = strategies.record_cases(loaded.data, content)
    context = application_content.context(loaded, content)
    if kind == "retrieval-strategies":
        report = strategies.build_report(loaded, recorded, content, context)
        warning = strategies.reranker_warning(report["reranker"])
        return report, render_json(report), strategies_html(
            report, title=strategies.report_title(report), warning=warning)
    report = tuning_report.build_report(loaded, recorded, grid_name="default",
                                      grid=default_grid(), committed=PROFILE,
                                      guards=Safeguards(), driver=content.driver,
                                      context=context)
    return report, render_json(report), tuning_html(
        report, title=tuning_report.report_title(report), warning=None)


@pytest.mark.parametrize("kind", KINDS)
def test_baseline_is_byte_identical(kind: str, seeded: sa.Engine, settings: Settings,
                                    loaded: LoadedDataset[ApplicationContentDataset],
                                    reranker: RerankerFactory) -> None:
    factory = None if kind == "application-content" else reranker
    report, text, page = deterministic(kind, seeded, settings, loaded, factory)
    path = BASELINES / f"{kind}-fixture.json"
    if REGEN:
        path.write_text(text, encoding="utf-8")
        path.with_suffix(".html").write_text(page, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path} differs: rerun with " \
        "RAGPLATE_BASELINE_REGEN=1 if the change is intended"
    assert path.with_suffix(".html").read_text(encoding="utf-8") == page
    assert deterministic(kind, seeded, settings, loaded, factory)[1] == text  # same bytes
    assert_no_content(report)
    assert "cms.contents:" not in text  # no ids either: a private run's report is committable


def test_the_reports_say_what_they_measured(seeded: sa.Engine, settings: Settings,
                                            loaded: LoadedDataset[ApplicationContentDataset],
                                            reranker: RerankerFactory) -> None:
    content, _, _ = deterministic("application-content", seeded, settings, loaded, None)
    assert content["driver"] == "database-generated-fixture"
    assert set(content["slices"]) == {"locale", "category"}
    assert set(content["slices"]["locale"]) == {"en", "it"}
    assert content["embedding"] == {"profile": FIXTURE_PROFILE.key,
                                    "service_model": FIXTURE_PROFILE.service_model,
                                    "dimensions": 257}
    assert content["corpus"]["size"] == 42 and content["dataset"]["sha256"] == loaded.sha256
    assert content["metrics"]["hit_at_5"] >= 0.9  # floors under the committed figures

    strategies, _, _ = deterministic("retrieval-strategies", seeded, settings, loaded,
                                     reranker)
    assert strategies["pre_authorization"] is True
    assert list(strategies["metrics"]) == ["keyword", "vector", "hybrid", "fused", "reranked"]
    assert strategies["reranker"] == {"requested": 49, "ran": 49, "status": "ran",
                                      "model": RERANK_MODEL}
    # The committed profile, switched on, scores no lower than the search as served.
    for metric in ("ndcg_at_5", "recall_at_5"):
        assert strategies["metrics"]["fused"][metric] >= content["metrics"][metric]

    tuning, _, _ = deterministic("retrieval-tuning", seeded, settings, loaded, reranker)
    for key in ("version", "source", "dataset", "metric", "case_count", "class_counts",
                "train_case_count", "holdout_case_count", "train_class_counts", "safeguards",
                "committed", "reranked", "candidates", "winner", "validation", "noise",
                "class_winners", "class_winners_skipped", "embedding", "corpus"):
        assert key in tuning, key
    assert tuning["dataset"]["sha256"] == loaded.sha256 and len(tuning["candidates"]) == 108
    assert tuning["reranked"]["reranker"]["status"] == "ran"


def test_strategies_without_a_reranker_say_it_did_not_run(
    seeded: sa.Engine, settings: Settings, loaded: LoadedDataset[ApplicationContentDataset]
) -> None:
    report, _, page = deterministic("retrieval-strategies", seeded, settings, loaded, None)

    assert report["reranker"] == {"requested": 49, "ran": 0, "status": "not_run",
                                  "model": None}
    warning = strategies.reranker_warning(report["reranker"])
    assert warning is not None and "did not run on 49 of 49 cases" in warning
    assert warning in page
    assert report["metrics"]["reranked"] == report["metrics"]["fused"]


def test_each_case_runs_in_its_locale_and_as_its_tenant(
    seeded: sa.Engine, settings: Settings, loaded: LoadedDataset[ApplicationContentDataset]
) -> None:
    content = setup(seeded, settings)
    by_id = {c.id: c for c in loaded.data.cases}
    floor = by_id["dove-pacco"].model_copy(update={"query": "consegna al piano"})
    italian = content.search(floor, "cms.contents", "balanced")
    english = content.search(floor.model_copy(update={"locale": "en"}), "cms.contents",
                             "balanced")
    assert italian.hits[0].id == "29" and italian.hits[0].locale == "it"
    assert "29" not in [h.id for h in english.hits]  # no English translation

    acme = content.search(by_id["acme-discount"], "cms.contents", "balanced")
    globex = content.search(by_id["acme-discount-as-globex"], "cms.contents", "balanced")
    assert acme.hits[0].id == "25"
    assert "25" not in [h.id for h in globex.hits]


def test_datasets_for_another_source_or_with_filters_are_refused(
    loaded: LoadedDataset[ApplicationContentDataset]
) -> None:
    with pytest.raises(DatasetError, match=r"--source cms\.contents: the dataset's source "
                       r"is 'cms\.pages'"):
        application_content.check_dataset(loaded.data.model_copy(update={"source": "cms.pages"}),
                                          "cms.contents", Settings())
    with pytest.raises(UnknownEntityError, match=r"unknown entity 'cms\.pages'"):
        application_content.check_dataset(loaded.data, "cms.pages", Settings())
    case = loaded.data.cases[0]
    auth = case.authorization.model_copy(update={"filters": [{"property": "a",
                                                              "operator": "eq", "value": 1}]})
    filtered = loaded.data.model_copy(update={
        "cases": [case.model_copy(update={"authorization": auth})]})
    with pytest.raises(DatasetError, match=r"case 'invoice-number', field "
                       r"'authorization\.filters'"):
        application_content.check_dataset(filtered, "cms.contents", Settings())


def test_an_evaluation_refuses_an_id_its_source_can_never_return(
    loaded: LoadedDataset[ApplicationContentDataset]
) -> None:
    case = next(c for c in loaded.data.cases if c.expected_hit_ids)
    astray = loaded.data.model_copy(update={"cases": [case.model_copy(update={
        "expected_hit_ids": ["cms.contents:abc"]})]})
    with pytest.raises(DatasetError, match=rf"^d\.json: case '{case.id}', field "
                       r"'expected_hit_ids\.0': 'cms\.contents:abc' is not"):
        application_content.check_dataset(astray, "cms.contents", Settings(), where="d.json")
    application_content.check_dataset(loaded.data, "cms.contents", Settings())


def test_adaptive_tuning_serves_the_profile_fusion(
    seeded: sa.Engine, settings: Settings, loaded: LoadedDataset[ApplicationContentDataset]
) -> None:
    content = setup(seeded, settings)
    case = next(c for c in loaded.data.cases if c.id == "pay-later")
    plain = content.search(case, "cms.contents", "balanced")
    tuned = content.search(case, "cms.contents", "balanced",
                           settings=settings.model_copy(update={"search_adaptive_tuning": True}))

    assert plain.per_strategy == tuned.per_strategy
    assert [h.id for h in plain.hits] == plain.per_strategy["hybrid"][:case.limit]
    expected = tuned_fusion(case.query, tuned.per_strategy, tuned.per_strategy_scores)
    assert [h.id for h in tuned.hits] == [i for i, _ in expected][:case.limit]


#: A declared entity whose tables exist but hold nothing yet.
EMPTY_ENTITY = {"name": "sao.tickets", "table": "eval_empty_tickets", "key_type": "text",
                "tenant_column": None, "searchable_statuses": ["open"],
                "translations": {"table": "eval_empty_ticket_texts", "key_column": "ticket_id",
                                 "text_fields": ["subject", "description"]}}


def test_a_source_without_searchable_records_is_refused(
    seeded: sa.Engine, settings: Settings
) -> None:
    with seeded.begin() as conn:
        conn.execute(sa.text("CREATE TABLE eval_empty_tickets (id text PRIMARY KEY, "
                             "status text NOT NULL)"))
        conn.execute(sa.text("CREATE TABLE eval_empty_ticket_texts (ticket_id text, "
                             "locale text, subject text, description text)"))
    try:
        declared = settings.model_copy(update={"entities": [Entity(**EMPTY_ENTITY)]})
        with_tickets = application_content.fixture_setup(seeded, declared)
        with pytest.raises(InvalidInputError,
                           match=r"^--source sao\.tickets: no published record to search"):
            application_content.require_texts(with_tickets, "sao.tickets")
        application_content.require_texts(with_tickets, "cms.contents")  # the seeded fixture
    finally:
        with seeded.begin() as conn:
            conn.execute(sa.text("DROP TABLE eval_empty_ticket_texts, eval_empty_tickets"))


def test_expected_ids_the_source_does_not_hold_are_named(
    seeded: sa.Engine, settings: Settings, loaded: LoadedDataset[ApplicationContentDataset]
) -> None:
    content = setup(seeded, settings)
    assert application_content.absent_hit_ids(loaded.data, content) == []

    first = loaded.data.cases[0]
    # A key no record has, one in a form search never returns, one that is no integer
    # (the key of cms.contents is a bigint: asked as such it would not even cast).
    astray = ["cms.contents:987654", "cms.contents:01", "cms.contents:a-1",
              "cms.contents:99999999999999999999"]
    changed = loaded.data.model_copy(update={"cases": [
        first.model_copy(update={"expected_hit_ids": [*first.expected_hit_ids, *astray]}),
        *loaded.data.cases[1:]]})
    assert application_content.absent_hit_ids(changed, content) == sorted(astray)


def test_keys_search_could_return_are_told_by_the_key_type() -> None:
    entity = Entity(**{**EMPTY_ENTITY, "key_type": "bigint"})
    assert [application_content.holdable_key(k, entity) for k in (
        "0", "42", "-7", "9223372036854775807", "9223372036854775808", "042", "4.2", "")] == [
        True, True, True, True, False, False, False, False]
    small = entity.model_copy(update={"key_type": "integer"})
    assert not application_content.holdable_key("2147483648", small)
    assert application_content.holdable_key("2147483647", small)
    ids = entity.model_copy(update={"key_type": "uuid"})
    assert application_content.holdable_key("0b7e4a52-8f0c-4b8e-9a51-3c1d2f6e7a90", ids)
    assert not application_content.holdable_key("0B7E4A52-8F0C-4B8E-9A51-3C1D2F6E7A90", ids)
    assert not application_content.holdable_key("not-a-uuid", ids)
    texts = entity.model_copy(update={"key_type": "text"})
    assert application_content.holdable_key("any key", texts)
