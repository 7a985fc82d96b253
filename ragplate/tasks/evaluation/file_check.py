"""``ragplate evaluate check``: validate a dataset or a report file of either evaluation kind.

A file is a *dataset* when its root holds ``cases`` and a *report* when it holds
``metrics`` (documentation, application-content and strategies reports) or
``candidates`` (tuning reports). Its kind is given (``documentation`` or
``application_content``) or read from its shape:

- a documentation dataset has ``index_profile`` at the top and cases carrying
  ``expected_source_labels``; an application-content dataset has ``source`` at the top and
  cases carrying ``expected_hit_ids``;
- a documentation report has ``index_profile``; an application-content, strategies or tuning
  report has ``source``.

A file showing the marks of both kinds, or of neither, is refused with an error naming the
file and what was found, rather than guessed: a guess would report the errors of the wrong
schema. A dataset is then read with
:func:`ragplate.tasks.evaluation.dataset_files.read_dataset` (caps and exact schema;
errors name the case and the field) and checked against its expectation
suite; a report is checked against the suite of its kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragplate.catalog.datasets import (
    ApplicationContentDataset,
    DatasetKind,
    DocumentationDataset,
)
from ragplate.catalog.errors import InvalidInputError
from ragplate.tasks.evaluation.dataset_files import strict_json
from ragplate.tasks.evaluation.expectations import Validation, naming

#: What shows a dataset's kind: keys at the top level, keys inside the cases.
DATASET_MARKS: dict[DatasetKind, tuple[frozenset[str], frozenset[str]]] = {
    "documentation": (frozenset({"index_profile"}), frozenset({"expected_source_labels"})),
    "application_content": (frozenset({"source"}), frozenset({"expected_hit_ids"})),
}
#: What shows a report's kind: keys at the top level.
REPORT_MARKS: dict[DatasetKind, frozenset[str]] = {
    "documentation": frozenset({"index_profile"}),
    "application_content": frozenset({"source"}),
}
_SPOKEN = {"documentation": "documentation", "application_content": "application-content"}


def _marks_found(data: dict[str, Any]) -> dict[DatasetKind, list[str]]:
    """For a dataset, which marks of each kind the file carries (in a stable order)."""
    cases = data.get("cases")
    case_keys: set[str] = set()
    if isinstance(cases, list):
        for case in cases:
            if isinstance(case, dict):
                case_keys.update(str(key) for key in case)
    found: dict[DatasetKind, list[str]] = {}
    for kind, (top, inside) in DATASET_MARKS.items():
        found[kind] = ([key for key in sorted(top) if key in data]
                       + [f"cases[].{key}" for key in sorted(inside) if key in case_keys])
    return found


def file_kind(path: Path, data: dict[str, Any]) -> DatasetKind:
    """The kind of the dataset or report ``data`` read from ``path``, from its shape (see the
    module docstring); raises :class:`InvalidInputError` naming the file when both kinds
    or neither show."""
    what = "dataset" if "cases" in data else "report"
    if what == "dataset":
        found = _marks_found(data)
    else:
        found = {kind: sorted(marks & data.keys()) for kind, marks in REPORT_MARKS.items()}
    kinds = [kind for kind, marks in found.items() if marks]
    if len(kinds) == 1:
        return kinds[0]
    cases = data.get("cases")
    if (what == "dataset" and isinstance(cases, list) and cases
            and isinstance(cases[0], dict) and "expected_surface" in cases[0]):
        # Neither --kind fits it: say what does, rather than offer two wrong choices.
        raise InvalidInputError(f"{path}: an assistant dataset (expected_surface); evaluate "
                                "check reads documentation and application-content files, "
                                "and ragplate evaluate assistant --dataset checks this one "
                                "as it reads it")
    if kinds:
        seen = "; ".join(f"{_SPOKEN[kind]}: {', '.join(found[kind])}" for kind in kinds)
        problem = f"carries the marks of both kinds ({seen})"
    elif what == "dataset":
        problem = ("carries neither index_profile and cases with expected_source_labels "
                   "(documentation) nor source and cases with expected_hit_ids "
                   "(application-content)")
    else:
        problem = ("carries neither index_profile (documentation) nor source "
                   "(application-content)")
    raise InvalidInputError(f"{path}: cannot tell which kind of {what} this is: it {problem}; "
                            "pass --kind documentation or --kind application-content")


@dataclass(frozen=True)
class FileCheck:
    """A passed check: the file, what it is, its kind and the suite that passed."""

    path: Path
    what: Literal["dataset", "report"]
    kind: DatasetKind
    validation: Validation

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` shape."""
        return {"file": str(self.path), "what": self.what, "kind": _SPOKEN[self.kind],
                "passed": True, "suite": self.validation.suite,
                "expectations": self.validation.expectations, "rows": self.validation.rows}


def check_file(path: Path, kind: DatasetKind | None = None) -> FileCheck:
    """Validate the dataset or report at ``path`` as ``kind`` (``None``: from its shape);
    returns the passed check, raises :class:`InvalidInputError` naming the file (a
    :class:`~ragplate.catalog.datasets.DatasetError` or an
    :class:`~ragplate.tasks.evaluation.expectations.ExpectationsFailed`) otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except ValueError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 ({exc})") from exc
    try:
        data: Any = strict_json(text)
    except json.JSONDecodeError as exc:  # worded as the datasets' reader words it
        raise InvalidInputError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: "
                                f"{exc.msg})") from exc
    except ValueError as exc:
        raise InvalidInputError(f"{path}: not JSON ({exc})") from exc
    is_dataset = isinstance(data, dict) and "cases" in data
    is_report = isinstance(data, dict) and ("metrics" in data or "candidates" in data)
    if not (is_dataset or is_report):
        raise InvalidInputError(f"{path}: neither a dataset (cases) nor a report (metrics or "
                                "candidates)")
    kind = kind or file_kind(path, data)
    with naming(path):
        validation = (_check_dataset(path, kind) if is_dataset else _check_report(data, kind))
    return FileCheck(path, "dataset" if is_dataset else "report", kind, validation)


def _check_dataset(path: Path, kind: DatasetKind) -> Validation:
    from ragplate.tasks.evaluation import expectations
    from ragplate.tasks.evaluation.dataset_files import read_dataset

    if kind == "documentation":
        return expectations.validate_documentation_dataset(
            read_dataset(path, DocumentationDataset).data)
    from ragplate.tasks.evaluation.application_content import refuse_filters

    dataset = read_dataset(path, ApplicationContentDataset).data
    refuse_filters(dataset, where=path)  # what the evaluation would refuse, refused here first
    return expectations.validate_application_content_dataset(dataset)


def _check_report(data: dict[str, Any], kind: DatasetKind) -> Validation:
    from ragplate.tasks.evaluation import expectations

    if kind == "documentation":
        return expectations.validate_documentation_report(data)
    # The three application-content reports share ``source``; their own keys tell them apart.
    if "candidates" in data:
        return expectations.validate_tuning_report(data)
    if "reranker" in data:
        return expectations.validate_strategies_report(data)
    return expectations.validate_application_content_report(data)
