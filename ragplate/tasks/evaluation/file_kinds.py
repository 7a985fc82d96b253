"""What an evaluation file is, told by its marks alone: the keys that show a dataset's or
a report's kind, and the top-level keys of the files other commands write.

Shared by ``ragplate evaluate check`` (:mod:`ragplate.tasks.evaluation.file_check`) and the
dataset reader (:mod:`ragplate.tasks.evaluation.dataset_files`), which names a file of
another kind for what it is rather than list the fields of a schema it never had. It
imports nothing of the evaluation, so both can use it.
"""

from __future__ import annotations

from typing import Any, Literal

from ragplate.catalog.datasets import DatasetKind

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
SPOKEN = {"documentation": "documentation", "application_content": "application-content"}
ARTICLE = {"documentation": "a", "application_content": "an"}
_NOT_READ = "not an evaluation dataset or report"
#: Files other commands write, each told by top-level keys its writer always sets (all of
#: them must be present), with what the error says the file is.
OTHER_FILES: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"cases", "failing", "case_count", "retrieval"}),
     "a per-case file written by `evaluate documentation --cases`, not a dataset or report"),
    (frozenset({"metrics", "level", "guardrails", "completion"}),
     "an assistant report written by `evaluate assistant`; evaluate check reads "
     "documentation and application-content datasets and reports only"),
    (frozenset({"pipeline_to_raw_ratio", "unchanged_whole_process"}),
     f"a benchmark report written by `bench indexing`, {_NOT_READ}"),
    (frozenset({"switch_to_raw_ratio", "rework_after_kill"}),
     f"a benchmark report written by `bench switch`, {_NOT_READ}"),
    (frozenset({"recipes", "baseline"}),
     f"a benchmark report written by `bench retrieval`, {_NOT_READ}"),
    (frozenset({"depth_chunks", "datasets"}),
     f"a benchmark report written by `bench fusion`, {_NOT_READ}"),
    (frozenset({"runs", "time_ratio_indexable_vs_clean"}),
     f"a benchmark report written by `bench hostile`, {_NOT_READ}"),
    (frozenset({"screening_rules", "screening", "help_process"}),
     f"a benchmark report written by `bench assistant`, {_NOT_READ}"),
)


def _dataset_marks(data: dict[str, Any]) -> dict[DatasetKind, list[str]]:
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


def other_file(data: dict[str, Any]) -> str | None:
    """What ``data`` is when it is a file of :data:`OTHER_FILES` (the first whose keys it
    all carries), or ``None``."""
    for keys, what in OTHER_FILES:
        if keys <= data.keys():
            return what
    return None


#: What each reader calls for, by the kind of file (:func:`what_it_is`).
READ_BY = {"documentation": "ragplate evaluate documentation",
           "application_content": "ragplate evaluate application-content",
           "assistant": "ragplate evaluate assistant"}


def what_it_is(data: dict[str, Any]) -> tuple[str, str] | None:
    """What the file ``data`` is, by its marks alone, as ``(kind, description)``: an
    assistant dataset (``kind`` ``assistant``), a documentation or application-content
    dataset or report showing one kind, or a file of :data:`OTHER_FILES` (``other``);
    ``None`` when the marks do not tell. For a reader given a file of another kind, which
    says what the file is rather than list the fields of a schema it never had."""
    other = other_file(data)
    if other is not None:
        return "other", other
    cases = data.get("cases")
    if (isinstance(cases, list) and cases and isinstance(cases[0], dict)
            and "expected_surface" in cases[0]):
        return "assistant", "an assistant dataset (cases[].expected_surface)"
    if "cases" not in data and not ("metrics" in data or "candidates" in data):
        return None
    what, found = found_marks(data)
    kinds = [kind for kind, marks in found.items() if marks]
    if len(kinds) != 1:
        return None
    kind = kinds[0]
    named = (f"{ARTICLE[kind]} {SPOKEN[kind]} dataset" if what == "dataset"
             else report_name(data, kind))
    return (kind if what == "dataset" else "other"), f"{named} ({', '.join(found[kind])})"


def found_marks(data: dict[str, Any]) -> tuple[Literal["dataset", "report"],
                                           dict[DatasetKind, list[str]]]:
    """Whether ``data`` is a dataset or a report, and the marks of each kind it carries."""
    if "cases" in data:
        return "dataset", _dataset_marks(data)
    return "report", {kind: sorted(marks & data.keys()) for kind, marks in REPORT_MARKS.items()}


def report_name(data: dict[str, Any], kind: DatasetKind) -> str:
    """The report ``data`` of ``kind``, named by the command that writes it."""
    if kind == "documentation":
        return "a documentation report written by `evaluate documentation`"
    if "candidates" in data:
        return "a tuning report written by `tune-retrieval`"
    if "reranker" in data:
        return "a strategies report written by `evaluate strategies`"
    return "an application-content report written by `evaluate application-content`"
