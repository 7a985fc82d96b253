"""The one reader of evaluation datasets: bounded file, bounded JSON, exact schema.

Every evaluation (documentation, application content, strategies, tuning) reads its dataset
through :func:`read_dataset`, so the caps and the wording of the errors are the same
everywhere. Errors name the file, the case (by id, or by position when the id itself is
bad) and the field; they never quote the query, which may come from a private corpus.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

from pydantic import BaseModel, ValidationError

from ragplate.catalog.assistant_datasets import AssistantDataset
from ragplate.catalog.datasets import (
    CASE_ID_PATTERN,
    DATASET_MODELS,
    MAX_CASES,
    MAX_FILE_BYTES,
    MAX_JSON_DEPTH,
    ApplicationContentDataset,
    DatasetError,
    DatasetKind,
    DocumentationDataset,
)
from ragplate.catalog.errors import validation_message
from ragplate.catalog.settings import PROJECT_ROOT

D = TypeVar("D", bound=BaseModel)
_MAX_REPORTED = 5


@dataclass(frozen=True)
class LoadedDataset(Generic[D]):
    """A validated dataset with where it came from and the hash of its bytes (a report
    cites the hash, so whoever holds the file can check it is the one measured)."""

    path: Path
    sha256: str
    data: D


def json_depth(value: Any) -> int:
    """Nesting depth of decoded JSON: a scalar is 0, ``[]`` and ``{}`` are 1."""
    depth, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            depth = max(depth, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            depth = max(depth, level)
            stack.extend((v, level + 1) for v in item)
    return depth


def refuse_private_inside(path: Path, project: Path = PROJECT_ROOT) -> None:
    """A private dataset must live outside the project, where it cannot be committed.

    Both paths are resolved first, so a link from outside to a file inside the project
    (or a link inside pointing out) is judged by where the bytes really are.
    """
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(project))
    if real == root or root in real.parents:
        raise DatasetError(f"{path}: a private dataset must be kept outside the project "
                           f"directory ({root}), so it cannot be committed", field="path")


class DuplicateKeyError(ValueError):
    """A JSON object naming one key twice (``json`` would keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKeyError(f"key {key!r} appears twice in one object")
        obj[key] = value
    return obj


def strict_json(text: str) -> Any:
    """``json.loads`` refusing an object with a duplicate key (:class:`DuplicateKeyError`):
    datasets have exact keys, and a second ``query`` would silently replace the first."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def read_json(path: Path, *, max_bytes: int | None = None,
              name: str | None = None) -> tuple[bytes, Any]:
    """The bytes and decoded JSON of the file at ``path``, read as datasets are: at most
    ``max_bytes`` bytes (:data:`MAX_FILE_BYTES` by default), UTF-8, no key twice in one
    object, nested at most :data:`MAX_JSON_DEPTH` levels. Raises :class:`DatasetError`
    naming ``name`` (the path when none is given)."""
    label = name or str(path)
    max_bytes = MAX_FILE_BYTES if max_bytes is None else max_bytes
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise DatasetError(f"{label}: {size} bytes, above the cap of {max_bytes}")
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{label}: cannot be read ({exc.strerror or exc})") from exc
    if len(raw) > max_bytes:  # the file grew between stat and read
        raise DatasetError(f"{label}: above the cap of {max_bytes} bytes")
    deep = DatasetError(f"{label}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        data = strict_json(raw.decode("utf-8"))
    except DuplicateKeyError as exc:
        raise DatasetError(f"{label}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{label}: not UTF-8 (byte {exc.start})") from exc
    except RecursionError as exc:
        raise deep from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{label}: not JSON (line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg})") from exc
    if json_depth(data) > MAX_JSON_DEPTH:
        raise deep
    return raw, data


def _case_name(data: dict[str, Any], position: int) -> str:
    cases = data.get("cases")
    case = cases[position] if isinstance(cases, list) and position < len(cases) else None
    case_id = case.get("id") if isinstance(case, dict) else None
    # A bad id is named by position: it is not known to be a harmless slug.
    if isinstance(case_id, str) and re.fullmatch(CASE_ID_PATTERN, case_id):
        return case_id
    return f"#{position + 1}"  # counted from 1, as a person counts the cases


def _explain(path: Path, data: dict[str, Any], error: ValidationError) -> DatasetError:
    """One line per problem: ``case 'x', field 'locale': reason``."""
    lines: list[str] = []
    first_case: str | None = None
    first_field: str | None = None
    for item in error.errors()[:_MAX_REPORTED]:
        loc = list(item["loc"])
        where = "dataset"
        if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
            case = _case_name(data, loc[1])
            where = f"case '{case}'"
            loc = loc[2:]
            first_case = first_case or case
        field = ".".join(str(part) for part in loc)
        first_field = first_field or field or None
        reason = validation_message(item)
        if item["type"] == "extra_forbidden":
            reason = "unknown key (the format has exact keys)"
        elif item["type"] == "missing":
            reason = "missing key"
        lines.append(f"{where}, field '{field}': {reason}" if field else f"{where}: {reason}")
    more = len(error.errors()) - _MAX_REPORTED
    if more > 0:
        lines.append(f"… and {more} more")
    return DatasetError(f"{path}: " + "; ".join(lines), case_id=first_case, field=first_field)


@overload
def read_dataset(path: Path | str, kind: type[DocumentationDataset], *,
                 project: Path = ...) -> LoadedDataset[DocumentationDataset]: ...
@overload
def read_dataset(path: Path | str, kind: type[ApplicationContentDataset], *,
                 project: Path = ...) -> LoadedDataset[ApplicationContentDataset]: ...
@overload
def read_dataset(path: Path | str, kind: type[AssistantDataset], *,
                 project: Path = ...) -> LoadedDataset[AssistantDataset]: ...
def read_dataset(path: Path | str, kind: type[Any], *,
                 project: Path = PROJECT_ROOT) -> LoadedDataset[Any]:
    """Read and validate a dataset file of ``kind`` (:class:`DocumentationDataset`,
    :class:`ApplicationContentDataset` or :class:`AssistantDataset`); raises
    :class:`DatasetError`.

    Caps: at most :data:`MAX_FILE_BYTES` bytes, JSON nested at most :data:`MAX_JSON_DEPTH`
    levels, an object at the root, at most :data:`MAX_CASES` cases, then the exact
    schema of ``kind``. A ``private`` dataset inside ``project`` is refused.
    """
    file = Path(path)
    raw, data = read_json(file)
    if not isinstance(data, dict):
        raise DatasetError(f"{file}: the root must be a JSON object")
    cases = data.get("cases")
    if isinstance(cases, list) and len(cases) > MAX_CASES:
        raise DatasetError(f"{file}: {len(cases)} cases, above the cap of {MAX_CASES}",
                           field="cases")
    if data.get("data_classification") == "private":
        refuse_private_inside(file, project)
    try:
        model = kind.model_validate(data)
    except ValidationError as exc:
        raise _another_kind(file, data, kind) or _explain(file, data, exc) from None
    return LoadedDataset(file, hashlib.sha256(raw).hexdigest(), model)


#: What each dataset model reads, for the error on a file of another kind.
_WANTED: dict[type[BaseModel], tuple[str, str]] = {
    DocumentationDataset: ("documentation", "a documentation dataset"),
    ApplicationContentDataset: ("application_content", "an application-content dataset"),
    AssistantDataset: ("assistant", "an assistant dataset (cases carrying expected_surface)"),
}


def _another_kind(file: Path, data: dict[str, Any], kind: type[Any]) -> DatasetError | None:
    """The error for a file that failed ``kind`` because it is a file of another kind
    (another dataset, a report), naming what it is and what reads it, as ``evaluate check``
    does; ``None`` when its marks do not show another kind (its field errors then say what
    is wrong)."""
    from ragplate.tasks.evaluation.file_kinds import READ_BY, what_it_is

    wanted = _WANTED.get(kind)
    found = what_it_is(data)
    if wanted is None or found is None or found[0] == wanted[0]:
        return None
    shown, what = found
    reader = f"; {READ_BY[shown]} reads it" if shown in READ_BY else ""
    return DatasetError(f"{file} is {what}, not {wanted[1]}{reader}")


def read_named(path: Path | str, kind: DatasetKind) -> LoadedDataset[Any]:
    """:func:`read_dataset` with the kind given by name (``documentation`` or
    ``application_content``)."""
    return read_dataset(path, DATASET_MODELS[kind])


def held_out(ids: Sequence[str], share: float) -> set[str]:
    """The ids of ``floor(share × len(ids))`` cases, the first by the SHA-256 of their id:
    a split that depends on nothing but the ids, so a case stays on its side whatever the
    others are."""
    count = math.floor(len(ids) * share + 1e-9)
    order = sorted(ids, key=lambda case_id: (hashlib.sha256(case_id.encode()).hexdigest(),
                                             case_id))
    return set(order[:count])


#: The share of a development dataset held out as its test part.
TEST_SHARE = 0.5
Part = Literal["tuning", "test", "all"]


def dataset_part(dataset: DocumentationDataset, part: Part,
                 share: float = TEST_SHARE) -> DocumentationDataset:
    """The ``tuning`` part of ``dataset`` or its ``test`` part (:func:`held_out` with
    ``share``), or all of it: recipes are tuned on one and chosen on the other."""
    if part == "all":
        return dataset
    test = held_out([c.id for c in dataset.cases], share)
    cases = [c for c in dataset.cases if (c.id in test) == (part == "test")]
    return dataset.model_copy(update={"cases": cases})
