"""Evaluation dataset schemas: documentation cases and application-content cases.

Both formats are strict: every key is required (no defaults, no unknown keys), values are
typed without coercion (``"5"`` is not a ``top_k``, ``1`` is not a boolean), and the
spec's patterns and caps apply. A dataset is hand-authored data, so nothing in it is
trusted before it passed these models; ``ragplate.tasks.evaluation.dataset_files`` reads
files into them and turns a validation failure into an error naming the case and the
field.

**Documentation datasets** are the format of the public laraplate benchmarks
(``../shared/benchmarks/laraplate/*.json``), loaded unchanged. Top level: ``version``,
``corpus_revision``, ``module``, ``index_profile`` (``developer`` | ``user``),
``data_classification`` and ``cases``, plus one optional ``description``. A case: ``id``,
``query``, ``locale``, ``top_k`` (1-10), ``expected_source_labels`` (the labels the
retriever must return: file labels on the developer index, safe source labels on the user
index), ``expected_citation_labels``, ``expect_authorized_empty``,
``expect_supported_answer``, ``expect_refusal``, ``slices``, ``tenant_scope`` (``global``
| ``tenant``), ``tenant_id`` and ``effective_permissions`` (the principal asking).

**Application-content datasets** score record search (``cms.contents`` …). Top level:
``version``, ``source`` (the entity, ``module.entity``), ``corpus_revision``,
``data_classification``, ``cases`` and an optional ``description``. A case:

- ``id``: stable slug (``[a-z0-9][a-z0-9_-]{0,99}``); the tuning hold-out hashes it.
- ``query``: what a user types (1-2000 characters, not blank).
- ``locale``: ``en``, ``it``, ``pt-BR`` …; the search runs in this locale.
- ``limit``: hits requested, 1-50.
- ``expected_hit_ids``: the relevant records as ``<source>:<record key>`` (e.g.
  ``cms.contents:42``, a key as search returns it: an integer key in its plain form);
  binary relevance, order irrelevant. Empty: no ground truth (the
  case is left out of the ranking metrics).
- ``expected_citation_ids``: the hits an answer may cite (usually ``expected_hit_ids``).
- ``expect_authorized_empty``: relevant records exist but this principal must see none;
  the right answer is no hit.
- ``expect_supported_answer``: the corpus answers the query; at least one hit is expected.
- ``expect_abstention``: nothing answers; the right answer is no hit.
- ``slices``: slug tags the report breaks the metrics down by (topic, query kind …).
- ``authorization``: the principal: ``tenant`` (``null`` = no tenant), ``permissions``
  (list of strings) and ``filters`` (``null`` or at most 20 ``{property, operator,
  value}`` with ``operator`` one of eq, neq, in, not_in, gt, gte, lt, lte).

``data_classification`` is ``synthetic`` (invented, committed as a fixture) or ``private``
(built from a real corpus: refused inside the project directory, see
``ragplate.tasks.evaluation.dataset_files``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.people import TENANT_PATTERN
from ragplate.catalog.text import text_problem

MAX_FILE_BYTES = 2_000_000
MAX_JSON_DEPTH = 32
MAX_CASES = 1000
MAX_QUERY_CHARS = 2000
MAX_LABEL_CHARS = 200
MAX_LIST_ITEMS = 100

CASE_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,99}$"
LOCALE_PATTERN = r"^[a-z]{2,3}(?:[-_][A-Z]{2})?$"
SLUG_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
REVISION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
MODULE_PATTERN = r"^[a-z][a-z0-9_]*$"
SOURCE_PATTERN = r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$"
PROPERTY_PATTERN = r"^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*$"

DataClassification = Literal["synthetic", "private"]
CaseId = Annotated[str, StringConstraints(pattern=CASE_ID_PATTERN)]
Locale = Annotated[str, StringConstraints(pattern=LOCALE_PATTERN)]
Revision = Annotated[str, StringConstraints(pattern=REVISION_PATTERN)]


def _searchable(value: str) -> str:
    """``value`` when it can reach the database as text (no NUL, no unpaired surrogate:
    :func:`ragplate.catalog.text.text_problem`); a case holding such a query would
    otherwise pass every check and then be counted unavailable."""
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)  # the reader names the case and the field, not the text
    return value


Query = Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUERY_CHARS,
                                         pattern=r"\S"), AfterValidator(_searchable)]
Label = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LABEL_CHARS,
                                         pattern=r"\S"), AfterValidator(_searchable)]
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]
Labels = Annotated[list[Label], Field(max_length=MAX_LIST_ITEMS)]
Slugs = Annotated[list[Slug], Field(max_length=MAX_LIST_ITEMS)]
Description = Annotated[str, StringConstraints(max_length=2000)]


class DatasetError(InvalidInputError):
    """A dataset file that cannot be used; the message names the file, the case and the
    field (never the query text, which may be private)."""

    def __init__(self, message: str, *, case_id: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.case_id = case_id
        self.field = field

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_dataset_error, (str(self), self.case_id, self.field))


def _rebuild_dataset_error(message: str, case_id: str | None, field: str | None) -> DatasetError:
    return DatasetError(message, case_id=case_id, field=field)


class _Strict(BaseModel):
    # Exact keys and no coercion: a typo or a quoted number is an error, not a default.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _unique(values: list[str], name: str) -> None:
    if len(set(values)) != len(values):
        raise ValueError(f"{name} holds the same value twice")


class DocumentationCase(_Strict):
    """One graded question of a documentation dataset."""

    id: CaseId
    query: Query
    locale: Locale
    top_k: int = Field(ge=1, le=10)
    expected_source_labels: Labels
    expected_citation_labels: Labels
    expect_authorized_empty: bool
    expect_supported_answer: bool
    expect_refusal: bool
    slices: Slugs
    tenant_scope: Literal["global", "tenant"]
    tenant_id: Label | None
    effective_permissions: Labels

    @model_validator(mode="after")
    def _consistent(self) -> DocumentationCase:
        for name in ("expected_source_labels", "expected_citation_labels", "slices",
                     "effective_permissions"):
            _unique(getattr(self, name), name)
        if self.tenant_scope == "global" and self.tenant_id is not None:
            raise ValueError("tenant_id must be null when tenant_scope is global")
        if self.tenant_scope == "tenant" and self.tenant_id is None:
            raise ValueError("tenant_id is required when tenant_scope is tenant")
        expects_nothing = not self.expected_source_labels and not self.expected_citation_labels
        if (self.expect_authorized_empty or self.expect_refusal) and not expects_nothing:
            raise ValueError("a case expecting an empty answer cannot expect labels")
        if self.expect_supported_answer and self.expect_refusal:
            raise ValueError("a case cannot expect both a supported answer and a refusal")
        return self

    @property
    def tenant(self) -> str | None:
        """The tenant of the principal (``None`` for a global principal)."""
        return self.tenant_id if self.tenant_scope == "tenant" else None


class DocumentationDataset(_Strict):
    """A documentation dataset (the laraplate ``docs/rag/evaluations`` format)."""

    version: Revision
    corpus_revision: Revision
    module: Annotated[str, StringConstraints(pattern=MODULE_PATTERN, max_length=64)]
    index_profile: Literal["developer", "user"]
    data_classification: DataClassification
    description: Description | None = None
    cases: list[DocumentationCase] = Field(min_length=1, max_length=MAX_CASES)

    @model_validator(mode="after")
    def _unique_ids(self) -> DocumentationDataset:
        _unique([c.id for c in self.cases], "cases (id)")
        return self


class ContentFilter(_Strict):
    """One authorization filter of an application-content case."""

    property: Annotated[str, StringConstraints(pattern=PROPERTY_PATTERN, max_length=100)]
    operator: Literal["eq", "neq", "in", "not_in", "gt", "gte", "lt", "lte"]
    value: str | int | float | bool | list[str | int | float | bool | None] | None


class ContentAuthorization(_Strict):
    """The principal of an application-content case."""

    # As a person's tenant: a tenant no person can belong to would score a search error.
    tenant: Annotated[str, StringConstraints(pattern=TENANT_PATTERN.pattern)] | None
    permissions: Labels
    filters: Annotated[list[ContentFilter], Field(max_length=20)] | None


class ApplicationContentCase(_Strict):
    """One graded query of an application-content dataset (see the module docstring)."""

    id: CaseId
    query: Query
    locale: Locale
    limit: int = Field(ge=1, le=50)
    expected_hit_ids: Labels
    expected_citation_ids: Labels
    expect_authorized_empty: bool
    expect_supported_answer: bool
    expect_abstention: bool
    slices: Slugs
    authorization: ContentAuthorization

    @model_validator(mode="after")
    def _consistent(self) -> ApplicationContentCase:
        for name in ("expected_hit_ids", "expected_citation_ids", "slices"):
            _unique(getattr(self, name), name)
        expects_nothing = not self.expected_hit_ids and not self.expected_citation_ids
        if (self.expect_authorized_empty or self.expect_abstention) and not expects_nothing:
            raise ValueError("a case expecting an empty answer cannot expect hits")
        if self.expect_supported_answer and self.expect_abstention:
            raise ValueError("a case cannot expect both a supported answer and an abstention")
        return self


class ApplicationContentDataset(_Strict):
    """An application-content dataset (see the module docstring)."""

    version: Revision
    source: Annotated[str, StringConstraints(pattern=SOURCE_PATTERN, max_length=100)]
    corpus_revision: Revision
    data_classification: DataClassification
    description: Description | None = None
    cases: list[ApplicationContentCase] = Field(min_length=1, max_length=MAX_CASES)

    @model_validator(mode="after")
    def _ids(self) -> ApplicationContentDataset:
        _unique([c.id for c in self.cases], "cases (id)")
        prefix = f"{self.source}:"
        for case in self.cases:
            for hit_id in [*case.expected_hit_ids, *case.expected_citation_ids]:
                if not hit_id.startswith(prefix) or len(hit_id) == len(prefix):
                    raise ValueError(f"case {case.id!r}, field 'expected_hit_ids': an id is "
                                     f"not '{prefix}<record key>'")
        return self


DatasetKind = Literal["documentation", "application_content"]
DATASET_MODELS: dict[str, type[DocumentationDataset] | type[ApplicationContentDataset]] = {
    "documentation": DocumentationDataset,
    "application_content": ApplicationContentDataset,
}
