"""The tuning fixture: a synthetic ``cms.contents`` record set on which keyword and vector
search disagree, so that ``tune-retrieval``'s guards can be exercised on rankings recorded by
the real application search.

On the application-content fixture (:mod:`ragplate.tasks.content_fixture`) every fusion
candidate serves the same top hits. Here, for several queries, two records hold every query
word: one repeats them close together (keyword search ranks it first), the other is about
the question (vector search ranks it first), and a third holds them far apart, so the fused
order depends on how keyword and vector scores are weighed. The datasets over it label one
side or the other as relevant:

- ``application-content-tuning-holdout.json``: the cases vector search gets right fall in
  the selection and the one keyword search gets right in the hold-out of the default split,
  so a candidate leaning on vectors wins the selection and loses the hold-out;
- ``application-content-tuning-noise.json``: one case vector search gets right among cases
  both searches answer alike, so the best gain is that one case.

The records are embedded with a real model (the serving profile), not with the fixture's
hashing embedder: a lexical embedder would agree with keyword search. Seeding replaces every
``cms.contents`` record, like :func:`ragplate.tasks.content_fixture.seed_fixture_corpus`
(whose loader and writer it uses): it is for tests and scratch databases only.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Engine

from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.infra.embedders.base import Embedder
from ragplate.tasks.content_fixture import seed_fixture_corpus

TUNING_CORPUS = PROJECT_ROOT / "datasets" / "fixtures" / "application-content" / \
    "cms-contents-tuning.json"
#: The datasets over :data:`TUNING_CORPUS` (see the module docstring).
HOLDOUT_DATASET = PROJECT_ROOT / "datasets" / "application-content-tuning-holdout.json"
NOISE_DATASET = PROJECT_ROOT / "datasets" / "application-content-tuning-noise.json"

__all__ = ["HOLDOUT_DATASET", "NOISE_DATASET", "TUNING_CORPUS", "seed_tuning_corpus"]


def seed_tuning_corpus(
    engine: Engine,
    profile: EmbeddingProfile,
    embedder_for: Callable[[EmbeddingProfile], Embedder] | None = None,
) -> dict[int, int]:
    """Replace every ``cms.contents`` record (and every application vector) with the tuning
    fixture, embedded with ``profile`` (the one search serves, or vector search would not
    run); ``embedder_for`` builds its embedder (default: the configured one). Returns
    ``{key: texts}``. The profile's HNSW index is dropped, so the records are searched
    exactly and the rankings do not depend on how an index graph was built."""
    if embedder_for is None:
        from ragplate.infra.embedders import make_embedder

        embedder_for = make_embedder
    return seed_fixture_corpus(engine, path=TUNING_CORPUS, profiles=(profile,),
                               embedder_for=embedder_for)
