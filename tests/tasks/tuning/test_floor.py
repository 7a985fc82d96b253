"""``tune-floor``: the floor replayed over literal hits, and the flow over a real index."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragplate.catalog.errors import FloorNotMeasurableError, InvalidInputError
from ragplate.tasks.tuning.floor import (
    FloorCase,
    candidates,
    check_measured,
    choose,
    figures,
    kept,
    log_line,
    summary,
    tune_floor,
)


def answered(case_id: str, *hits: tuple[str, float], relevant: str = "a") -> FloorCase:
    return FloorCase(case_id, (relevant,), False, hits)


def no_answer(case_id: str, *hits: tuple[str, float]) -> FloorCase:
    return FloorCase(case_id, (), True, hits)


CASES = [
    answered("q1", ("a", 0.90), ("b", 0.80)),
    answered("q2", ("b", 0.88), ("a", 0.85)),
    answered("q3", ("x", 0.84), ("a", 0.83)),
    no_answer("n1", ("b", 0.80), ("c", 0.70)),
    no_answer("n2", ("c", 0.78)),
    no_answer("n3", ("c", 0.86)),  # too close to the answers to be refused
]


def test_a_floor_keeps_the_hits_reaching_it() -> None:
    assert kept(CASES[0], None) == ["a", "b"]
    assert kept(CASES[0], 0.85) == ["a"]
    assert kept(CASES[3], 0.81) == []


def test_figures_count_refusals_and_hits_by_hand() -> None:
    assert figures(CASES, None) == {
        "floor": None, "no_answer_cases": 3, "refused": 0, "refusal_accuracy": 0.0,
        "answered_cases": 3, "hits_at_5": 3, "hit_at_5": 1.0}
    at = figures(CASES, 0.81)
    assert (at["refused"], at["hits_at_5"]) == (2, 3)
    # Above q3's relevant similarity (0.83) it loses q3.
    assert figures(CASES, 0.835)["hits_at_5"] == 2


def test_the_floor_is_the_middle_of_the_best_run_that_keeps_hit_at_5() -> None:
    values = candidates(CASES)
    assert values[0] == 0.74 and all(a < b for a, b in itertools.pairwise(values))
    # 0.79 refuses n2 (0.78); 0.815 refuses n1 (0.80) too and still keeps q3 (0.83);
    # 0.835 would lose q3. n3 (0.86) sits above the answers: refusing it costs two.
    assert choose(CASES) == 0.815
    # One answered case may go, but 0.835 and 0.845 refuse no more than 0.815 and lose
    # q3: the floor that keeps more answers wins the tie.
    assert choose(CASES, max_lost=1) == 0.815
    # Two may go: 0.87 refuses n3 too, at the cost of q2 and q3.
    assert choose(CASES, max_lost=2) == 0.87
    assert choose([answered("q", ("a", 0.9))]) is None


def test_tune_floor_checks_the_hold_out_and_names_the_setting() -> None:
    result = tune_floor(CASES, holdout=0)
    assert (result["floor"], result["validation"]) == (0.815, "disabled")
    assert result["all"]["with"]["refusal_accuracy"] == 0.6667
    assert summary(result).splitlines()[-1] == "RAGPLATE_MIN_SIMILARITY=0.815"
    nothing = tune_floor([answered("q", ("a", 0.9)), no_answer("n", ("c", 0.95))], holdout=0)
    assert (nothing["floor"], nothing["validation"]) == (None, "none")
    assert "no floor recommended: no floor refuses" in summary(nothing)
    with pytest.raises(InvalidInputError, match="no case with expect_refusal"):
        tune_floor(CASES[:3], holdout=0)
    with pytest.raises(InvalidInputError, match="--holdout"):
        tune_floor(CASES, holdout=1.0)


def test_a_dataset_of_no_answer_cases_alone_is_refused() -> None:
    # Every floor "keeps hit@5 0/0": refused as the dataset it is, not as an index misfit.
    with pytest.raises(InvalidInputError,
                       match=r"^the dataset has no answered case \(none with "
                             r"expected_source_labels\)"):
        tune_floor([no_answer("n1", ("c", 0.8)), no_answer("n2", ("c", 0.7))], holdout=0)


def test_the_dataset_is_checked_before_retrieval_naming_it() -> None:
    from ragplate.catalog.datasets import DocumentationDataset
    from ragplate.tasks.tuning.floor import check_dataset

    both = DocumentationDataset.model_validate(floor_dataset())
    check_dataset(both, "d.json")
    no_answer_only = both.model_copy(update={"cases": both.cases[3:]})
    with pytest.raises(InvalidInputError,
                       match=r"^--dataset d\.json: the dataset has no answered case"):
        check_dataset(no_answer_only, "d.json")
    answered_only = both.model_copy(update={"cases": both.cases[:3]})
    with pytest.raises(InvalidInputError,
                       match=r"^--dataset d\.json: the dataset has no case with "
                             r"expect_refusal"):
        check_dataset(answered_only, "d.json")


def test_without_a_floor_each_row_is_printed_once() -> None:
    nothing = tune_floor([answered("q", ("a", 0.9)), no_answer("n", ("c", 0.95))], holdout=0)
    rows = [line for line in summary(nothing).splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| selection", "none"], ["| hold-out", "none"], ["| all", "none"]]
    chosen = tune_floor(CASES, holdout=0)
    rows = [line for line in summary(chosen).splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[1] for row in rows] == ["none", "0.815"] * 3


def test_the_log_line_says_whose_figures_it_quotes() -> None:
    assert log_line(tune_floor(CASES, holdout=0)) == (
        "tune-floor: floor 0.815 (validation disabled): refusal accuracy 0.6667, hit@5 1.0")
    nothing = tune_floor([answered("q", ("a", 0.9)), no_answer("n", ("c", 0.95))], holdout=0)
    assert log_line(nothing) == (
        "tune-floor: floor None (validation none, reason no_gain): without a floor: "
        "refusal accuracy 0.0, hit@5 1.0")
    from ragplate.tasks.evaluation.dataset_files import held_out

    ids = [f"a{i}" for i in range(20)]
    out = held_out(ids, 0.5)
    refusals = [no_answer(f"n{i}", ("c", 0.70)) for i in range(20)]
    low = [answered(i, ("a", 0.75 if i in out else 0.90)) for i in ids]
    rejected = tune_floor(low + refusals, holdout=0.5)
    figures_all = rejected["all"]["with"]
    assert log_line(rejected) == (
        "tune-floor: floor None (validation rejected, reason rejected): rejected candidate "
        f"0.8: refusal accuracy {figures_all['refusal_accuracy']}, "
        f"hit@5 {figures_all['hit_at_5']}")


def test_a_floor_losing_a_held_out_answer_is_rejected() -> None:
    from ragplate.tasks.evaluation.dataset_files import held_out

    ids = [f"a{i}" for i in range(20)]
    out = held_out(ids, 0.5)
    assert out and len(out) < len(ids)
    refusals = [no_answer(f"n{i}", ("c", 0.70)) for i in range(20)]
    fine = [answered(i, ("a", 0.90)) for i in ids]
    chosen = tune_floor(fine + refusals, holdout=0.5)
    assert (chosen["validation"], chosen["floor"]) == ("accepted", 0.8)
    # The held-out answers sit at 0.75, below the floor the selection chooses (0.8).
    low = [answered(i, ("a", 0.75 if i in out else 0.90)) for i in ids]
    result = tune_floor(low + refusals, holdout=0.5)
    assert (result["chosen_on_selection"], result["validation"], result["floor"],
            result["reason"]) == (0.8, "rejected", None, "rejected")
    assert result["holdout_part"]["with"]["hits_at_5"] == 0
    assert "no floor recommended: 0.8 loses more than 0" in summary(result)


def test_no_floor_is_measured_when_no_answered_case_has_a_hit() -> None:
    # The index holds none of the expected sources: without a floor nothing answers, so
    # every floor "keeps hit@5" and the highest would refuse everything.
    astray = [answered(f"q{i}", ("x", 0.90 - i / 100), ("y", 0.80)) for i in range(6)]
    refusals = [no_answer("n1", ("c", 0.85)), no_answer("n2", ("c", 0.75))]
    assert choose(astray + refusals) is not None
    for holdout in (0.0, 0.3):
        result = tune_floor(astray + refusals, holdout=holdout)
        assert (result["floor"], result["chosen_on_selection"], result["validation"],
                result["reason"]) == (None, None, "none", "no_hit")
        text = summary({**result, "absent_labels": 1})
        assert "RAGPLATE_MIN_SIMILARITY=" not in text
        assert text.splitlines()[-1] == (
            "no floor can be measured: without a floor no answered case has an expected "
            "source in the top 5 (hit@5 0/6), so there is no answer for a floor to keep; 1 "
            "expected source label(s) of the dataset are not in the index; leave "
            "RAGPLATE_MIN_SIMILARITY unset")
        with pytest.raises(FloorNotMeasurableError,
                           match=r"^tune-floor: dataset d\.json does not fit the developer "
                                 r"index: .*hit@5 0/6") as raised:
            check_measured(result, index="developer", dataset="d.json")
        assert raised.value.exit_code == 2 and raised.value.result == result
    # The other outcomes say why too, and pass the check.
    assert tune_floor(CASES, holdout=0)["reason"] is None
    nothing = tune_floor([answered("q", ("a", 0.9)), no_answer("n", ("c", 0.95))], holdout=0)
    assert nothing["reason"] == "no_gain"
    check_measured(nothing, index="developer", dataset="d.json")


def floor_case(case_id: str, query: str, label: str | None) -> dict[str, Any]:
    return {"id": case_id, "query": query, "locale": "en", "top_k": 5,
            "expected_source_labels": [label] if label else [],
            "expected_citation_labels": [label] if label else [],
            "expect_authorized_empty": False, "expect_supported_answer": bool(label),
            "expect_refusal": label is None, "slices": ["floor"],
            "tenant_scope": "global", "tenant_id": None, "effective_permissions": []}


def floor_dataset(prefix: str = "dev") -> dict[str, Any]:
    """Three answered cases on the ``developer_index`` corpus (its sources under ``dev``;
    another ``prefix`` names sources it does not hold) and three no-answer cases."""
    return {"version": "1", "corpus_revision": "test", "module": "core",
            "index_profile": "developer", "data_classification": "synthetic", "cases": [
                floor_case("backup", "How often is the database dumped?",
                           f"{prefix}/ops/backup.md"),
                floor_case("probe", "What does the probe embed?", f"{prefix}/cli/probe.md"),
                floor_case("health", "Which endpoint reports index counts?",
                           f"{prefix}/api/health.md"),
                floor_case("tiramisu", "Quale è la ricetta del tiramisù?", None),
                floor_case("peru", "What is the capital city of Peru?", None),
                floor_case("football", "Who won the football world cup in 1998?", None)]}


@pytest.mark.integration
def test_the_flow_prints_a_floor_on_a_real_index(
    prefect_api_url: str, developer_index: Any, tmp_path: Path
) -> None:
    from ragplate.flows.tune_floor import tune_floor as flow

    path = tmp_path / "floor.json"
    path.write_text(json.dumps(floor_dataset()), encoding="utf-8")

    result = flow(index="developer", dataset=str(path), holdout=0.0)

    assert result["floor"] is not None and 0.0 < result["floor"] < 1.0
    figures_all = result["all"]
    assert figures_all["with"]["hits_at_5"] == figures_all["without"]["hits_at_5"] == 3
    assert figures_all["with"]["refused"] > figures_all["without"]["refused"] == 0
    assert result["model"] == developer_index.profile.key


@pytest.mark.integration
def test_the_cli_refuses_a_dataset_the_index_does_not_hold(
    prefect_api_url: str, ragplate_home: Path, developer_index: Any, tmp_path: Path
) -> None:
    path = tmp_path / "elsewhere.json"
    path.write_text(json.dumps(floor_dataset("elsewhere")), encoding="utf-8")
    port = prefect_api_url.rsplit(":", 1)[1].split("/", 1)[0]
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_API_URL"}
    environ.update(RAGPLATE_HOME=str(ragplate_home), RAGPLATE_PREFECT_PORT=port)
    command = [sys.executable, "-m", "ragplate", "tune-floor", "--index", "developer",
               "--dataset", str(path), "--holdout", "0"]

    shown = subprocess.run(command, capture_output=True, text=True, timeout=300,
                           check=False, env=environ)
    as_json = subprocess.run([*command, "--json"], capture_output=True, text=True,
                             timeout=300, check=False, env=environ)

    error = (f"Error: tune-floor: dataset {path} does not fit the developer index: without a "
             "floor no answered case has an expected source in the top 5 (hit@5 0/3)")
    for run in (shown, as_json):
        assert run.returncode == 2, run.stderr
        assert "Traceback" not in run.stderr
        # The same warning as evaluate documentation's check-expected-labels step.
        assert ("3 expected source label(s) of the dataset are not in the developer index"
                in run.stdout + run.stderr)
        assert run.stderr.strip().splitlines()[-1].startswith(error), run.stderr
    assert "RAGPLATE_MIN_SIMILARITY=" not in shown.stdout
    assert "no floor can be measured" in shown.stdout
    printed = json.loads(as_json.stdout)
    assert (printed["floor"], printed["reason"], printed["absent_labels"]) == (
        None, "no_hit", 3)
    assert printed["all"]["without"]["hits_at_5"] == 0
    assert printed["error"].startswith(error.removeprefix("Error: "))
