"""The dataset reader: public datasets load unchanged; every cap and every wrong field is
refused naming the case and the field; private datasets stay outside the project."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ragplate.catalog.datasets import (
    MAX_CASES,
    ApplicationContentDataset,
    DatasetError,
    DocumentationDataset,
)
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.tasks.evaluation.dataset_files import json_depth, read_dataset
from tests.conftest import LARAPLATE_BENCHMARKS

PUBLIC = {"2026-08-documentation-user.json": 5, "2026-09-17-developer-core-baseline.json": 13,
          "2026-09-18-developer-retrieval.json": 20}


def case(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "c-1", "query": "how do I export?", "locale": "en", "top_k": 5,
        "expected_source_labels": ["a.md"], "expected_citation_labels": ["a.md"],
        "expect_authorized_empty": False, "expect_supported_answer": True,
        "expect_refusal": False, "slices": ["export"], "tenant_scope": "global",
        "tenant_id": None, "effective_permissions": [],
    }
    return {**base, **overrides}


def dataset(*cases: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"version": "1", "corpus_revision": "r-1", "module": "core",
                            "index_profile": "developer", "data_classification": "synthetic",
                            "cases": list(cases) or [case()]}
    return {**base, **overrides}


def write(tmp_path: Path, data: Any, name: str = "d.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "count"), sorted(PUBLIC.items()))
def test_public_datasets_load_unchanged(name: str, count: int) -> None:
    path = LARAPLATE_BENCHMARKS / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    before = path.read_bytes()
    loaded = read_dataset(path, DocumentationDataset)
    assert len(loaded.data.cases) == count
    assert path.read_bytes() == before
    raw = json.loads(before)
    assert [c.id for c in loaded.data.cases] == [c["id"] for c in raw["cases"]]
    assert loaded.data.model_dump(exclude={"description"}, exclude_none=False)["cases"] == \
        raw["cases"]


def test_the_switch_gate_dataset_loads_with_its_description() -> None:
    loaded = read_dataset(PROJECT_ROOT / "datasets" / "switch-gate-docs.json",
                          DocumentationDataset)
    assert loaded.data.description


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"id": "Bad Id"}, "id", "pattern"),
        ({"query": "   "}, "query", "pattern"),
        ({"query": "x" * 2001}, "query", "at most 2000"),
        ({"locale": "english"}, "locale", "pattern"),
        ({"top_k": 0}, "top_k", "greater than or equal to 1"),
        ({"top_k": 11}, "top_k", "less than or equal to 10"),
        ({"top_k": "5"}, "top_k", "valid integer"),
        ({"top_k": True}, "top_k", "valid integer"),
        ({"expected_source_labels": "a.md"}, "expected_source_labels", "valid list"),
        ({"expected_source_labels": [""]}, "expected_source_labels.0", "at least 1"),
        ({"expected_citation_labels": ["x" * 201]}, "expected_citation_labels.0", "at most"),
        ({"expect_refusal": "no"}, "expect_refusal", "valid boolean"),
        ({"expect_authorized_empty": 0}, "expect_authorized_empty", "valid boolean"),
        ({"expect_supported_answer": None}, "expect_supported_answer", "valid boolean"),
        ({"slices": ["Not A Slug"]}, "slices.0", "pattern"),
        ({"tenant_scope": "tenants"}, "tenant_scope", "'global' or 'tenant'"),
        ({"tenant_id": 7}, "tenant_id", "valid string"),
        ({"effective_permissions": [1]}, "effective_permissions.0", "valid string"),
        ({"surprise": 1}, "surprise", "unknown key"),
    ],
)
def test_a_wrong_field_is_refused_naming_case_and_field(
    tmp_path: Path, change: dict[str, Any], field: str, reason: str
) -> None:
    bad = case(id="c-bad", **{k: v for k, v in change.items() if k != "id"})
    if "id" in change:
        bad["id"] = change["id"]
    path = write(tmp_path, dataset(case(), bad))
    with pytest.raises(DatasetError) as info:
        read_dataset(path, DocumentationDataset)
    message = str(info.value)
    named = "case '#2'" if "id" in change else "case 'c-bad'"  # the second, from 1
    assert f"{named}, field '{field}'" in message
    assert reason in message
    assert info.value.field == field
    assert "how do I export" not in message  # queries are never quoted


@pytest.mark.parametrize("missing", ["query", "locale", "top_k", "tenant_id", "slices"])
def test_a_missing_key_is_refused(tmp_path: Path, missing: str) -> None:
    bad = case(id="c-2")
    del bad[missing]
    with pytest.raises(DatasetError, match=f"case 'c-2', field '{missing}': missing key"):
        read_dataset(write(tmp_path, dataset(bad)), DocumentationDataset)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"tenant_scope": "global", "tenant_id": "acme"}, "tenant_id must be null"),
        ({"tenant_scope": "tenant", "tenant_id": None}, "tenant_id is required"),
        ({"expect_refusal": True, "expect_supported_answer": False}, "empty answer"),
        ({"expect_authorized_empty": True}, "empty answer"),
        ({"expected_source_labels": ["a.md", "a.md"]}, "same value twice"),
    ],
)
def test_inconsistent_cases_are_refused(tmp_path: Path, change: dict[str, Any],
                                        reason: str) -> None:
    with pytest.raises(DatasetError, match=f"case 'c-3'.*{reason}"):
        read_dataset(write(tmp_path, dataset(case(id="c-3", **change))), DocumentationDataset)


@pytest.mark.parametrize(
    ("change", "field"),
    [({"version": "1 beta"}, "version"), ({"module": "Core"}, "module"),
     ({"index_profile": "admin"}, "index_profile"),
     ({"data_classification": "public"}, "data_classification"),
     ({"cases": []}, "cases"), ({"extra": True}, "extra")],
)
def test_wrong_dataset_fields_are_refused(tmp_path: Path, change: dict[str, Any],
                                          field: str) -> None:
    with pytest.raises(DatasetError, match=f"dataset, field '{field}'"):
        read_dataset(write(tmp_path, dataset(**change)), DocumentationDataset)


def test_duplicate_case_ids_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="same value twice"):
        read_dataset(write(tmp_path, dataset(case(), case())), DocumentationDataset)


def test_a_key_given_twice_in_one_object_is_refused(tmp_path: Path) -> None:
    text = json.dumps(dataset()).replace('"query": "how do I export?"',
                                         '"query": "how do I export?", "query": "other"')
    path = tmp_path / "dup.json"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(DatasetError, match=r"dup\.json: key 'query' appears twice"):
        read_dataset(path, DocumentationDataset)


def test_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many = dataset(*[case(id=f"c-{i}") for i in range(MAX_CASES + 1)])
    with pytest.raises(DatasetError, match="1001 cases, above the cap of 1000"):
        read_dataset(write(tmp_path, many), DocumentationDataset)
    deep: Any = "x"
    for _ in range(40):
        deep = [deep]
    with pytest.raises(DatasetError, match="nested deeper than 32"):
        read_dataset(write(tmp_path, dataset(deep=deep)), DocumentationDataset)
    path = write(tmp_path, dataset())
    monkeypatch.setattr("ragplate.tasks.evaluation.dataset_files.MAX_FILE_BYTES", 100)
    with pytest.raises(DatasetError, match="above the cap of 100"):
        read_dataset(path, DocumentationDataset)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot be read"):
        read_dataset(tmp_path / "missing.json", DocumentationDataset)
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(DatasetError, match="not JSON"):
        read_dataset(tmp_path / "bad.json", DocumentationDataset)
    (tmp_path / "list.json").write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetError, match="root must be a JSON object"):
        read_dataset(tmp_path / "list.json", DocumentationDataset)


def test_json_depth() -> None:
    assert json_depth(1) == 0
    assert json_depth([]) == 1
    assert json_depth({"a": [{"b": 1}]}) == 3


def test_a_private_dataset_is_refused_inside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "datasets").mkdir(parents=True)
    private = write(project / "datasets", dataset(data_classification="private"))
    with pytest.raises(DatasetError, match="private dataset must be kept outside"):
        read_dataset(private, DocumentationDataset, project=project)
    # A link from outside the project to the file inside it changes nothing.
    link = tmp_path / "outside.json"
    link.symlink_to(private)
    with pytest.raises(DatasetError, match="outside the project"):
        read_dataset(link, DocumentationDataset, project=project)
    # Nor does a link to a directory inside the project.
    (tmp_path / "dir-link").symlink_to(project / "datasets")
    with pytest.raises(DatasetError, match="outside the project"):
        read_dataset(tmp_path / "dir-link" / "d.json", DocumentationDataset, project=project)
    outside = write(tmp_path, dataset(data_classification="private"), "private.json")
    assert read_dataset(outside, DocumentationDataset, project=project).data.cases


def test_the_real_project_refuses_a_private_dataset(tmp_path: Path) -> None:
    inside = PROJECT_ROOT / "datasets" / ".test-private.json"
    try:
        inside.write_text(json.dumps(dataset(data_classification="private")), encoding="utf-8")
        link = tmp_path / "link.json"
        link.symlink_to(inside)
        with pytest.raises(DatasetError, match="outside the project"):
            read_dataset(link, DocumentationDataset)
    finally:
        inside.unlink(missing_ok=True)


APP_CASE: dict[str, Any] = {
    "id": "refund", "query": "refund policy", "locale": "en", "limit": 10,
    "expected_hit_ids": ["cms.contents:12"], "expected_citation_ids": ["cms.contents:12"],
    "expect_authorized_empty": False, "expect_supported_answer": True,
    "expect_abstention": False, "slices": ["policy"],
    "authorization": {"tenant": None, "permissions": ["cms.read"],
                      "filters": [{"property": "status", "operator": "eq",
                                   "value": "published"}]},
}


def app_dataset(*cases: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    base = {"version": "1", "source": "cms.contents", "corpus_revision": "seed-1",
            "data_classification": "synthetic", "cases": list(cases) or [APP_CASE]}
    return {**base, **overrides}


def test_application_content_dataset(tmp_path: Path) -> None:
    loaded = read_dataset(write(tmp_path, app_dataset()), ApplicationContentDataset)
    assert loaded.data.cases[0].expected_hit_ids == ["cms.contents:12"]
    assert loaded.data.cases[0].authorization.filters is not None


@pytest.mark.parametrize(
    ("change", "expected"),
    [({"limit": 51}, "field 'limit'"), ({"expected_hit_ids": ["sao.tickets:1"]},
                                         "field 'expected_hit_ids'"),
     ({"authorization": {"tenant": None, "permissions": []}}, "field 'authorization.filters'"),
     # A tenant no person can belong to: refused when read, not scored as unavailable.
     ({"authorization": {"tenant": "bad tenant!", "permissions": [], "filters": None}},
      "field 'authorization.tenant'"),
     ({"expect_abstention": True}, "case 'bad'"), ({"query": 3}, "field 'query'")],
)
def test_application_content_refusals(tmp_path: Path, change: dict[str, Any],
                                      expected: str) -> None:
    bad = copy.deepcopy({**APP_CASE, "id": "bad", **change})
    with pytest.raises(DatasetError, match=expected) as info:
        read_dataset(write(tmp_path, app_dataset(APP_CASE, bad)), ApplicationContentDataset)
    assert "bad" in str(info.value)
