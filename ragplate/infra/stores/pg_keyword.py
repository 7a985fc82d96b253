"""The SQL of keyword (BM25) search over ``rag_chunks.search`` for the pgvector store."""

from __future__ import annotations

from typing import Any

from ragplate.catalog.text_search import CONFIGURED, configuration, configuration_sql
from ragplate.infra.stores.lexical import FIELD_BOOST, K1, B

#: A chunk's column reads it in its locale's language (migration 0008): the query is read
#: in every configured language, and a chunk counts the lexemes of its own language's
#: reading only (an English query's Italian stems do not match an English chunk).
QUERY_CONFIGS: list[str] = [configuration(name) for name in CONFIGURED]
_CHUNK_CONFIG = configuration_sql("metadata->>'locale'")

# BM25 in SQL over the generated tsvector, scored per label (a source, or the user index's
# safe label) over all its chunks: the query's lexemes (normalised like the column, in each
# configured language) are OR-ed into a tsquery the GIN index answers; a label's term
# frequency is the sum over its chunks (a lexeme of the A-weighted field, source label and
# breadcrumb, counts 1 + FIELD_BOOST times), its length the sum of its chunks' lengths, N
# the visible labels.
# Lexemes holding a quote or a backslash are skipped rather than escaped: the cast takes
# tsquery syntax, not a SQL literal.
_KEYWORD = """
WITH q AS (
    SELECT DISTINCT c.config, u.lexeme
    FROM unnest(CAST(:configs AS regconfig[])) AS c(config),
         unnest(to_tsvector(c.config, :query)) AS u
    WHERE u.lexeme !~ '[\\\\'']'
), tsq AS (
    SELECT CAST(string_agg(DISTINCT chr(39) || lexeme || chr(39), ' | ') AS tsquery) AS query
    FROM q
), units AS (
    SELECT {label} AS label, length(search) AS len FROM rag_chunks WHERE {where}
), stats AS (
    SELECT count(DISTINCT label)::float8 AS total,
           coalesce(sum(len)::float8 / nullif(count(DISTINCT label), 0), 1) AS avgdl
    FROM units
), lengths AS (
    SELECT label, sum(len)::float8 AS dl FROM units GROUP BY label
), candidates AS (
    SELECT id, source, ordinal, text, metadata, search, {label} AS label,
           {config} AS config
    FROM rag_chunks, tsq WHERE {where} AND search @@ tsq.query
), terms AS (
    SELECT c.label, c.id, u.lexeme,
           cardinality(u.positions)
           + :boost * cardinality(array_positions(u.weights, 'A')) AS tf
    FROM candidates c, unnest(c.search) AS u(lexeme, positions, weights)
    WHERE (c.config, u.lexeme) IN (SELECT config, lexeme FROM q)
), label_terms AS (
    SELECT label, lexeme, sum(tf)::float8 AS tf FROM terms GROUP BY label, lexeme
), df AS (
    SELECT lexeme, count(*)::float8 AS df FROM label_terms GROUP BY lexeme
), scored AS (
    SELECT t.label, sum(ln(1 + (s.total - df.df + 0.5) / (df.df + 0.5)) * t.tf * (:k1 + 1)
                        / (t.tf + :k1 * (1 - :b + :b * l.dl / s.avgdl))) AS score
    FROM label_terms t JOIN df USING (lexeme) JOIN lengths l USING (label) CROSS JOIN stats s
    GROUP BY t.label
), best AS (
    SELECT DISTINCT ON (c.label) c.label, c.id
    FROM (SELECT id, sum(tf) AS hits FROM terms GROUP BY id) h JOIN candidates c USING (id)
    ORDER BY c.label, h.hits DESC, c.source, c.ordinal
)
SELECT c.source, c.ordinal, c.text, c.metadata, s.score
FROM scored s JOIN best b USING (label) JOIN candidates c ON c.id = b.id
ORDER BY s.score DESC, c.source, c.ordinal LIMIT :k
"""
#: How a label is read in SQL, by label key (``None``: the source).
_LABEL_SQL = {None: "source", "safe_source_label": "(metadata->>'safe_source_label')"}


def keyword_sql(where: str, query: str, top_k: int,
                label_key: str | None) -> tuple[str, dict[str, Any]]:
    """The BM25 query over the rows matching ``where`` (trusted SQL: the store's scope and
    ``filter_sql`` clauses) and its parameters, besides those of ``where``."""
    if label_key not in _LABEL_SQL:
        raise ValueError(f"unsupported label key {label_key!r}")
    sql = _KEYWORD.format(where=where, label=_LABEL_SQL[label_key], config=_CHUNK_CONFIG)
    return sql, {"query": query, "configs": QUERY_CONFIGS, "k": top_k,
                 "boost": FIELD_BOOST, "k1": K1, "b": B}


#: How many chunks of one (index, model) hold each of some words: ``rag_term_counts``,
#: which triggers on ``rag_chunks`` keep from each chunk's ``terms`` (migration 0016).
TERM_COUNTS_SQL = (
    "SELECT term, chunks FROM rag_term_counts WHERE index_name = :i AND model_key = :k "
    "AND term = ANY(CAST(:terms AS text[]))"
)
