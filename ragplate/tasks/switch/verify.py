"""The verify phase: refresh the target's rows of every record (chunks, exactly as the
indexes phase writes them), then check that the target can serve.

Records edited since the indexes phase were written with both models, but the refresh
makes sure of it; the documentation has no such edits and is not refreshed. The checks:
per entity, every searchable text has a target row with its current hash and no target
row is left over, the target's HNSW index exists and a vector query of the fixed text
runs; per documentation index, the target holds exactly the corpus's files and a vector
query runs.
"""

from __future__ import annotations

import uuid

from ragplate.catalog.entities import entities
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.catalog.switch import VERIFY_QUERY, ChunkPlan, SwitchState
from ragplate.infra.records.texts import count_texts, missing_embeddings
from ragplate.infra.records.vectors import (
    TABLE,
    count_vectors,
    model_index_exists,
    nearest_record_key,
)
from ragplate.infra.runtime import Runtime
from ragplate.tasks.indexing.index import in_scope
from ragplate.tasks.switch.documentation import configured_sources
from ragplate.tasks.switch.embeddings import describe
from ragplate.tasks.switch.indexes import corpus, doc_indexes, entity_chunks


def refresh_plan(runtime: Runtime) -> ChunkPlan:
    """The verify refresh: every entity key range again (no documentation chunks)."""
    return ChunkPlan(plan_id=uuid.uuid4().hex, purpose="verify", chunks=entity_chunks(runtime))


def check_entities(runtime: Runtime, profile: EmbeddingProfile) -> list[str]:
    """Problems of the target's record vectors (empty when it can serve)."""
    problems: list[str] = []
    query = runtime.embedder(profile).embed_query(VERIFY_QUERY)
    with runtime.engine.connect() as conn:
        if not model_index_exists(conn, profile.key):
            problems.append(f"the HNSW index of {profile.key} on {TABLE} is missing")
        for entity in entities(runtime.settings).values():
            missing = missing_embeddings(conn, entity, profile.key)
            if missing:
                problems.append(f"{len(missing)} texts of {entity.name} have no current row "
                                f"of {profile.key}: {describe(missing)}")
            expected = count_texts(conn, entity)
            stored = count_vectors(conn, model_key=profile.key, entity=entity.name)
            if stored != expected:
                problems.append(f"{entity.name} has {stored} rows of {profile.key} for "
                                f"{expected} searchable texts")
            index = runtime.record_index
            if index is not None and (held := index.count(entity.name, profile.key)) != expected:
                problems.append(f"the Elasticsearch index {index.name(entity.name, profile.key)} "
                                f"holds {held} documents for {expected} searchable texts")
            if expected:
                found = nearest_record_key(conn, entity=entity.name, profile=profile,
                                           vector=query)
                if found is None:
                    problems.append(f"a vector query on {entity.name} with {profile.key} "
                                    "returned nothing")
    return problems


def check_documentation(runtime: Runtime, profile: EmbeddingProfile) -> list[str]:
    """Problems of the target's documentation indexes (empty when they can serve)."""
    problems: list[str] = []
    indexes = doc_indexes(runtime)
    if not indexes:
        return problems
    roots = runtime.settings.all_roots()
    prefixes = list(roots)
    documents = configured_sources(runtime)
    vector = runtime.embedder(profile).embed_query(VERIFY_QUERY)
    for index in indexes:
        expected = {d.source for d in corpus(runtime, index, documents)}
        store = runtime.store(index, profile)
        records = store.sources()
        # Sources of roots that are not configured are not the switch's to check: only an
        # abandon's target (the serving model) can hold them, indexed with --path.
        extra = sorted(s for s in set(records) - expected
                       if in_scope(s, prefixes, (), records[s].root))
        missing = sorted(expected - set(records))
        if missing or extra:
            problems.append(f"documentation index {index} of {profile.key}: missing "
                            f"{missing[:10]}, unexpected {extra[:10]}")
        if expected and store.count() and not store.search(vector, top_k=1):
            problems.append(f"a vector query on documentation index {index} returned nothing")
    return problems


def check(runtime: Runtime, state: SwitchState) -> list[str]:
    """Every problem that keeps the target from serving."""
    profile = get_profile(state.target or "")
    return check_entities(runtime, profile) + check_documentation(runtime, profile)
