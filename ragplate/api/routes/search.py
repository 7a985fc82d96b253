"""``POST /v1/search``: application search over an embeddable entity (e.g. cms.contents)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from fastapi import APIRouter, FastAPI
from pydantic import BaseModel, Field

from ragplate.api.deps import MemberDep, RuntimeDep
from ragplate.api.errors import AUTH_RESPONSES, ERROR_RESPONSES
from ragplate.api.fields import SearchText, StrictRequest, TenantText, WholeNumber
from ragplate.catalog.errors import PermissionDeniedError
from ragplate.catalog.people import GLOBAL_TENANT, OPERATOR_PERMISSION, Person
from ragplate.tasks.retrieval.application import search_with_runtime

router = APIRouter(prefix="/v1", tags=["search"])


class AppSearchRequest(StrictRequest):
    """A search over the published records of one entity, in one locale."""

    entity: SearchText = Field(min_length=1, max_length=100,
                               description="A declared entity, e.g. cms.contents.")
    query: SearchText = Field(min_length=1, max_length=2000, description="What to look for.")
    mode: Literal["fast", "balanced", "deep"] = Field(
        default="balanced",
        description="fast: keywords only, no model; balanced: keywords + vectors fused "
        "(hybrid); deep: balanced + reranking. A cheaper mode may answer: see "
        "meta.search.degraded_reason.",
    )
    locale: str = Field(max_length=35, pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$",
                        description="Language of the results (en, it, …).")
    tenant: TenantText | None = Field(
        default=None, min_length=1, max_length=200,
        description="Another tenant to search as: only a person holding tenants.operator "
        "may name one other than their own; anyone may name 'global', the shared records "
        "alone. By default the token's person's tenant: records of 'global' and of that "
        "tenant are searched.",
    )
    top_k: WholeNumber = Field(default=10, ge=1, le=50, description="Hits to return (1-50).")


class AppSearchHit(BaseModel):
    """One record, in the requested locale."""

    id: str
    title: str
    excerpt: str
    score: float = Field(description="The ranking's own score: in fast mode the number of "
                         "the query's distinct words the record holds plus its ts_rank "
                         "(below 1); with vectors the fused reciprocal-rank score (blended "
                         "with the reranker's in deep mode).")
    locale: str
    # No default: always sent (null without a vector), so required in the OpenAPI document.
    similarity: float | None = Field(
        description="The cosine similarity of the query with the record's best vector, "
        "comparable across queries and modes; null in fast mode (no query vector) and for a "
        "record without a vector of the serving model.")


class SearchInfo(BaseModel):
    """How the hits were obtained."""

    mode_requested: str
    mode: str = Field(description="The mode that answered.")
    degraded_reason: str | None = Field(
        description="Why a cheaper mode answered: embedder_unavailable, no_vectors, "
        "embedder_failed, nothing_to_embed (the query only excludes words), "
        "reranker_unavailable or reranker_failed; null when none did."
    )
    model_key: str | None = Field(description="The embedding model of the vectors searched.")
    strategies: list[str] = Field(description="keyword, and vector + hybrid when vectors ran.")
    reranked: bool


class SearchMetaModel(BaseModel):
    """Response metadata."""

    search: SearchInfo


class AppSearchResponse(BaseModel):
    """Hits, best first, and ``meta.search``."""

    hits: list[AppSearchHit]
    meta: SearchMetaModel


def searched_tenant(person: Person, requested: str | None) -> str | None:
    """The tenant a search runs as: the person's own; ``global`` (the records every tenant
    sees: a narrower search, never a wider one); another only for an operator (403)."""
    if requested is None or requested == person.tenant:
        return person.tenant
    if requested == GLOBAL_TENANT:
        return requested
    if not person.holds(OPERATOR_PERMISSION):
        raise PermissionDeniedError(
            f"naming another tenant than your own needs the {OPERATOR_PERMISSION} permission")
    return requested


@router.post("/search", response_model=AppSearchResponse,
             responses={**AUTH_RESPONSES, **ERROR_RESPONSES})
def search(request: AppSearchRequest, runtime: RuntimeDep, person: MemberDep
           ) -> AppSearchResponse:
    """Keyword, vector or hybrid search of an entity's records (unknown entity: 422), as the
    token's person's tenant."""
    result = search_with_runtime(
        runtime, entity=request.entity, query=request.query, mode=request.mode,
        locale=request.locale, tenant=searched_tenant(person, request.tenant),
        top_k=request.top_k,
    )
    return AppSearchResponse.model_validate(result.as_dict())


def document_entities(app: FastAPI, names: Sequence[str]) -> None:
    """Name the declared entities as the ``enum`` of ``entity`` in the OpenAPI document
    (they are settings, so the request model cannot list them): a client, or a fuzzer,
    learns the valid values. The route still refuses an unknown one itself (422)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            entity = schema["components"]["schemas"]["AppSearchRequest"]["properties"]["entity"]
            entity["enum"] = sorted(names)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
