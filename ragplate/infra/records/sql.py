"""SQL over an entity's declared tables: its texts, keyword ranking and vector ranking.

Every statement is built from an :class:`~ragplate.catalog.entities.Entity`, whose names
are validated identifiers (and quoted here anyway); values are always bound, except the
model key of a vector query, which must be a literal for the partial HNSW index to apply.
Records are aliased ``r``, translations ``t`` and vectors ``me``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ragplate.catalog.entities import Entity
from ragplate.catalog.profiles import EmbeddingProfile, vector_operator
from ragplate.catalog.text_search import configuration, configuration_sql, language
from ragplate.infra.pgvector_sql import SCORE_SQL, vector_literal
from ragplate.infra.records.vectors import TABLE, model_predicate, vector_expression

Key = int | str


@dataclass(frozen=True)
class Query:
    """A statement, its parameters and the ``SET LOCAL`` lines to run before it."""

    sql: str
    params: dict[str, Any]
    settings: list[str] = field(default_factory=list)


def fetch(conn: Connection, query: Query) -> Sequence[sa.Row[Any]]:
    """Every row of ``query``, after its ``SET LOCAL`` lines."""
    for statement in query.settings:
        conn.execute(sa.text(statement))
    return conn.execute(sa.text(query.sql), query.params).all()


def explain(conn: Connection, query: Query) -> str:
    """The PostgreSQL plan of ``query`` (its ``SET LOCAL`` lines in force)."""
    for statement in query.settings:
        conn.execute(sa.text(statement))
    return "\n".join(str(r[0]) for r in conn.execute(sa.text("EXPLAIN " + query.sql),
                                                        query.params))


def q(identifier: str) -> str:
    """A quoted SQL identifier."""
    return '"' + identifier.replace('"', '""') + '"'


def _key(entity: Entity) -> str:
    return f"r.{q(entity.key_column)}"


def _joined(entity: Entity) -> str:
    """Records joined to their translations."""
    tr = entity.translations
    return (f"{q(entity.table)} r JOIN {q(tr.table)} t "
            f"ON t.{q(tr.key_column)} = {_key(entity)}")


def text_expression(entity: Entity) -> str:
    """The embedded text: the non-empty text fields joined by a blank line (this is what
    :func:`ragplate.tasks.records.texts.compose_text` computes in Python)."""
    fields = ", ".join(f"NULLIF(t.{q(f)}, '')" for f in entity.translations.text_fields)
    return f"concat_ws(E'\\n\\n', {fields})"


def hash_expression(text: str) -> str:
    """SHA-256 of the UTF-8 text, hex: equal to ``hashlib.sha256(text.encode()).hexdigest()``."""
    return f"encode(sha256(convert_to({text}, 'UTF8')), 'hex')"


def _body(entity: Entity) -> str:
    fields = [f"t.{q(f)}" for f in entity.body_fields]
    return f"concat_ws(E'\\n\\n', {', '.join(fields)})" if fields else "''"


def _searchable(entity: Entity, params: dict[str, Any]) -> list[str]:
    if entity.status_column is None:
        return []
    params["statuses"] = list(entity.searchable_statuses)
    return [f"r.{q(entity.status_column)} = ANY(CAST(:statuses AS text[]))"]


def _tenant(entity: Entity, tenants: Sequence[str] | None, params: dict[str, Any]) -> list[str]:
    if entity.tenant_column is None or tenants is None:
        return []
    params["tenants"] = list(tenants)
    return [f"r.{q(entity.tenant_column)} = ANY(CAST(:tenants AS text[]))"]


def _key_range(
    entity: Entity,
    key_from: Key | None,
    key_to: Key | None,
    keys: Sequence[Key] | None,
    params: dict[str, Any],
) -> list[str]:
    clauses = []
    key, kind = _key(entity), entity.key_type
    if key_from is not None:
        clauses.append(f"{key} >= CAST(:key_from AS {kind})")
        params["key_from"] = str(key_from)
    if key_to is not None:
        clauses.append(f"{key} < CAST(:key_to AS {kind})")
        params["key_to"] = str(key_to)
    if keys is not None:
        clauses.append(f"{key} = ANY(CAST(:keys AS {kind}[]))")
        params["keys"] = [str(k) for k in keys]
    return clauses


def texts_query(
    entity: Entity,
    *,
    key_from: Key | None = None,
    key_to: Key | None = None,
    keys: Sequence[Key] | None = None,
    missing_for: str | None = None,
) -> Query:
    """The searchable texts ``(record_key, locale, text, text_hash)`` in key order, in
    ``[key_from, key_to)`` and/or among ``keys``; with ``missing_for`` (a model key), only
    those without a row of that model carrying the current text hash."""
    params: dict[str, Any] = {}
    text = text_expression(entity)
    where = [f"{text} <> ''", *_searchable(entity, params),
             *_key_range(entity, key_from, key_to, keys, params)]
    inner = (
        f"SELECT {_key(entity)} AS sort_key, CAST({_key(entity)} AS text) AS record_key, "
        f"t.{q(entity.translations.locale_column)} AS locale, {text} AS text, "
        f"{hash_expression(text)} AS text_hash FROM {_joined(entity)} "
        f"WHERE {' AND '.join(where)}"
    )
    missing = ""
    if missing_for is not None:
        params.update(entity=entity.name, model_key=missing_for)
        missing = (
            f" LEFT JOIN {TABLE} me ON me.entity = :entity AND me.model_key = :model_key "
            "AND me.record_key = x.record_key AND me.locale = x.locale "
            "WHERE me.id IS NULL OR me.text_hash <> x.text_hash"
        )
    sql = (f"SELECT x.record_key, x.locale, x.text, x.text_hash FROM ({inner}) x{missing} "
           "ORDER BY x.sort_key, x.locale")
    return Query(sql, params)


def search_documents_query(
    entity: Entity,
    *,
    model_key: str,
    key_from: Key | None = None,
    key_to: Key | None = None,
    keys: Sequence[Key] | None = None,
) -> Query:
    """What an application-search index holds of the searchable texts in ``[key_from,
    key_to)`` and/or among ``keys``: ``(record_key, locale, tenant, title, body,
    text_hash, embedding)``, the embedding being the row of ``model_key`` that carries the
    current text hash, as pgvector text (NULL when there is none)."""
    params: dict[str, Any] = {"entity": entity.name, "model_key": model_key}
    text = text_expression(entity)
    where = [f"{text} <> ''", *_searchable(entity, params),
             *_key_range(entity, key_from, key_to, keys, params)]
    tenant = f"r.{q(entity.tenant_column)}" if entity.tenant_column else "'global'"
    inner = (
        f"SELECT {_key(entity)} AS sort_key, {_hit_columns(entity)}, "
        f"CAST({tenant} AS text) AS tenant, {hash_expression(text)} AS text_hash "
        f"FROM {_joined(entity)} WHERE {' AND '.join(where)}"
    )
    sql = (
        "SELECT x.record_key, x.locale, x.tenant, x.title, x.body, x.text_hash, "
        f"CAST(me.embedding AS text) AS embedding FROM ({inner}) x LEFT JOIN {TABLE} me "
        "ON me.entity = :entity AND me.model_key = :model_key "
        "AND me.record_key = x.record_key AND me.locale = x.locale "
        "AND me.text_hash = x.text_hash ORDER BY x.sort_key, x.locale"
    )
    return Query(sql, params)


def key_boundaries_query(entity: Entity, *, chunk_size: int) -> Query:
    """Keys that start a new run of ``chunk_size`` searchable records (not the first)."""
    params: dict[str, Any] = {"size": int(chunk_size)}
    where = _searchable(entity, params) or ["TRUE"]
    key = _key(entity)
    sql = (
        f"SELECT CAST(k AS text) FROM (SELECT {key} AS k, row_number() OVER (ORDER BY {key}) "
        f"AS n FROM {q(entity.table)} r WHERE {' AND '.join(where)}) s "
        "WHERE n > 1 AND (n - 1) % :size = 0 ORDER BY k"
    )
    return Query(sql, params)


def count_texts_query(entity: Entity) -> Query:
    """How many searchable texts (records times their non-empty translations) exist."""
    params: dict[str, Any] = {}
    where = [f"{text_expression(entity)} <> ''", *_searchable(entity, params)]
    return Query(f"SELECT count(*) FROM {_joined(entity)} WHERE {' AND '.join(where)}", params)


def _tsvector(entity: Entity) -> str:
    tr = entity.translations
    if tr.search_column is not None:
        return f"t.{q(tr.search_column)}"
    config = configuration_sql(f"t.{q(tr.locale_column)}")
    title = f"setweight(to_tsvector({config}, coalesce(t.{q(entity.title_field)}, '')), 'A')"
    return f"({title} || to_tsvector({config}, {_body(entity)}))"


def query_configuration(entity: Entity, locale: str) -> str:
    """The text-search configuration a query in ``locale`` is read with: the one the
    entity's texts in that locale were read with."""
    tr = entity.translations
    if tr.search_column is not None and tr.search_language == "simple":
        return "simple"
    return configuration(language(locale))


def _hit_columns(entity: Entity) -> str:
    return (f"CAST({_key(entity)} AS text) AS record_key, "
            f"t.{q(entity.translations.locale_column)} AS locale, "
            f"t.{q(entity.title_field)} AS title, {_body(entity)} AS body")


def _or_query(param: str, *, lexemes: bool = True) -> str:
    """The lexemes of ``:param`` in ``:config`` OR-ed (NULL when it has none), and with
    ``lexemes`` the array of them and them AND-ed too."""
    word = "chr(39) || u.lexeme || chr(39)"
    extra = (f", coalesce(array_agg(u.lexeme), '{{}}'), "
             f"CAST(string_agg({word}, ' & ') AS tsquery) " if lexemes else " ")
    return (
        f"SELECT CAST(string_agg({word}, ' | ') AS tsquery){extra}"
        f"FROM unnest(to_tsvector(CAST(:config AS regconfig), :{param})) AS u "
        "WHERE u.lexeme !~ '[\\\\'']'"
    )


_NEGATED = re.compile(r'(?:^|(?<=\s))-(?:"([^"]*)"?|(\S+))')


def split_negations(query: str) -> tuple[str, str]:
    """``(wanted, excluded)`` words of a web-search style query: a word or a quoted phrase
    after ``-`` is excluded; quotes and the ``or`` operator are read as plain words (every
    word is OR-ed anyway)."""
    excluded = [m.group(1) or m.group(2) or "" for m in _NEGATED.finditer(query)]
    wanted = _NEGATED.sub(" ", query).replace('"', " ")
    return wanted, " ".join(excluded)


def keyword_query(
    entity: Entity, *, query: str, locale: str, tenants: Sequence[str] | None, limit: int
) -> Query:
    """Full-text ranking of the searchable records' texts in ``locale``. The query is read
    in that locale's language and its words are OR-ed, so a record holding some of them is
    found (a plain question finds answers); a word or quoted phrase after ``-`` excludes
    the records holding any of its words. A record holding more of the query's distinct
    words ranks first; among records holding as many, ``ts_rank`` orders (title words weigh
    most; for records holding every word, as an AND query, which weighs how close together
    they stand). The score is that count plus the ``ts_rank`` (below 1). Lexemes holding a quote
    or a backslash are left out (the cast reads tsquery syntax)."""
    wanted, excluded = split_negations(query)
    params: dict[str, Any] = {"query": wanted, "locale": locale, "limit": int(limit),
                              "config": query_configuration(entity, locale)}
    vector = _tsvector(entity)
    where = [f"t.{q(entity.translations.locale_column)} = :locale", f"{vector} @@ tsq.query",
             *_searchable(entity, params), *_tenant(entity, tenants, params)]
    if excluded.strip():
        params["excluded"] = excluded
        where.append(f"NOT coalesce({vector} @@ ({_or_query('excluded', lexemes=False)}), "
                     "false)")
    held = (f"(SELECT count(*) FROM unnest(tsq.lexemes) AS l(lexeme) "
            f"WHERE {vector} @@ CAST(chr(39) || l.lexeme || chr(39) AS tsquery))")
    # A record holding every word is ranked as an AND query, which weighs their proximity.
    rank = (f"least(ts_rank({vector}, CASE WHEN {vector} @@ tsq.every THEN tsq.every "
            "ELSE tsq.query END), 0.999999)")
    sql = (
        f"SELECT {_hit_columns(entity)}, {held} + {rank} AS score "
        f"FROM {_joined(entity)} CROSS JOIN ({_or_query('query')}) AS tsq(query, lexemes, every) "
        f"WHERE {' AND '.join(where)} ORDER BY score DESC, {_key(entity)} LIMIT :limit"
    )
    return Query(sql, params)


def similarity_query(entity: Entity, *, profile: EmbeddingProfile, vector: np.ndarray,
                     keys: Sequence[str]) -> Query:
    """Each of ``keys``' best similarity to ``vector`` over its vectors of ``profile`` (one
    per locale): the similarity of a record another ranking found."""
    operator = vector_operator(profile.similarity)[0]
    distance = (f"{vector_expression(profile, 'me.embedding')} {operator} "
                f"CAST(:vector AS vector({int(profile.dimensions)}))")
    params: dict[str, Any] = {"vector": vector_literal(vector), "entity": entity.name,
                              "keys": [str(k) for k in keys]}
    sql = (
        f"SELECT me.record_key, max({SCORE_SQL[profile.similarity].format(d=distance)}) "
        f"AS score FROM {TABLE} me WHERE {model_predicate(profile.key, 'me.model_key')} "
        "AND me.entity = :entity AND me.record_key = ANY(CAST(:keys AS text[])) "
        "GROUP BY me.record_key"
    )
    return Query(sql, params)


def vector_query(
    entity: Entity,
    *,
    profile: EmbeddingProfile,
    vector: np.ndarray,
    locale: str,
    tenants: Sequence[str] | None,
    limit: int,
    excluded: str = "",
) -> Query:
    """Nearest vectors of ``profile`` (every locale's vector is searched) for records that
    have a translation in ``locale``, which is the text returned; one row per vector, so a
    record can appear once per locale it has. A record whose text in ``locale`` holds a
    word of ``excluded`` is left out, read as :func:`keyword_query` reads it.

    The cast, operator and literal predicate repeat the partial HNSW index, so the plan is
    an index scan under the joins; an iterative scan keeps filtered rows from starving it.
    """
    operator = vector_operator(profile.similarity)[0]
    dims = int(profile.dimensions)
    distance = (f"{vector_expression(profile, 'me.embedding')} {operator} "
                f"CAST(:vector AS vector({dims}))")
    tr = entity.translations
    params: dict[str, Any] = {
        "vector": vector_literal(vector),
        "entity": entity.name,
        "locale": locale,
        "limit": int(limit),
    }
    where = [model_predicate(profile.key, "me.model_key"), "me.entity = :entity",
             *_searchable(entity, params), *_tenant(entity, tenants, params)]
    if excluded.strip():
        params.update(excluded=excluded, config=query_configuration(entity, locale))
        where.append(f"NOT coalesce({_tsvector(entity)} @@ "
                     f"({_or_query('excluded', lexemes=False)}), false)")
    sql = (
        f"SELECT {_hit_columns(entity)}, {distance} AS distance, "
        f"{SCORE_SQL[profile.similarity].format(d=distance)} AS score FROM {TABLE} me "
        f"JOIN {q(entity.table)} r ON {_key(entity)} = CAST(me.record_key AS {entity.key_type}) "
        f"JOIN {q(tr.table)} t ON t.{q(tr.key_column)} = {_key(entity)} "
        f"AND t.{q(tr.locale_column)} = :locale "
        f"WHERE {' AND '.join(where)} ORDER BY distance LIMIT :limit"
    )
    ef_search = min(1000, max(40, 2 * int(limit)))
    settings = [f"SET LOCAL hnsw.ef_search = {ef_search}",
                "SET LOCAL hnsw.iterative_scan = relaxed_order"]
    return Query(sql, params, settings)
