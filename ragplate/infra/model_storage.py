"""The embedding-model switch's per-model storage: how a target's vector indexes are built
beside the serving ones, made to serve, and how the other models' are pruned. One
protocol, :class:`ModelStorage`, chosen by :func:`make_model_storage`.

- **PostgreSQL** (:class:`PostgresModelStorage`): rows of every model side by side in
  ``model_embeddings``, ``rag_chunks`` and ``rag_sources``, one partial HNSW index per
  model. Serving is the setting the activation writes; nothing else moves.
- **Elasticsearch** (:class:`ElasticsearchModelStorage`): besides the record vectors in
  PostgreSQL (the source the application-search indexes are written from), one index per
  role and model (``{app}_docs_developer_<model>``, ``{app}_records_cms_contents_<model>``)
  behind one alias per role. The activation moves every role's alias to the new model's
  index in one ``_aliases`` call, so a reader of an alias never finds it missing; ragplate
  itself reads the index of the model PostgreSQL says serves, so the query vector and the
  index always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.records.vectors import (
    delete_model_rows_except,
    drop_model_index,
    drop_model_indexes_except,
    ensure_model_index,
)
from ragplate.infra.stores.pgvector import prune_other_models

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from ragplate.catalog.settings import Settings


@dataclass
class Pruned:
    """What a prune removed."""

    vector_rows: int = 0
    chunk_rows: int = 0
    source_rows: int = 0
    indexes: list[str] | None = None


class ModelStorage(Protocol):
    """What the switch does to per-model storage, whatever holds it."""

    def prepare(self, conn: Connection, target: EmbeddingProfile, *, beside: bool) -> None:
        """Make the target's record-vector index ready for its rows (rebuilt when it is
        built beside the serving model)."""

    def activate(self, serving: str) -> list[str]:
        """Point what readers outside ragplate use at the indexes of the model ``serving``
        (a key), in one step; the names moved."""

    def prune(self, conn: Connection, serving: str) -> Pruned:
        """Delete every other model's rows and indexes (in ``conn``'s transaction for
        PostgreSQL)."""


class PostgresModelStorage:
    """:class:`ModelStorage` of PostgreSQL with pgvector."""

    def prepare(self, conn: Connection, target: EmbeddingProfile, *, beside: bool) -> None:
        """See :class:`ModelStorage`."""
        if beside:
            drop_model_index(conn, target.key)
        ensure_model_index(conn, target)

    def activate(self, serving: str) -> list[str]:
        """Nothing moves: the serving-model setting is the switch."""
        return []

    def prune(self, conn: Connection, serving: str) -> Pruned:
        """See :class:`ModelStorage`."""
        vector_rows = delete_model_rows_except(conn, [serving])
        dropped = drop_model_indexes_except(conn, [serving])
        chunks, sources, more = prune_other_models(conn, serving)
        return Pruned(vector_rows, chunks, sources, dropped + more)


class ElasticsearchModelStorage(PostgresModelStorage):
    """:class:`ModelStorage` of Elasticsearch: PostgreSQL's record vectors, plus one index
    per role and model behind one alias per role."""

    def __init__(self, client: Elasticsearch, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    def _indexes(self) -> list[str]:
        """Every per-model index of a role: ``{app}_docs_*`` and ``{app}_records_*``."""
        from ragplate.infra.elasticsearch.indexes import indexes_of

        return [name for kind in ("docs", "records")
                for name in indexes_of(self.client, f"{self.prefix}_{kind}_*")]

    def _serving_indexes(self, serving: str) -> dict[str, str]:
        """``{role alias: serving model's index}`` of every role that has one (a role's
        alias is its indexes' name without the model hash)."""
        from ragplate.infra.elasticsearch.names import model_hash

        suffix = "_" + model_hash(serving)
        return {name.removesuffix(suffix): name for name in self._indexes()
                if name.endswith(suffix)}

    def prepare(self, conn: Connection, target: EmbeddingProfile, *, beside: bool) -> None:
        """PostgreSQL's record vectors as there; the target's Elasticsearch indexes are
        emptied by their stores (documentation) and the entity chunks (records)."""
        super().prepare(conn, target, beside=beside)
        if beside:
            from ragplate.infra.elasticsearch.indexes import delete_index, indexes_of
            from ragplate.infra.elasticsearch.names import model_hash

            for name in indexes_of(self.client, f"{self.prefix}_records_*"):
                if name.endswith("_" + model_hash(target.key)):
                    delete_index(self.client, name)

    def activate(self, serving: str) -> list[str]:
        """Every role's alias to ``serving``'s index, in one ``_aliases`` call."""
        from ragplate.infra.elasticsearch.client import call
        from ragplate.infra.elasticsearch.indexes import alias_targets

        actions: list[dict[str, dict[str, str]]] = []
        moved = []
        for alias, index in self._serving_indexes(serving).items():
            current = alias_targets(self.client, alias)
            if current == [index]:
                continue
            actions += [{"remove": {"index": name, "alias": alias}} for name in current
                        if name != index]
            actions.append({"add": {"index": index, "alias": alias}})
            moved.append(alias)
        if actions:
            call(lambda: self.client.indices.update_aliases(actions=actions), ", ".join(moved))
        return moved

    def prune(self, conn: Connection, serving: str) -> Pruned:
        """PostgreSQL's rows of other models, then (the aliases pointed at ``serving``
        first) every other model's Elasticsearch index."""
        from ragplate.infra.elasticsearch.indexes import delete_index
        from ragplate.infra.elasticsearch.names import model_hash

        pruned = super().prune(conn, serving)
        self.activate(serving)
        keep = "_" + model_hash(serving)
        dropped = [name for name in self._indexes()
                   if not name.endswith(keep) and delete_index(self.client, name)]
        pruned.indexes = (pruned.indexes or []) + dropped
        return pruned


def make_model_storage(settings: Settings, engine: Engine | None = None) -> ModelStorage:
    """The switch's storage: Elasticsearch when ``RAGPLATE_ELASTICSEARCH_URL`` is set,
    else PostgreSQL."""
    if settings.uses_elasticsearch:
        from ragplate.infra.elasticsearch.client import connect

        return ElasticsearchModelStorage(connect(settings), settings.elasticsearch_index_prefix)
    return PostgresModelStorage()
