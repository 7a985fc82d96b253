"""Assistant evaluation datasets: what the assistant should do with each message.

The format of the laraplate assistant datasets (``../shared/benchmarks/laraplate/
assistant-*.json``), loaded unchanged. Top level: ``version``, ``corpus_revision``,
``module``, ``data_classification`` (``synthetic`` only: a message and what it should
produce are invented test data) and ``cases`` (1–1000), plus an optional ``description``.
A case:

- ``id``: a slug; ``query``: the message; ``locale``: the person's locale;
- ``module_key``: the module the person is in (the request's context), or ``null``;
- ``expected_surface``: ``documentation``, ``application_content``, ``graph``, ``clarify``
  or ``refuse``, with ``expect_clarification`` and ``expect_refusal`` agreeing with it;
- ``expected_citations``: the source labels the answer must cite (none for ``clarify`` and
  ``refuse``);
- ``slices``: slug tags the report breaks the metrics down by;
- optional ``page`` (the request's ``context.page``, at most 6000 bytes as JSON) and
  ``expected_proposals`` (0–3; needs a ``page``).

Every other key is refused, and nothing is coerced.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from ragplate.catalog.datasets import (
    MAX_CASES,
    CaseId,
    Description,
    Labels,
    Locale,
    Query,
    Revision,
    Slugs,
    _Strict,
    _unique,
)

Surface = Literal["documentation", "application_content", "graph", "clarify", "refuse"]
SURFACES: tuple[Surface, ...] = ("documentation", "application_content", "graph", "clarify",
                                 "refuse")
MAX_PAGE_BYTES = 6000
ModuleKey = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=100)]


class AssistantCase(_Strict):
    """One message and what the assistant should do with it."""

    id: CaseId
    query: Query
    locale: Locale
    module_key: ModuleKey | None
    expected_surface: Surface
    expected_citations: Labels
    expect_clarification: bool
    expect_refusal: bool
    slices: Slugs
    page: dict[str, Any] | None = None
    expected_proposals: Annotated[int, Field(ge=0, le=3)] | None = None

    @model_validator(mode="after")
    def _agree(self) -> AssistantCase:
        _unique(self.slices, "slices")
        _unique(self.expected_citations, "expected_citations")
        if self.expect_clarification != (self.expected_surface == "clarify"):
            raise ValueError("expect_clarification must be true exactly when "
                             "expected_surface is 'clarify'")
        if self.expect_refusal != (self.expected_surface == "refuse"):
            raise ValueError("expect_refusal must be true exactly when expected_surface "
                             "is 'refuse'")
        if self.expected_surface in ("clarify", "refuse") and self.expected_citations:
            raise ValueError(f"a '{self.expected_surface}' case expects no citations")
        if self.page is not None and len(json.dumps(self.page).encode()) > MAX_PAGE_BYTES:
            raise ValueError(f"page: larger than {MAX_PAGE_BYTES} bytes as JSON")
        if self.expected_proposals is not None and self.page is None:
            raise ValueError("expected_proposals needs a page")
        return self


class AssistantDataset(_Strict):
    """An assistant evaluation dataset (see the module docstring)."""

    version: Revision
    corpus_revision: Revision
    module: ModuleKey
    data_classification: Literal["synthetic"]
    description: Description | None = None
    cases: list[AssistantCase] = Field(min_length=1, max_length=MAX_CASES)

    @model_validator(mode="after")
    def _ids(self) -> AssistantDataset:
        _unique([c.id for c in self.cases], "cases (id)")
        return self
