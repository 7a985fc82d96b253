"""The retrieval tuning profile and the grid: what may be committed, what is refused.

``test_the_committed_profile_cites_a_passed_report`` is the rule of the spec's
``CommittedRetrievalTuningProfileTest``: a committed profile with measured values must cite
a tuning report that passed the held-out validation and the noise check and holds the same
values; a profile restating the L0 constants is exempt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.search_tuning import (
    PROFILE,
    REPORTS_DIR,
    TuningProfile,
    committed_profile_problems,
)
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.tasks.tuning.grid import default_grid, load_grid, parse_grid

MEASURED = {"keyword_weight": 0.3, "vector_weight": 0.4, "hybrid_weight": 0.3, "rrf_k": 20,
            "rrf_weight": 0.25, "agreement_boost": 0.15}


def test_the_committed_profile_cites_a_passed_report() -> None:
    assert committed_profile_problems(PROFILE, PROJECT_ROOT) == []


def _report(tmp: Path, *, validation: str = "passed", noise: str = "passed",
            params: dict[str, Any] | None = None, classes: list[Any] | None = None) -> str:
    folder = tmp / REPORTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    report = {"validation": {"status": validation}, "noise": {"status": noise},
              "winner": {"params": params or MEASURED}, "class_winners": classes or []}
    (folder / "cms.json").write_text(json.dumps(report), encoding="utf-8")
    return f"{REPORTS_DIR}/cms.json"


def test_a_measured_profile_needs_a_report_that_passed_both_checks(tmp_path: Path) -> None:
    uncited = TuningProfile(version=2, default=MEASURED)
    assert committed_profile_problems(uncited, tmp_path) == [
        "the profile holds measured values but cites no tuning report"]

    cited = TuningProfile(version=2, default=MEASURED, report=_report(tmp_path))
    assert committed_profile_problems(cited, tmp_path) == []

    _report(tmp_path, validation="rejected")
    assert "held-out validation is 'rejected'" in committed_profile_problems(cited, tmp_path)[0]
    _report(tmp_path, validation="skipped")
    assert "held-out validation is 'skipped'" in committed_profile_problems(cited, tmp_path)[0]
    _report(tmp_path, noise="within_noise")
    assert "noise check is 'within_noise'" in committed_profile_problems(cited, tmp_path)[0]
    _report(tmp_path, params={**MEASURED, "rrf_k": 60})
    assert committed_profile_problems(cited, tmp_path) == [
        f"report '{REPORTS_DIR}/cms.json': default differs from the report's winner"]
    _report(tmp_path, classes=[{"class": "identifier", "params": {"keyword_weight": 0.9}}])
    assert "classes differ" in committed_profile_problems(cited, tmp_path)[0]

    elsewhere = TuningProfile(version=2, default=MEASURED, report="reports/cms.json")
    assert "is not under" in committed_profile_problems(elsewhere, tmp_path)[0]
    missing = TuningProfile(version=2, default=MEASURED, report=f"{REPORTS_DIR}/none.json")
    assert "cannot be read" in committed_profile_problems(missing, tmp_path)[0]


def test_a_profile_restating_l0_is_exempt(tmp_path: Path) -> None:
    restating = TuningProfile(version=3, default={"rrf_k": 60, "rrf_weight": 0.25})
    assert restating.restates_l0
    assert committed_profile_problems(restating, tmp_path) == []
    assert not TuningProfile(version=3, classes={"identifier": {"rrf_k": 60}}).restates_l0


@pytest.mark.parametrize(("params", "message"), [
    ({"rerank_blend": 0.5}, "rerank_blend is a ranking parameter"),
    ({"rerank_top_k": 30}, "rerank_top_k is a ranking parameter"),
    ({"rrf_k": 0}, "rrf_k must be an integer >= 1"),
    ({"rrf_k": 60.0}, "rrf_k must be an integer >= 1"),
    ({"vector_weight": 1.5}, "vector_weight must be a number in [0, 1]"),
    ({"rrf_weight": True}, "rrf_weight must be a number in [0, 1]"),
    ({"keyword_weight": 0, "vector_weight": 0, "hybrid_weight": 0}, "all zero"),
    ({"boost": 0.1}, "unknown parameter 'boost'"),
])
def test_profiles_and_grids_refuse_bad_parameters(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        TuningProfile(version=2, default=params)
    with pytest.raises(InvalidInputError, match="candidate #1"):
        parse_grid([{"rrf_k": 20}, params], "--grid g.json")


def test_the_default_grid_has_108_candidates_l0_first() -> None:
    grid = default_grid()
    assert len(grid) == 108 == len({json.dumps(c, sort_keys=True) for c in grid})
    assert grid[0] == {"keyword_weight": 0.35, "vector_weight": 0.35, "hybrid_weight": 0.3,
                       "rrf_k": 60, "rrf_weight": 0.25, "agreement_boost": 0.15}
    assert {c["rrf_k"] for c in grid} == {20, 60, 100}


def test_grid_files(tmp_path: Path) -> None:
    good = tmp_path / "grid.json"
    good.write_text(json.dumps([{"rrf_k": 30}, {"vector_weight": 0.6, "rrf_weight": 0.1}]))
    assert load_grid(str(good)) == ("grid.json", [{"rrf_k": 30},
                                                  {"vector_weight": 0.6, "rrf_weight": 0.1}])
    for text, message in (("[]", "non-empty JSON list"), ("{}", "non-empty JSON list"),
                          ("[{}]", "sets no parameter"), ("not json", "not JSON"),
                          ('[{"rerank_top_k": 10}]', "ranking parameter"),
                          ('[{"rrf_k": 60, "rrf_k": 20}]', "key 'rrf_k' appears twice"),
                          ("[" * 100_000 + "]" * 100_000, "nested deeper than 32")):
        good.write_text(text)
        with pytest.raises(InvalidInputError, match=message):
            load_grid(str(good))
    with pytest.raises(InvalidInputError, match="cannot be read"):
        load_grid(str(tmp_path / "missing.json"))
