"""``tune-retrieval``'s guards, on the committed synthetic dataset with recorded rankings
shaped per case (pure functions: no database, no model).

Two shapes of disagreement between the strategies, on queries of 20 characters or more
(shorter ones get the planner's short-query weights):

- ``vector_right``: keyword search finds only a distractor, vector search ranks the
  relevant record first. The committed profile (L0) serves the distractor first; a
  candidate leaning on vectors serves the relevant record.
- ``keyword_right``: the reverse; L0 is right and the vector-leaning candidate is wrong.

Every other case agrees everywhere (``neutral``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragplate.catalog.datasets import ApplicationContentCase, ApplicationContentDataset
from ragplate.catalog.search_tuning import PROFILE, committed_profile_problems
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.tasks.evaluation.dataset_files import read_dataset
from ragplate.tasks.evaluation.reports import assert_no_content, render_json
from ragplate.tasks.evaluation.strategies import RecordedCase
from ragplate.tasks.retrieval.fusion import (
    SHORT_QUERY_CHARS,
    fuse,
    profile_params,
    reciprocal_rank_fusion,
)
from ragplate.tasks.retrieval.query_class import classify
from ragplate.tasks.tuning.grid import default_grid
from ragplate.tasks.tuning.pages import paste_block, tuning_html
from ragplate.tasks.tuning.tuner import Safeguards, split, tune

DATASET = PROJECT_ROOT / "datasets" / "application-content-fixture.json"
FILLER = [(f"cms.contents:9{i:02d}", 0.5 - i * 0.01) for i in range(28)]
Shape = Callable[[ApplicationContentCase], str]


@pytest.fixture(scope="module")
def cases() -> list[ApplicationContentCase]:
    dataset: ApplicationContentDataset = read_dataset(DATASET, ApplicationContentDataset).data
    return [c for c in dataset.cases if c.expected_hit_ids]


def long(case: ApplicationContentCase) -> bool:
    return len(case.query.strip()) >= SHORT_QUERY_CHARS


def recorded(case: ApplicationContentCase, shape: str) -> RecordedCase:
    relevant, distractor = case.expected_hit_ids[0], "cms.contents:999"
    if shape == "vector_right":
        keyword, vector = [(distractor, 0.3)], [(relevant, 0.9), *FILLER]
    elif shape == "keyword_right":
        keyword, vector = [(relevant, 0.3)], [(distractor, 0.9), *FILLER]
    else:
        keyword, vector = [(relevant, 0.3)], [(relevant, 0.9), *FILLER]
    hybrid = reciprocal_rank_fusion([[i for i, _ in keyword], [i for i, _ in vector]])
    rankings = {"keyword": keyword, "vector": vector, "hybrid": hybrid}
    query_class = classify(case.query)
    fused = tuple(i for i, _ in fuse(rankings, profile_params(PROFILE, case.query,
                                                               query_class)))
    return RecordedCase(case, query_class, rankings, fused, fused, reranker_ran=False)


def record(cases: list[ApplicationContentCase], shape: Shape) -> list[RecordedCase]:
    return [recorded(c, shape(c)) for c in cases]


def test_a_winner_that_loses_on_held_out_cases_is_refused(
    cases: list[ApplicationContentCase]
) -> None:
    _, holdout, _ = split(record(cases, lambda c: "neutral"), 0.3)
    held = {r.case.id for r in holdout}

    def shape(case: ApplicationContentCase) -> str:
        if not long(case):
            return "neutral"
        return "keyword_right" if case.id in held else "vector_right"

    report = tune(record(cases, shape), default_grid(), PROFILE, Safeguards())

    assert report["noise"]["status"] == "passed"  # a real gain on the selection …
    assert report["noise"]["gain"] > report["noise"]["margin"]
    validation = report["validation"]
    assert validation["status"] == "rejected"  # … that does not hold on unseen cases
    assert validation["candidate"] < validation["committed"]
    best = report["candidates"][0]
    assert validation["rejected_params"] == best["params"]
    assert best["params"]["vector_weight"] > best["params"]["keyword_weight"]
    assert report["winner"] is None and report["outcome"] == "holdout_rejected"
    assert report["holdout_case_count"] == len(holdout) == int(len(cases) * 0.3)
    assert "keep the committed profile" in paste_block(report, "r.json")
    assert "PROFILE =" not in paste_block(report, "r.json")


def test_a_gain_one_flipped_case_could_produce_is_refused(
    cases: list[ApplicationContentCase]
) -> None:
    first = next(c for c in cases if long(c))
    recordings = record(cases, lambda c: "vector_right" if c is first else "neutral")

    report = tune(recordings, default_grid(), PROFILE, Safeguards(holdout=0.0))

    noise = report["noise"]
    assert 0 < noise["gain"] <= noise["margin"] == round(1 / len(cases), 4)
    assert noise["status"] == "within_noise"
    assert report["winner"] is None and report["outcome"] == "within_noise"
    assert report["validation"]["status"] == "disabled"
    # The same gain passes once the check is off, and is then a winner.
    unchecked = tune(recordings, default_grid(), PROFILE,
                     Safeguards(holdout=0.0, noise_margin=0.0))
    assert unchecked["noise"]["status"] == "disabled"
    assert unchecked["winner"]["params"] == report["candidates"][0]["params"]


def _classed(cases: list[ApplicationContentCase], multi_term_wrong: int) -> list[RecordedCase]:
    """Natural-language cases favour vectors; the first ``multi_term_wrong`` long
    multi-term cases favour the L0 constants."""
    against = [c.id for c in cases if classify(c.query) == "multi_term" and long(c)]
    against = against[:multi_term_wrong]

    def shape(case: ApplicationContentCase) -> str:
        if case.id in against:
            return "keyword_right"
        return "vector_right" if classify(case.query) == "natural_language" else "neutral"

    return record(cases, shape)


def test_class_overrides_are_kept_or_withheld_with_the_reason(
    cases: list[ApplicationContentCase]
) -> None:
    strong = tune(_classed(cases, 4), default_grid(), PROFILE, Safeguards(holdout=0.0))
    assert strong["winner"] is not None
    kept = {w["class"]: w for w in strong["class_winners"]}
    assert set(kept) == {"multi_term"}
    assert kept["multi_term"]["gain"] > 1 / kept["multi_term"]["selection_cases"]
    assert kept["multi_term"]["params"] != strong["winner"]["params"]
    reasons = {s["class"]: s["reason"] for s in strong["class_winners_skipped"]}
    assert reasons == {"identifier": "margin", "short_keyword": "margin",
                       "natural_language": "margin"}

    weak = tune(_classed(cases, 2), default_grid(), PROFILE, Safeguards(holdout=0.0))
    skipped = {s["class"]: s for s in weak["class_winners_skipped"]}
    assert skipped["multi_term"]["reason"] == "within_noise"  # 2 of 12 cases: < one case
    assert 0.01 < skipped["multi_term"]["gain"] <= skipped["multi_term"]["noise_margin"]

    margin = tune(_classed(cases, 4), default_grid(), PROFILE,
                  Safeguards(holdout=0.0, class_margin=0.2))
    assert {s["class"]: s["reason"] for s in margin["class_winners_skipped"]}[
        "multi_term"] == "margin"

    few = tune(_classed(cases, 4), default_grid(), PROFILE,
               Safeguards(holdout=0.0, min_class_cases=16))
    assert few["class_winners"] == []
    assert {s["reason"] for s in few["class_winners_skipped"]} == {"too_few_cases"}


def test_a_dataset_too_small_for_the_split_is_not_validated(
    cases: list[ApplicationContentCase]
) -> None:
    three = [c for c in cases if classify(c.query) == "natural_language"][:3]
    report = tune(record(three, lambda c: "vector_right"), default_grid(), PROFILE,
                  Safeguards())

    assert report["validation"]["status"] == "skipped"
    assert report["holdout_case_count"] == 0 and report["train_case_count"] == 3
    assert report["noise"]["margin"] == round(1 / 3, 4)
    assert report["winner"] is not None  # 3 of 3 cases flipped: more than one case
    block = paste_block(report, "small.json")
    assert block.splitlines()[1].startswith("# NOT validated on held-out cases "
                                            "(validation skipped)")
    disabled = paste_block(tune(record(three, lambda c: "vector_right"), default_grid(),
                                PROFILE, Safeguards(holdout=0.0)), "small.json")
    assert "(validation disabled)" in disabled.splitlines()[1]


def test_ties_keep_the_first_candidate_the_l0_constants(
    cases: list[ApplicationContentCase]
) -> None:
    report = tune(record(cases, lambda c: "neutral"), default_grid(), PROFILE, Safeguards())

    assert report["candidates"][0]["index"] == 0
    assert report["candidates"][0]["params"] == default_grid()[0]
    assert report["winner"] is None and report["outcome"] == "no_gain"
    assert report["validation"]["status"] == "passed"  # it does not lose on the hold-out


def test_the_split_is_a_deterministic_hash_of_the_case_id(
    cases: list[ApplicationContentCase]
) -> None:
    recordings = record(cases, lambda c: "neutral")
    first = split(recordings, 0.3)
    again = split(list(reversed(recordings)), 0.3)

    assert {r.case.id for r in first[1]} == {r.case.id for r in again[1]}
    assert first[2] == "pending" and split(recordings, 0.0)[2] == "disabled"


def test_a_pasted_winner_passes_the_committed_profile_rule(
    cases: list[ApplicationContentCase], tmp_path: Path
) -> None:
    report = tune(_classed(cases, 4), default_grid(), PROFILE, Safeguards(holdout=0.0))
    report["validation"]["status"] = "passed"  # as if it had been validated
    folder = tmp_path / "docs" / "evaluations" / "retrieval-tuning"
    folder.mkdir(parents=True)
    (folder / "cms.json").write_text(render_json(report), encoding="utf-8")

    namespace: dict[str, object] = {}
    exec("from ragplate.catalog.search_tuning import TuningProfile\n"
         + paste_block(report, "cms.json"), namespace)
    pasted = namespace["PROFILE"]

    assert committed_profile_problems(pasted, tmp_path) == []  # type: ignore[arg-type]
    report["noise"]["status"] = "within_noise"
    (folder / "cms.json").write_text(render_json(report), encoding="utf-8")
    problems = committed_profile_problems(pasted, tmp_path)  # type: ignore[arg-type]
    assert problems == ["report 'docs/evaluations/retrieval-tuning/cms.json': noise check is "
                        "'within_noise', not 'passed'"]


def test_the_page_charts_candidates_and_classes(cases: list[ApplicationContentCase]) -> None:
    report = tune(_classed(cases, 4), default_grid(), PROFILE, Safeguards())
    page = tuning_html({"version": 1, "source": "cms.contents", **report}, title="t",
                       warning=None)

    assert page.count("<svg") == 2
    assert "selection" in page and "hold-out" in page and "natural_language" in page
    assert "<script" not in page and "http" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert_no_content(report)
    assert "query" not in render_json(report)


def test_the_tuning_fixture_holds_out_its_keyword_right_case() -> None:
    """The hold-out dataset of the tuning fixture (run end to end in
    ``tests/flows/test_evaluate_content.py``): the default split, a hash of the case ids,
    keeps its keyword-right case out of the selection and its vector-right cases in it."""
    from ragplate.tasks.records.fixtures import HOLDOUT_DATASET

    data = read_dataset(HOLDOUT_DATASET, ApplicationContentDataset).data
    selection, holdout, status = split(record(data.cases, lambda c: "neutral"),
                                       Safeguards().holdout)

    assert status == "pending"
    assert any("keyword-right" in r.case.slices for r in holdout)
    assert not any("vector-right" in r.case.slices for r in holdout)
    assert sum("vector-right" in r.case.slices for r in selection) >= 3
    assert not any("keyword-right" in r.case.slices for r in selection)
