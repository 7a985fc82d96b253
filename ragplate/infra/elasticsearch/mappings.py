"""Index bodies: the analysers of every language keyword search reads, and the mappings of
the documentation, application-search and query-analytics indexes.

Every mapping is ``dynamic: strict`` (a field outside it is refused) and carries
``_meta.ragplate``: the role, the mapping version and, for vector indexes, the model, its
dimensions and similarity, so an index made by an older ragplate or for other dimensions is
recognised and named instead of written into.

Keyword search reads a text in its locale's language as the PostgreSQL driver does
(:mod:`ragplate.catalog.text_search`): one analyser per language, ``rp_<language>`` —
lower case, that language's stop words (English for ``simple``), accents folded, its
Snowball stemmer — and one text field per language, so a chunk's words are indexed in the
field of its own language only and a query, read by every field's analyser, counts each
chunk's own reading.
"""

from __future__ import annotations

from typing import Any

from ragplate.catalog.text_search import CONFIGURED, SIMPLE

#: Raised when a mapping changes; an index of another version is named, not written.
MAPPING_VERSION = 1

#: ragplate's similarity → Elasticsearch's. ``dot_product`` needs unit vectors, so inner
#: product is ``max_inner_product``.
SIMILARITY = {"cosine": "cosine", "l2": "l2_norm", "inner_product": "max_inner_product"}


def analysis() -> dict[str, Any]:
    """The ``analysis`` settings: ``rp_<language>`` for every configured language."""
    filters: dict[str, Any] = {}
    analyzers: dict[str, Any] = {}
    for name in CONFIGURED:
        stop_list = "english" if name == SIMPLE else name
        filters[f"rp_{name}_stop"] = {"type": "stop", "stopwords": f"_{stop_list}_"}
        chain = ["lowercase", f"rp_{name}_stop", "asciifolding"]
        if name != SIMPLE:
            filters[f"rp_{name}_stem"] = {"type": "stemmer", "language": name}
            chain.append(f"rp_{name}_stem")
        analyzers[f"rp_{name}"] = {"type": "custom", "tokenizer": "standard", "filter": chain}
    return {"filter": filters, "analyzer": analyzers}


def language_fields(*names: str) -> dict[str, Any]:
    """A text field per configured language for each of ``names`` (``text_italian``)."""
    return {f"{name}_{language}": {"type": "text", "analyzer": f"rp_{language}"}
            for name in names for language in CONFIGURED}


def vector_field(dimensions: int, similarity: str) -> dict[str, Any]:
    """A ``dense_vector`` of the profile's dimensions and similarity, HNSW-indexed
    without quantisation (scores are exact, as on pgvector)."""
    return {"type": "dense_vector", "dims": int(dimensions), "index": True,
            "similarity": SIMILARITY[similarity],
            "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100}}


def settings_body(shards: int, replicas: int, *, analysed: bool = True) -> dict[str, Any]:
    """Index settings. Writers refresh explicitly (``refresh_interval: -1``): a write's
    deletions and additions become visible together."""
    body: dict[str, Any] = {"number_of_shards": shards, "number_of_replicas": replicas,
                            "refresh_interval": "-1"}
    if analysed:
        body["analysis"] = analysis()
    return body


def meta(role: str, **extra: Any) -> dict[str, Any]:
    """``_meta.ragplate`` of an index."""
    return {"ragplate": {"role": role, "mapping_version": MAPPING_VERSION, **extra}}


def documentation_mapping(*, index: str, model_key: str, dimensions: int,
                          similarity: str) -> dict[str, Any]:
    """One documentation index of one model: chunks and source records (``doc_type``)."""
    keyword = {"type": "keyword"}
    return {
        "dynamic": "strict",
        "_meta": meta("documentation", index=index, model_key=model_key,
                      dimensions=int(dimensions), similarity=similarity),
        "properties": {
            "doc_type": keyword, "source": keyword, "ordinal": {"type": "integer"},
            "generation": keyword,
            # Returned as written; searched through the language fields below.
            "text": {"type": "text", "index": False},
            "metadata": {"type": "object", "enabled": False},
            # A keyword field for every filter, the user index's inside the query.
            "audience": keyword, "module": keyword, "locale": keyword,
            "source_type": keyword, "tenant_scope": keyword, "required_permissions": keyword,
            "permissions_unreadable": {"type": "boolean"},
            "cross_cutting_user": {"type": "boolean"}, "safe_source_label": keyword,
            **language_fields("text", "label"),
            "embedding": vector_field(dimensions, similarity),
            # The chunk's distinct words as ragplate reads them, and "" (every chunk):
            # the assistant's coverage check counts how many chunks hold a word.
            "terms": keyword,
            # Source records.
            "content_hash": keyword, "model_key": keyword, "chunk_count": {"type": "integer"},
            "vector_recipe": keyword, "root": keyword,
        },
    }


def records_mapping(*, entity: str, model_key: str, dimensions: int,
                    similarity: str) -> dict[str, Any]:
    """One entity's application-search index of one model: a document per searchable
    record and locale, its text read in the locale's language, its vector."""
    keyword = {"type": "keyword"}
    return {
        "dynamic": "strict",
        "_meta": meta("records", entity=entity, model_key=model_key,
                      dimensions=int(dimensions), similarity=similarity),
        "properties": {
            "record_key": keyword, "record_number": {"type": "long"},
            "locale": keyword, "tenant": keyword,
            "text_hash": keyword,
            "title": {"type": "text", "index": False}, "body": {"type": "text", "index": False},
            **language_fields("title", "body"),
            "embedding": vector_field(dimensions, similarity),
        },
    }


def query_log_mapping() -> dict[str, Any]:
    """The query-analytics index: exactly the privacy review's fields, ``dynamic: strict``
    so that any other field is refused by Elasticsearch too."""
    keyword = {"type": "keyword"}
    return {
        "dynamic": "strict",
        "_meta": meta("rag_queries"),
        "properties": {
            "id": keyword, "logged_at": {"type": "date"}, "user_ref": keyword,
            "tenant": keyword, "profile": keyword, "locale": keyword,
            "query": {"type": "text", "index": False},
            "retrieved_count": {"type": "integer"}, "citation_count": {"type": "integer"},
            "answered": {"type": "boolean"}, "latency_ms": {"type": "float"},
            "index": keyword,
        },
    }
