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
schema. A ``--kind`` is for such a file: given for a file whose marks show the other kind
alone, it is refused naming what the file is.

Files other commands write that this check does not read are named by top-level keys their
writer always sets and no dataset or checked report carries
(:data:`ragplate.tasks.evaluation.file_kinds.OTHER_FILES`): the per-case file of
``evaluate documentation --cases``, the assistant's report and the benchmarks' figures;
so is an assistant dataset (cases carrying ``expected_surface``).
Such a file is refused naming what it is, rather than with the missing keys of a schema
it was never meant to have. A dataset is then read with
:func:`ragplate.tasks.evaluation.dataset_files.read_dataset` (caps and exact schema;
errors name the case and the field) and checked against its expectation
suite; a report is checked against the suite of its kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragplate.catalog.datasets import (
    ApplicationContentDataset,
    DatasetKind,
    DocumentationDataset,
)
from ragplate.catalog.errors import InvalidInputError
from ragplate.tasks.evaluation.dataset_files import read_json
from ragplate.tasks.evaluation.expectations import Validation, naming
from ragplate.tasks.evaluation.file_kinds import (
    ARTICLE,
    SPOKEN,
    found_marks,
    other_file,
    report_name,
)

#: The largest file checked: a dataset's cap, with room for a tuning report's candidates.
MAX_CHECKED_BYTES = 10_000_000


def refuse_other_kind(path: Path, data: dict[str, Any], kind: DatasetKind) -> None:
    """Refuse ``kind`` (a ``--kind``) for a file whose marks show the other kind alone,
    naming what the file is; a file showing both kinds or neither is left to ``kind``."""
    what, found = found_marks(data)
    kinds = [shown for shown, marks in found.items() if marks]
    if len(kinds) != 1 or kinds[0] == kind:
        return
    shown = kinds[0]
    named = (f"{ARTICLE[shown]} {SPOKEN[shown]} dataset" if what == "dataset"
             else report_name(data, shown))
    raise InvalidInputError(f"{path} is {named} ({', '.join(found[shown])}), not "
                            f"{ARTICLE[kind]} {SPOKEN[kind]} one: leave out --kind, or pass "
                            f"--kind {SPOKEN[shown]}")


def _refuse_assistant_dataset(path: Path, data: dict[str, Any],
                              kinds: list[DatasetKind]) -> None:
    cases = data.get("cases")
    if (len(kinds) != 1 and isinstance(cases, list) and cases
            and isinstance(cases[0], dict) and "expected_surface" in cases[0]):
        # Neither --kind fits it: say what does, rather than offer two wrong choices.
        raise InvalidInputError(f"{path}: an assistant dataset (expected_surface); evaluate "
                                "check reads documentation and application-content files, "
                                "and ragplate evaluate assistant --dataset checks this one "
                                "as it reads it")


def file_kind(path: Path, data: dict[str, Any]) -> DatasetKind:
    """The kind of the dataset or report ``data`` read from ``path``, from its shape (see the
    module docstring); raises :class:`InvalidInputError` naming the file when both kinds
    or neither show."""
    what, found = found_marks(data)
    kinds = [kind for kind, marks in found.items() if marks]
    if len(kinds) == 1:
        return kinds[0]
    if kinds:
        seen = "; ".join(f"{SPOKEN[kind]}: {', '.join(found[kind])}" for kind in kinds)
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
        return {"file": str(self.path), "what": self.what, "kind": SPOKEN[self.kind],
                "passed": True, "suite": self.validation.suite,
                "expectations": self.validation.expectations, "rows": self.validation.rows}


def check_file(path: Path, kind: DatasetKind | None = None) -> FileCheck:
    """Validate the dataset or report at ``path`` as ``kind`` (``None``: from its shape);
    returns the passed check, raises :class:`InvalidInputError` naming the file (a
    :class:`~ragplate.catalog.datasets.DatasetError` or an
    :class:`~ragplate.tasks.evaluation.expectations.ExpectationsFailed`) otherwise."""
    data: Any = read_json(path, max_bytes=MAX_CHECKED_BYTES)[1]
    other = other_file(data) if isinstance(data, dict) else None
    if other is not None:
        raise InvalidInputError(f"{path} is {other}")
    is_dataset = isinstance(data, dict) and "cases" in data
    is_report = isinstance(data, dict) and ("metrics" in data or "candidates" in data)
    if not (is_dataset or is_report):
        raise InvalidInputError(f"{path}: neither a dataset (cases) nor a report (metrics or "
                                "candidates)")
    if is_dataset:
        _refuse_assistant_dataset(path, data, [k for k, m in found_marks(data)[1].items() if m])
    if kind is None:
        kind = file_kind(path, data)
    else:
        refuse_other_kind(path, data, kind)
    if not is_dataset:
        _refuse_unwritten_report(path, data, kind)
    with naming(path):
        validation = (_check_dataset(path, kind) if is_dataset else _check_report(data, kind))
    return FileCheck(path, "dataset" if is_dataset else "report", kind, validation)


def _check_dataset(path: Path, kind: DatasetKind) -> Validation:
    from ragplate.tasks.evaluation import expectations
    from ragplate.tasks.evaluation.dataset_files import read_dataset

    if kind == "documentation":
        return expectations.validate_documentation_dataset(
            read_dataset(path, DocumentationDataset).data)
    from ragplate.catalog.entities import SHIPPED
    from ragplate.tasks.evaluation.application_content import (
        refuse_filters,
        refuse_unholdable_ids,
    )

    dataset = read_dataset(path, ApplicationContentDataset).data
    refuse_filters(dataset, where=path)  # what the evaluation would refuse, refused here first
    entity = SHIPPED.get(dataset.source)  # a shipped entity's key type is known offline
    if entity is not None:
        refuse_unholdable_ids(dataset, entity, where=path)
    return expectations.validate_application_content_dataset(dataset)


def _metric_blocks(data: dict[str, Any], kind: DatasetKind
                   ) -> tuple[tuple[str, ...], list[tuple[str, Any]]]:
    """The metric keys every block of the report ``data`` carries, and its blocks by where
    they are: ``metrics`` and each slice (documentation, application content), each
    ordering (strategies), the committed profile and each candidate (tuning)."""
    from ragplate.tasks.evaluation.scoring import (
        APPLICATION_CONTENT_KEYS,
        DOCUMENTATION_KEYS,
        RANK_KEYS,
    )
    from ragplate.tasks.evaluation.strategies import IR_KEYS

    if kind == "documentation" or not ("candidates" in data or "reranker" in data):
        keys = (*(DOCUMENTATION_KEYS if kind == "documentation"
                  else APPLICATION_CONTENT_KEYS), *RANK_KEYS)
        blocks: list[tuple[str, Any]] = [("metrics", data.get("metrics"))]
        slices = data.get("slices")
        if isinstance(slices, dict):
            blocks += [(f"slices.{group}.{name}", block)
                       for group, named in slices.items() if isinstance(named, dict)
                       for name, block in named.items()]
        return keys, blocks
    if "candidates" in data:
        candidates = data.get("candidates")
        committed = data.get("committed")
        blocks = ([("committed.metrics", committed.get("metrics"))]
                  if isinstance(committed, dict) else [("committed", committed)])
        if isinstance(candidates, list):
            blocks += [(f"candidates[{index}].metrics",
                        candidate.get("metrics") if isinstance(candidate, dict) else None)
                       for index, candidate in enumerate(candidates)]
        return IR_KEYS, blocks
    metrics = data.get("metrics")
    if not isinstance(metrics, dict):
        return IR_KEYS, [("metrics", metrics)]
    return IR_KEYS, [(f"metrics.{name}", block) for name, block in metrics.items()]


def _refuse_unwritten_report(path: Path, data: dict[str, Any], kind: DatasetKind) -> None:
    """Refuse a report its writer would never produce, in one line naming the file: one
    holding a key that carries text or content (the writer's own check,
    :func:`ragplate.tasks.evaluation.reports.assert_no_content`), or one whose metric
    block lacks a metric of its kind (the suites check the figures present, not the
    figures absent)."""
    from ragplate.tasks.evaluation.reports import assert_no_content

    try:
        assert_no_content(data)
    except ValueError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    keys, blocks = _metric_blocks(data, kind)
    for where, block in blocks:
        if not isinstance(block, dict):
            raise InvalidInputError(f"{path}: {where}: not an object of metrics")
        missing = [key for key in keys if key not in block]
        if missing:
            raise InvalidInputError(
                f"{path}: {where} lacks {', '.join(missing)}: every report of its kind "
                "carries each of its metrics")


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
