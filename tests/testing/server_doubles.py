"""Doubles of TEI, Infinity and speaches that speak their published HTTP APIs.

Only what ragplate calls is served: TEI ``GET /info``, ``POST /v1/embeddings`` (413 above
``max_client_batch_size``, as TEI does) and ``POST /rerank`` (ranks sorted by score, as TEI
answers); Infinity ``/embeddings`` and ``/rerank`` under its ``--url-prefix`` (``/v1``), no
``/info``; speaches ``POST /v1/audio/transcriptions`` reading multipart form fields.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from tests.testing.http_double import HttpDouble, Received, Reply, Route

E5_MODEL = "intfloat/multilingual-e5-small"
RERANK_MODEL = "BAAI/bge-reranker-base"


def fake_vector(text: str, dimensions: int = 384, norm: float = 1.0) -> list[float]:
    """A deterministic vector of ``norm`` for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    return [float(x) for x in vector / np.linalg.norm(vector) * norm]


def overlap_score(query: str, text: str) -> float:
    """A deterministic relevance: the share of the query's words found in the text."""
    words = set(query.lower().split())
    return len(words & set(text.lower().split())) / max(1, len(words))


def embeddings_answer(
    texts: list[str], model: str | None, *, dimensions: int = 384, norm: float = 1.0
) -> dict[str, Any]:
    """An OpenAI-style embeddings answer, items in reverse order (clients must use index)."""
    data = [
        {"object": "embedding", "embedding": fake_vector(t, dimensions, norm), "index": i}
        for i, t in enumerate(texts)
    ][::-1]
    answer: dict[str, Any] = {
        "object": "list",
        "data": data,
        "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
    }
    if model is not None:
        answer["model"] = model
    return answer


def tei_info(model_id: str = E5_MODEL, max_client_batch_size: int = 32) -> dict[str, Any]:
    """A complete TEI ``Info`` answer."""
    return {
        "model_id": model_id,
        "model_sha": None,
        "model_dtype": "float16",
        "model_type": {"embedding": {"pooling": "mean"}},
        "max_concurrent_requests": 512,
        "max_input_length": 512,
        "max_batch_tokens": 16384,
        "max_batch_requests": None,
        "max_client_batch_size": max_client_batch_size,
        "auto_truncate": False,
        "tokenization_workers": 2,
        "version": "1.9.3",
        "sha": None,
        "docker_label": None,
        "served_model_name": model_id,
    }


def tei_double(
    *,
    model_id: str = E5_MODEL,
    answer_model: str | None = E5_MODEL,
    max_client_batch_size: int = 32,
    dimensions: int = 384,
    norm: float = 1.0,
    with_info: bool = True,
) -> HttpDouble:
    """A TEI serving embeddings (``answer_model`` names the model in answers) or reranking."""

    def embeddings(request: Received) -> Reply:
        texts = request.json()["input"]
        if len(texts) > max_client_batch_size:
            return Reply(413, {"message": f"batch size {len(texts)} > maximum allowed batch "
                               f"size {max_client_batch_size}", "code": 413,
                               "error_type": "Validation"})
        return Reply(200, embeddings_answer(texts, answer_model, dimensions=dimensions, norm=norm))

    def rerank(request: Received) -> Reply:
        body = request.json()
        ranks = [{"index": i, "score": overlap_score(body["query"], t)}
                 for i, t in enumerate(body["texts"])]
        return Reply(200, sorted(ranks, key=lambda r: -r["score"]))

    routes: dict[tuple[str, str], Route] = {
        ("POST", "/v1/embeddings"): embeddings, ("POST", "/rerank"): rerank,
    }
    if with_info:
        routes[("GET", "/info")] = lambda _: Reply(
            200, tei_info(model_id, max_client_batch_size)
        )
    return HttpDouble(routes)


def infinity_double(*, model: str = RERANK_MODEL, url_prefix: str = "/v1") -> HttpDouble:
    """An Infinity started with ``--url-prefix /v1``: Cohere-style rerank, no ``/info``."""

    def rerank(request: Received) -> Reply:
        body = request.json()
        results = [{"relevance_score": overlap_score(body["query"], t), "index": i,
                    "document": None} for i, t in enumerate(body["documents"])]
        return Reply(200, {
            "object": "rerank",
            "results": sorted(results, key=lambda r: -r["relevance_score"]),
            "model": body.get("model", model) if body.get("model") else model,
            "usage": {"prompt_tokens": 10, "total_tokens": 10},
            "id": "infinity-1",
            "created": 1_700_000_000,
        })

    def embeddings(request: Received) -> Reply:
        return Reply(200, embeddings_answer(request.json()["input"], model))

    return HttpDouble({
        ("POST", f"{url_prefix}/rerank"): rerank,
        ("POST", f"{url_prefix}/embeddings"): embeddings,
    })


def speaches_double(text: str = "the meeting starts at nine") -> HttpDouble:
    """speaches: reads the multipart form; 422 without ``model`` or ``file``."""

    def transcribe(request: Received) -> Reply:
        form = request.form()
        if not form.get("model") or not isinstance(form.get("file"), bytes):
            return Reply(422, {"detail": [{"loc": ["body", "file"], "msg": "Field required",
                                           "type": "missing"}]})
        if form.get("response_format", "json") == "text":
            return Reply(200, text.encode(), headers={"Content-Type": "text/plain"})
        return Reply(200, {"text": text, "logprobs": None, "usage": None})

    return HttpDouble({("POST", "/v1/audio/transcriptions"): transcribe})
