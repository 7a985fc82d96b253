"""The deterministic application-content fixture: a synthetic ``cms.contents`` corpus seeded
with fixed record keys, so the synthetic datasets' ``expected_hit_ids``
(``cms.contents:<key>``) name the same records on every run.

The corpus (``datasets/fixtures/application-content/cms-contents.json``) is invented
help-centre text, embedded with :class:`FixtureEmbedder` (:data:`FIXTURE_PROFILE`): the
same vectors on every machine, so the committed baselines can be compared byte for byte.
Two things would otherwise make a ranking depend on the database's history rather than on
the texts, and both are removed:

- feature hashing leaves many passages exactly as similar to a short query as others (often
  exactly orthogonal), and PostgreSQL returns exact ties in storage order: the embedder adds
  a last component, tiny and different for every text, that orders them by text instead;
- an HNSW index is approximate, and which rows it finds depends on how its graph was built:
  seeding drops the profile's index, so the fixture is searched exactly (it is tiny).

Seeding replaces every ``cms.contents`` record: it is for CI and for a scratch database,
never for one holding real content.

**The tuning fixture** (:func:`seed_tuning_corpus`) is a synthetic ``cms.contents`` record
set on which keyword and vector search disagree, so that ``tune-retrieval``'s guards can be
exercised on rankings recorded by the real application search.

On the application-content fixture every fusion candidate serves the same top hits. Here,
for several queries, two records hold every query word: one repeats them close together
(keyword search ranks it first), the other is about the question (vector search ranks it
first), and a third holds them far apart, so the fused order depends on how keyword and
vector scores are weighed. The datasets over it label one
side or the other as relevant:

- ``application-content-tuning-holdout.json``: the cases vector search gets right fall in
  the selection and the one keyword search gets right in the hold-out of the default split,
  so a candidate leaning on vectors wins the selection and loses the hold-out;
- ``application-content-tuning-noise.json``: one case vector search gets right among cases
  both searches answer alike, so the best gain is that one case.

The records are embedded with a real model (the serving profile), not with the fixture's
hashing embedder: a lexical embedder would agree with keyword search. Seeding replaces every
``cms.contents`` record, like :func:`seed_fixture_corpus` (whose loader and writer it
uses): it is for tests and scratch databases only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Engine

from ragplate.catalog.entities import CMS_CONTENTS, SHIPPED
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.infra.models.base import Embedder
from ragplate.infra.models.hashing import HashingModel
from ragplate.infra.records import content as content_sql
from ragplate.infra.records.vectors import delete_entity_vectors, drop_model_index
from ragplate.tasks.records.content import save_content
from ragplate.tasks.records.search_index import refresh_records

if TYPE_CHECKING:
    from ragplate.infra.records.es_search import ElasticsearchRecords

HASHING_DIMENSIONS = 256
#: Feature hashing plus one tie-breaking component (see the module docstring); never built
#: by ``make_embedder``: only :func:`fixture_embedder` embeds with it.
FIXTURE_PROFILE = EmbeddingProfile(key="local:ragplate/fixture-hashing-ordered-257",
                                   dimensions=HASHING_DIMENSIONS + 1,
                                   local_variant="fixture-hashing-ordered")
#: Weight of the tie-breaking component: its effect on a similarity (at most TIE² / 2) is
#: far below the gaps between different hashing similarities, far above float32 noise.
TIE = 0.03
FIXTURE_CORPUS = PROJECT_ROOT / "datasets" / "fixtures" / "application-content" / \
    "cms-contents.json"
#: The ``driver`` of a report measured on the seeded fixture (the spec's name for it).
FIXTURE_DRIVER = "database-generated-fixture"

TUNING_CORPUS = PROJECT_ROOT / "datasets" / "fixtures" / "application-content" / \
    "cms-contents-tuning.json"
#: The datasets over :data:`TUNING_CORPUS` (see the module docstring).
HOLDOUT_DATASET = PROJECT_ROOT / "datasets" / "application-content-tuning-holdout.json"
NOISE_DATASET = PROJECT_ROOT / "datasets" / "application-content-tuning-noise.json"

__all__ = ["FIXTURE_CORPUS", "FIXTURE_DRIVER", "FIXTURE_PROFILE", "HOLDOUT_DATASET",
           "NOISE_DATASET", "TUNING_CORPUS", "FixtureCorpus", "fixture_embedder",
           "load_fixture_corpus", "seed_fixture_corpus", "seed_tuning_corpus"]


class FixtureText(BaseModel):
    """One translation of a fixture record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = Field(min_length=1)
    body: str


class FixtureRecord(BaseModel):
    """One fixture record with its fixed key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int = Field(ge=1)
    tenant: str = "global"
    status: Literal["draft", "published", "archived"]
    translations: dict[str, FixtureText] = Field(min_length=1)


class FixtureCorpus(BaseModel):
    """The fixture file: the entity it seeds and its records."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["cms.contents"]
    description: str | None = None
    records: list[FixtureRecord] = Field(min_length=1)


def load_fixture_corpus(path: Path = FIXTURE_CORPUS) -> FixtureCorpus:
    """Read and validate the fixture corpus; keys must be unique."""
    corpus = FixtureCorpus.model_validate(json.loads(path.read_text(encoding="utf-8")))
    keys = [r.id for r in corpus.records]
    if len(set(keys)) != len(keys):
        raise InvalidInputError(f"{path}: a record key is used twice")
    return corpus


def _share(text: str) -> float:
    """A number in ``[0.5, 1)`` fixed by the text."""
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return 0.5 + int.from_bytes(digest, "big") / 2**65


class FixtureEmbedder:
    """Feature hashing (lexical, deterministic, instant) with a last component that is
    ``TIE × share(text)`` for a passage and ``TIE`` for a query, then L2-normalised."""

    def __init__(self) -> None:
        self.profile: EmbeddingProfile = FIXTURE_PROFILE
        self._model = HashingModel(HASHING_DIMENSIONS)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.profile.dimensions), dtype=np.float32)
        extra = np.array([[TIE * _share(t)] for t in texts], dtype=np.float32)
        matrix = np.hstack([self._model.passage(texts), extra])
        return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        vector = np.append(self._model.query(text), np.float32(TIE))
        return (vector / np.linalg.norm(vector)).astype(np.float32)


def fixture_embedder() -> Embedder:
    """The fixture's embedder (:class:`FixtureEmbedder`)."""
    return FixtureEmbedder()


def seed_fixture_corpus(
    engine: Engine,
    *,
    path: Path = FIXTURE_CORPUS,
    profiles: tuple[EmbeddingProfile, ...] = (FIXTURE_PROFILE,),
    embedder_for: Callable[[EmbeddingProfile], Embedder] | None = None,
    search_index: ElasticsearchRecords | None = None,
) -> dict[int, int]:
    """Replace every ``cms.contents`` record (and every application vector) with the
    fixture corpus, embedded with each of ``profiles``; returns ``{key: texts}`` (and, with
    ``search_index``, the Elasticsearch search documents of every record).

    Records are created with their fixed keys, then written through
    :func:`ragplate.tasks.records.content.save_content` like any content, so translations and
    vectors are stored exactly as the application stores them.
    """
    corpus = load_fixture_corpus(path)
    build = embedder_for or (lambda _profile: fixture_embedder())
    with engine.begin() as conn:
        delete_entity_vectors(conn)
        content_sql.delete_all_contents(conn)
        content_sql.insert_keyed_contents(conn, [(r.id, r.tenant, r.status)
                                                 for r in corpus.records])
    written = {}
    for record in corpus.records:
        translations = {loc: (t.title, t.body) for loc, t in record.translations.items()}
        save_content(engine, key=record.id, tenant=record.tenant, status=record.status,
                     translations=translations, profiles=list(profiles),
                     embedder_for=build)
        written[record.id] = len(translations)
    with engine.begin() as conn:
        for profile in profiles:
            drop_model_index(conn, profile.key)  # exact search: see the module docstring
    refresh_records(search_index, engine, SHIPPED[CMS_CONTENTS], profiles)
    return written


def seed_tuning_corpus(
    engine: Engine,
    profile: EmbeddingProfile,
    embedder_for: Callable[[EmbeddingProfile], Embedder] | None = None,
) -> dict[int, int]:
    """Replace every ``cms.contents`` record (and every application vector) with the tuning
    fixture, embedded with ``profile`` (the one search serves, or vector search would not
    run); ``embedder_for`` builds its embedder (default: the in-process embedder of a local
    profile; an ``openai_compatible`` one needs an ``embedder_for`` built from its server's
    settings). Returns
    ``{key: texts}``. The profile's HNSW index is dropped, so the records are searched
    exactly and the rankings do not depend on how an index graph was built."""
    if embedder_for is None:
        from ragplate.infra.models import make_embedder

        embedder_for = make_embedder
    return seed_fixture_corpus(engine, path=TUNING_CORPUS, profiles=(profile,),
                               embedder_for=embedder_for)
