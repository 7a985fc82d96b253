"""``ragplate evaluate check`` on both kinds of dataset and report: the kind read from the
file or given with ``--kind``, and errors that name the file, the case and the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragplate.catalog.datasets import DatasetError
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.cli import app
from ragplate.tasks.evaluation.expectations import ExpectationsFailed

DATASETS = PROJECT_ROOT / "datasets"
CONTENT = DATASETS / "application-content-fixture.json"
DOCUMENTATION = DATASETS / "documentation-developer-fixture.json"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def content_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CONTENT.read_text(encoding="utf-8"))
    return data


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_an_application_content_dataset_is_recognised_and_passes(runner: CliRunner) -> None:
    result = runner.invoke(app, ["evaluate", "check", str(CONTENT)])
    assert result.exit_code == 0, result.output
    assert f"{CONTENT}: suite application_content_dataset passed" in result.output
    cases = len(content_data()["cases"])
    assert f"{cases} rows" in result.output

    explicit = runner.invoke(app, ["evaluate", "check", str(CONTENT),
                                   "--kind", "application-content"])
    assert explicit.exit_code == 0, explicit.output
    assert "suite application_content_dataset passed" in explicit.output


def test_documentation_datasets_are_still_recognised(runner: CliRunner) -> None:
    result = runner.invoke(app, ["evaluate", "check", str(DOCUMENTATION)])
    assert result.exit_code == 0, result.output
    assert "suite documentation_dataset passed" in result.output


def test_a_malformed_case_names_the_case_and_the_field(runner: CliRunner,
                                                       tmp_path: Path) -> None:
    data = content_data()
    case = data["cases"][1]
    case["limit"] = "10"  # a quoted number: the format does not coerce
    bad = write(tmp_path / "bad.json", data)

    result = runner.invoke(app, ["evaluate", "check", str(bad)])
    assert result.exit_code != 0
    error = result.exception
    assert isinstance(error, DatasetError)
    assert (error.case_id, error.field) == (case["id"], "limit")
    assert str(error).startswith(f"{bad}: case '{case['id']}', field 'limit'")


@pytest.mark.parametrize(("field", "value"), [
    ("filters", [{"property": "module", "operator": "eq", "value": "x"}]),
    ("tenant", "bad tenant!")])
def test_check_refuses_what_the_evaluation_would_naming_the_file(
        runner: CliRunner, tmp_path: Path, field: str, value: Any) -> None:
    data = content_data()
    case = data["cases"][1]
    case["authorization"][field] = value
    bad = write(tmp_path / "bad.json", data)
    result = runner.invoke(app, ["evaluate", "check", str(bad)])

    error = result.exception
    assert isinstance(error, DatasetError), result.output
    assert (error.case_id, error.field) == (case["id"], f"authorization.{field}")
    assert str(error).startswith(f"{bad}: case '{case['id']}', field 'authorization.{field}'")


@pytest.mark.parametrize(("path", "field", "value"), [
    (CONTENT, "query", "spring\x00sale"),
    (DOCUMENTATION, "query", "backups\x00"),
    (DOCUMENTATION, "expected_source_labels", ["ops/\x00.md"]),
])
def test_text_the_database_cannot_hold_is_refused_naming_case_and_field(
        runner: CliRunner, tmp_path: Path, path: Path, field: str, value: Any) -> None:
    # It passed, then the evaluation counted the case unavailable (InvalidInputError).
    data = json.loads(path.read_text(encoding="utf-8"))
    case = data["cases"][1]
    case[field] = value
    if field == "expected_source_labels":
        case["expected_citation_labels"] = []
    bad = write(tmp_path / "bad.json", data)
    result = runner.invoke(app, ["evaluate", "check", str(bad)])
    error = result.exception
    assert isinstance(error, DatasetError), result.output
    assert (error.case_id, error.field) == (case["id"], field if field == "query"
                                            else f"{field}.0")
    assert str(error).endswith("must not contain a NUL character (U+0000)")
    assert "sale" not in str(error) and "backups" not in str(error)


@pytest.mark.parametrize(("field", "key"), [("expected_hit_ids", "abc"),
                                            ("expected_citation_ids", "007"),
                                            ("expected_hit_ids", "1.5")])
@pytest.mark.parametrize("classification", ["synthetic", "private"])
def test_an_id_whose_key_the_source_cannot_hold_is_refused(
        runner: CliRunner, tmp_path: Path, field: str, key: str,
        classification: str) -> None:
    # cms.contents keys are integers: search never returns such an id, so the case would
    # score a miss in silence.
    data = content_data()
    data["data_classification"] = classification
    case = next(c for c in data["cases"] if c["expected_hit_ids"])
    case[field][0] = f"cms.contents:{key}"
    bad = write(tmp_path / "bad.json", data)
    result = runner.invoke(app, ["evaluate", "check", str(bad)])
    error = result.exception
    assert isinstance(error, DatasetError), result.output
    assert (error.case_id, error.field) == (case["id"], f"{field}.0")
    shown = "an id" if classification == "private" else f"'cms.contents:{key}'"
    assert str(error) == (f"{bad}: case '{case['id']}', field '{field}.0': {shown} is not "
                          "'cms.contents:<record key>' with a bigint key (an integer in its "
                          "plain form, e.g. 42)")


def test_the_command_line_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    data = content_data()
    case = data["cases"][0]
    case["locale"] = "English"
    bad = write(tmp_path / "bad.json", data)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAGPLATE_")}

    result = subprocess.run([sys.executable, "-m", "ragplate", "evaluate", "check", str(bad)],
                            env=environ, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1
    assert lines[0].startswith(f"Error: {bad}: case '{case['id']}', field 'locale': String "
                               "should match pattern")
    assert case["query"] not in result.stderr  # the query may come from a private corpus
    assert "Traceback" not in result.stderr


def test_kind_decides_for_a_file_that_shows_no_kind(runner: CliRunner,
                                                   tmp_path: Path) -> None:
    # An application-content dataset without its marks is checked against the schema
    # --kind names, by field.
    data = content_data()
    del data["source"]
    for case in data["cases"]:
        del case["expected_hit_ids"]
    unmarked = write(tmp_path / "unmarked.json", data)
    result = runner.invoke(app, ["evaluate", "check", str(unmarked),
                                 "--kind", "application-content"])
    assert isinstance(result.exception, DatasetError)
    assert "field 'source': missing key" in str(result.exception)
    assert "field 'expected_hit_ids': missing key" in str(result.exception)


BASELINES = DATASETS / "baselines"


@pytest.mark.parametrize(("path", "kind", "message"), [
    (DOCUMENTATION, "application-content",
     "is a documentation dataset (index_profile, cases[].expected_source_labels), not an "
     "application-content one: leave out --kind, or pass --kind documentation"),
    (CONTENT, "documentation",
     "is an application-content dataset (source, cases[].expected_hit_ids), not a "
     "documentation one: leave out --kind, or pass --kind application-content"),
    (BASELINES / "documentation-user-fixture-vector.json", "application-content",
     "is a documentation report written by `evaluate documentation` (index_profile), not an "
     "application-content one: leave out --kind, or pass --kind documentation"),
    (BASELINES / "retrieval-tuning-fixture.json", "documentation",
     "is a tuning report written by `tune-retrieval` (source), not a documentation one"),
    (BASELINES / "retrieval-strategies-fixture.json", "documentation",
     "is a strategies report written by `evaluate strategies` (source), not a documentation "
     "one"),
    (BASELINES / "application-content-fixture.json", "documentation",
     "is an application-content report written by `evaluate application-content` (source), "
     "not a documentation one"),
], ids=["documentation-dataset", "content-dataset", "documentation-report", "tuning-report",
        "strategies-report", "content-report"])
def test_a_kind_the_file_does_not_show_is_refused_naming_the_file(
        runner: CliRunner, path: Path, kind: str, message: str) -> None:
    result = runner.invoke(app, ["evaluate", "check", str(path), "--kind", kind, "--json"])

    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["error"].startswith(f"{path} {message}")
    assert "missing key" not in out["error"]
    assert (out["passed"], out["suite"], out["failures"]) == (False, None, [])


def per_case_file(tmp_path: Path) -> Path:
    """A per-case file as ``evaluate documentation --cases`` writes it, for the committed
    documentation baseline."""
    from ragplate.tasks.evaluation.cases import case_rows, cases_document
    from ragplate.tasks.evaluation.scoring import CaseOutcome

    report = json.loads((BASELINES / "documentation-developer-fixture-vector.json")
                        .read_text(encoding="utf-8"))
    outcomes = [CaseOutcome(case_id="kw-backup-dir", locale="en", slices=("ops",),
                            ranked=("ops/BACKUPS.md",), relevant=("ops/BACKUPS.md",),
                            citable=("ops/BACKUPS.md",), expect_authorized_empty=False,
                            expect_supported_answer=True, expect_empty=False),
                CaseOutcome(case_id="no-answer", locale="it", slices=(), ranked=(),
                            relevant=(), citable=(), expect_authorized_empty=False,
                            expect_supported_answer=False, expect_empty=True)]
    return write(tmp_path / "cases.json", cases_document(report, case_rows(outcomes)))


WRITTEN_ELSEWHERE = [
    ("assistant-report", lambda _tmp: BASELINES / "assistant-fixture.json",
     "is an assistant report written by `evaluate assistant`; evaluate check reads "
     "documentation and application-content datasets and reports only"),
    *[(f"bench-{name}", lambda _tmp, name=name: PROJECT_ROOT / "reports" / f"bench-{name}.json",
       f"is a benchmark report written by `bench {name}`, not an evaluation dataset or report")
      for name in ("indexing", "switch", "retrieval", "hostile", "assistant")],
    ("bench-fusion", lambda tmp: write(tmp / "bench-fusion.json", {
        "corpus": "docs", "model": "local:x", "depth_chunks": 50, "datasets": {}}),
     "is a benchmark report written by `bench fusion`, not an evaluation dataset or report"),
]


@pytest.mark.parametrize("kind", [None, "documentation", "application-content"])
def test_a_per_case_file_is_named_not_checked(runner: CliRunner, tmp_path: Path,
                                              kind: str | None) -> None:
    path = per_case_file(tmp_path)
    told = ["--kind", kind] if kind else []

    result = runner.invoke(app, ["evaluate", "check", str(path), *told])
    assert isinstance(result.exception, InvalidInputError)
    assert result.exception.exit_code == 2  # the command line's exit code
    assert str(result.exception) == (f"{path} is a per-case file written by `evaluate "
                                     "documentation --cases`, not a dataset or report")

    as_json = runner.invoke(app, ["evaluate", "check", str(path), *told, "--json"])
    assert as_json.exit_code == 2
    assert json.loads(as_json.stdout) == {"file": str(path), "passed": False,
                                          "error": str(result.exception), "suite": None,
                                          "failures": []}


@pytest.mark.parametrize(("name", "made", "message"), WRITTEN_ELSEWHERE,
                         ids=[name for name, _, _ in WRITTEN_ELSEWHERE])
def test_a_report_of_another_command_is_named(runner: CliRunner, tmp_path: Path, name: str,
                                              made: Any, message: str) -> None:
    path = made(tmp_path)
    result = runner.invoke(app, ["evaluate", "check", str(path), "--json"])

    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["error"] == f"{path} {message}"
    assert (out["passed"], out["suite"], out["failures"]) == (False, None, [])


def test_a_file_with_both_kinds_marks_is_refused_unless_kind_says(runner: CliRunner,
                                                                  tmp_path: Path) -> None:
    data = content_data()
    case = data["cases"][2]
    case["expected_source_labels"] = []
    mixed = write(tmp_path / "mixed.json", data)

    guessed = runner.invoke(app, ["evaluate", "check", str(mixed)])
    assert isinstance(guessed.exception, InvalidInputError)
    message = str(guessed.exception)
    assert message.startswith(f"{mixed}: cannot tell which kind of dataset this is")
    assert "documentation: cases[].expected_source_labels" in message
    assert "application-content: source, cases[].expected_hit_ids" in message
    assert "--kind" in message

    told = runner.invoke(app, ["evaluate", "check", str(mixed),
                               "--kind", "application-content"])
    assert isinstance(told.exception, DatasetError)
    assert (told.exception.case_id, told.exception.field) == (case["id"],
                                                              "expected_source_labels")
    assert "unknown key" in str(told.exception)


def test_a_dataset_of_no_known_kind_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    unknown = write(tmp_path / "unknown.json", {"version": "1", "cases": [{"id": "a"}]})
    result = runner.invoke(app, ["evaluate", "check", str(unknown)])
    assert isinstance(result.exception, InvalidInputError)
    assert str(result.exception).startswith(f"{unknown}: cannot tell which kind of dataset")
    assert "neither" in str(result.exception)

    not_json = tmp_path / "list.json"
    not_json.write_text("[]", encoding="utf-8")
    result = runner.invoke(app, ["evaluate", "check", str(not_json)])
    assert str(result.exception).startswith(f"{not_json}: neither a dataset")


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot be read (No such file or directory)"),
    (b"{", "not JSON (line 1, column 2: Expecting property name"),
    (b'{"cases": [], "cases": []}', "key 'cases' appears twice"),
    (b"\xff{}", "not UTF-8"),
    (b'{"cases": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "JSON nested deeper than 32"),
    (b'{"cases": ' + b"[" * 40 + b"]" * 40 + b"}", "JSON nested deeper than 32"),
])
def test_an_unreadable_file_says_why(runner: CliRunner, tmp_path: Path,
                                     content: bytes | None, message: str) -> None:
    path = tmp_path / "file.json"
    if content is not None:
        path.write_bytes(content)

    result = runner.invoke(app, ["evaluate", "check", str(path)])

    assert isinstance(result.exception, InvalidInputError)
    assert str(result.exception).startswith(f"{path}: {message}")


def test_unknown_kind_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(app, ["evaluate", "check", str(CONTENT), "--kind", "cms"])
    assert result.exit_code == 2
    assert "documentation" in result.output and "application-content" in result.output


@pytest.mark.parametrize(("name", "suite"), [
    ("application-content-fixture.json", "application_content_report"),
    ("retrieval-strategies-fixture.json", "retrieval_strategies_report"),
    ("retrieval-tuning-fixture.json", "retrieval_tuning_report"),
    ("documentation-user-fixture-vector.json", "documentation_report"),
])
def test_reports_are_checked_with_the_suite_of_their_kind(runner: CliRunner, name: str,
                                                          suite: str) -> None:
    result = runner.invoke(app, ["evaluate", "check", str(DATASETS / "baselines" / name)])
    assert result.exit_code == 0, result.output
    assert f"suite {suite} passed" in result.output


def _drop(report: dict[str, Any], *path: Any) -> None:
    block: Any = report
    for step in path[:-1]:
        block = block[step]
    del block[path[-1]]


@pytest.mark.parametrize(("name", "path", "named"), [
    ("documentation-user-fixture-vector.json", ("metrics", "source_hit_at_k"),
     "metrics lacks source_hit_at_k"),
    ("documentation-user-fixture-vector.json", ("slices", "locale", "en", "ndcg_at_5"),
     "slices.locale.en lacks ndcg_at_5"),
    ("application-content-fixture.json", ("metrics", "abstention_accuracy"),
     "metrics lacks abstention_accuracy"),
    ("retrieval-strategies-fixture.json", ("metrics", "hybrid", "recall_at_3"),
     "metrics.hybrid lacks recall_at_3"),
    ("retrieval-tuning-fixture.json", ("candidates", 1, "metrics", "hit_at_5"),
     "candidates[1].metrics lacks hit_at_5"),
])
def test_a_report_lacking_a_metric_of_its_kind_is_refused(
        runner: CliRunner, tmp_path: Path, name: str, path: tuple[Any, ...],
        named: str) -> None:
    # The writer always sets every metric of its kind; the suites check the figures
    # present, so a missing one passed.
    report = json.loads((BASELINES / name).read_text(encoding="utf-8"))
    _drop(report, *path)
    bad = write(tmp_path / "report.json", report)
    result = runner.invoke(app, ["evaluate", "check", str(bad)])
    assert isinstance(result.exception, InvalidInputError), result.output
    assert str(result.exception).startswith(f"{bad}: {named}")


@pytest.mark.parametrize("name", ["documentation-user-fixture-vector.json",
                                  "application-content-fixture.json"])
def test_a_report_carrying_text_is_refused_as_the_writer_would(
        runner: CliRunner, tmp_path: Path, name: str) -> None:
    report = json.loads((BASELINES / name).read_text(encoding="utf-8"))
    report["query"] = "leak"
    bad = write(tmp_path / "report.json", report)
    result = runner.invoke(app, ["evaluate", "check", str(bad)])
    assert isinstance(result.exception, InvalidInputError), result.output
    assert str(result.exception) == (f"{bad}: report.query: a report never carries text "
                                     "or content")
    assert "leak" not in result.output


def bad_content_report(tmp_path: Path) -> Path:
    """The committed application-content baseline with a hit@5 out of range."""
    report = json.loads((DATASETS / "baselines" / "application-content-fixture.json")
                        .read_text(encoding="utf-8"))
    report["metrics"]["hit_at_5"] = 1.5
    return write(tmp_path / "report.json", report)


def test_a_bad_application_content_report_names_the_expectation(runner: CliRunner,
                                                                tmp_path: Path) -> None:
    bad = bad_content_report(tmp_path)
    result = runner.invoke(app, ["evaluate", "check", str(bad)])
    assert isinstance(result.exception, ExpectationsFailed)
    assert result.exception.suite == "application_content_report"
    assert result.exception.where == str(bad)
    assert str(result.exception).startswith(
        f"{bad}: expectation suite 'application_content_report' failed")
    assert "expect_column_values_to_be_between" in str(result.exception)


def test_json_output_of_a_passed_check(runner: CliRunner) -> None:
    result = runner.invoke(app, ["evaluate", "check", str(CONTENT), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out.pop("expectations") > 0
    assert out == {"file": str(CONTENT), "what": "dataset", "kind": "application-content",
                   "passed": True, "suite": "application_content_dataset",
                   "rows": len(content_data()["cases"])}

    report = DATASETS / "baselines" / "documentation-user-fixture-vector.json"
    checked = json.loads(runner.invoke(app, ["evaluate", "check", str(report),
                                             "--json"]).stdout)
    assert (checked["what"], checked["kind"], checked["suite"]) == (
        "report", "documentation", "documentation_report")


def test_json_output_of_a_failed_check_keeps_the_exit_code(runner: CliRunner,
                                                           tmp_path: Path) -> None:
    bad = bad_content_report(tmp_path)
    result = runner.invoke(app, ["evaluate", "check", str(bad), "--json"])
    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["passed"] is False and out["file"] == str(bad)
    assert out["suite"] == "application_content_report"
    assert any("expect_column_values_to_be_between" in f and "[1.5]" in f
               for f in out["failures"])
    assert out["error"].startswith(f"{bad}: expectation suite")

    data = content_data()
    del data["cases"][0]["query"]
    malformed = write(tmp_path / "dataset.json", data)
    refused = runner.invoke(app, ["evaluate", "check", str(malformed), "--json"])
    assert refused.exit_code == 2
    out = json.loads(refused.stdout)
    assert out["passed"] is False and out["suite"] is None and out["failures"] == []
    assert "field 'query'" in out["error"] and str(malformed) in out["error"]


@pytest.mark.parametrize("kind", [None, "documentation", "application-content"])
def test_an_assistant_dataset_is_told_where_it_is_checked(runner: CliRunner,
                                                          kind: str | None) -> None:
    path = DATASETS / "assistant-fixture.json"
    told = ["--kind", kind] if kind else []
    result = runner.invoke(app, ["evaluate", "check", str(path), *told])

    assert result.exit_code != 0
    assert str(result.exception).startswith(f"{path}: an assistant dataset")
    assert "ragplate evaluate assistant --dataset" in str(result.exception)
