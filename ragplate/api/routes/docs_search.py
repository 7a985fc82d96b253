"""``POST /v1/docs/search``: developer documentation retrieval."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from ragplate.api.deps import DeveloperDep, RuntimeDep
from ragplate.api.errors import AUTH_RESPONSES, ERROR_RESPONSES
from ragplate.api.fields import SearchText, StrictRequest, WholeNumber
from ragplate.tasks.retrieval.documentation import retrieve_with_runtime

router = APIRouter(prefix="/v1/docs", tags=["documentation"])


class SearchRequest(StrictRequest):
    """A question for the developer index."""

    query: SearchText = Field(min_length=1, max_length=2000, description="The question.")
    top_k: WholeNumber = Field(default=5, ge=1, le=10, description="Hits to return (1-10).")


class SearchHit(BaseModel):
    """One cited result: the best chunk of one source."""

    source_label: str
    heading_breadcrumb: str
    excerpt: str
    score: float = Field(description="The ranking's own score: the cosine similarity in "
                         "vector mode, the fused reciprocal-rank score in hybrid mode.")
    similarity: float = Field(description="The cosine similarity of the question with the "
                              "source's best chunk, in every mode: comparable across modes.")


class SearchResponse(BaseModel):
    """Hits in descending score order, one per source: ``top_k`` of them whenever the
    index holds that many sources."""

    hits: list[SearchHit]


@router.post("/search", response_model=SearchResponse,
             responses={**AUTH_RESPONSES, **ERROR_RESPONSES})
def search(request: SearchRequest, runtime: RuntimeDep, person: DeveloperDep) -> SearchResponse:
    """Search the developer index with the active embedding profile (vector, or hybrid
    with ``RAGPLATE_DOCS_RETRIEVAL=hybrid``). The developer index holds every document,
    so this needs a token of a person holding ``docs.developer``."""
    hits = retrieve_with_runtime(runtime, request.query, index="developer",
                                 top_k=request.top_k)
    return SearchResponse(hits=[SearchHit(**h.as_dict()) for h in hits])
