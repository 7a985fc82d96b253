"""Indexing plans and batches (pure functions, no store), and the stored vectors' recipe."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from ragplate.catalog.documents import Chunk, Document
from ragplate.catalog.errors import EmptyRootError
from ragplate.infra.models.base import Embedder
from ragplate.infra.stores.base import SourceRecord
from ragplate.tasks.indexing.index import (
    VECTOR_RECIPE,
    IndexPlan,
    IndexSummary,
    embed_batch,
    emptied_root_deletions,
    emptied_roots,
    fingerprint,
    headed,
    in_scope,
    index_salt,
    make_batches,
    plan_index,
    refuse_emptied_roots,
    vector_recipe,
    with_document_context,
)

MODEL = "local:intfloat/multilingual-e5-small"
OTHER_MODEL = "local:cnmoro/portuguese-multilingual-e5-small"


def doc(source: str, content_hash: str = "h1") -> Document:
    return Document(source=source, text=f"text of {source}", metadata={},
                    content_hash=content_hash)


def record(source: str, content_hash: str = "h1", model: str = MODEL, n: int = 1) -> SourceRecord:
    return SourceRecord(source, content_hash, model, n)


# -- plan_index --------------------------------------------------------------------------


def test_plan_sorts_sources_into_unchanged_changed_new_and_deleted() -> None:
    documents = [doc("p/same.md"), doc("p/edited.md", "h2"), doc("p/new.md")]
    stored = {s.source: s for s in [record("p/same.md"), record("p/edited.md", "h1"),
                                    record("p/gone.md")]}

    plan = plan_index("developer", documents, stored, MODEL, full=False, prefixes=["p"])

    assert [d.source for d in plan.changed] == ["p/edited.md", "p/new.md"]
    assert plan.unchanged == ["p/same.md"]
    assert plan.deleted == ["p/gone.md"]
    assert (plan.index, plan.full) == ("developer", False)


def test_unchanged_plan_re_embeds_nothing() -> None:
    documents = [doc("a.md"), doc("b.md")]
    stored = {d.source: record(d.source) for d in documents}

    plan = plan_index("user", documents, stored, MODEL, full=False)

    assert (plan.changed, plan.unchanged, plan.deleted) == ([], ["a.md", "b.md"], [])


def test_unchanged_sources_without_a_recorded_recipe_or_root_get_them() -> None:
    documents = [doc("old.md"), doc("rootless.md"), doc("known.md"), doc("edited.md", "h2")]
    stored = {"old.md": record("old.md"),  # stored before recipes and roots were recorded
              "rootless.md": SourceRecord("rootless.md", "h1", MODEL, 1, "document-context=0.0"),
              "known.md": SourceRecord("known.md", "h1", MODEL, 1, "document-context=0.0", ""),
              "edited.md": record("edited.md")}

    plan = plan_index("developer", documents, stored, MODEL, full=False,
                      recipe="document-context=0.0")

    assert plan.unchanged == ["old.md", "rootless.md", "known.md"]
    assert plan.unrecorded == [
        SourceRecord("old.md", "h1", MODEL, 1, "document-context=0.0", ""),
        SourceRecord("rootless.md", "h1", MODEL, 1, "document-context=0.0", ""),
    ]


def test_an_empty_prefix_deletes_only_what_it_indexed_itself() -> None:
    # "qa/" and "odd/" sources came from other --path runs; "gone.md" from this root.
    stored = {
        "qa/a.md": SourceRecord("qa/a.md", "h1", MODEL, 1, VECTOR_RECIPE, "qa"),
        "odd/b.md": SourceRecord("odd/b.md", "h1", MODEL, 1, VECTOR_RECIPE, "odd"),
        "gone.md": SourceRecord("gone.md", "h1", MODEL, 1, VECTOR_RECIPE, ""),
        "docs/old.md": SourceRecord("docs/old.md", "h1", MODEL, 1, VECTOR_RECIPE, ""),
    }

    plan = plan_index("developer", [doc("here.md")], stored, MODEL, full=False, prefixes=[""])

    assert plan.deleted == ["docs/old.md", "gone.md"]


def test_sources_without_a_recorded_root_fall_back_to_their_label() -> None:
    stored = {s: record(s) for s in ("qa/a.md", "gone.md", "cfg/c.md")}

    plan = plan_index("developer", [], stored, MODEL, full=False, prefixes=[""],
                      other_prefixes=["cfg"])

    assert plan.deleted == ["gone.md", "qa/a.md"]


def test_full_plan_re_embeds_everything_and_still_deletes() -> None:
    documents = [doc("a.md"), doc("b.md", "h9")]
    stored = {s.source: s for s in [record("a.md"), record("b.md"), record("c.md")]}

    plan = plan_index("developer", documents, stored, MODEL, full=True)

    assert plan.changed == documents
    assert (plan.unchanged, plan.deleted, plan.full) == ([], ["c.md"], True)


def test_a_different_model_key_re_embeds() -> None:
    documents = [doc("a.md"), doc("b.md")]
    stored = {"a.md": record("a.md", model=OTHER_MODEL), "b.md": record("b.md")}

    plan = plan_index("developer", documents, stored, MODEL, full=False)

    assert [d.source for d in plan.changed] == ["a.md"]
    assert plan.unchanged == ["b.md"]


def test_empty_store_plans_every_document() -> None:
    documents = [doc("x/a.md"), doc("x/b.md")]

    plan = plan_index("developer", documents, {}, MODEL, full=False, prefixes=["x"])

    assert plan.changed == documents and plan.deleted == [] and plan.unchanged == []


def test_run_over_one_prefix_keeps_other_prefixes() -> None:
    stored = {s.source: s for s in [record("faq-a/one.md"), record("faq-a/old.md"),
                                    record("faq-b/two.md"), record("faq-ab/three.md")]}

    plan = plan_index("developer", [doc("faq-a/one.md")], stored, MODEL, full=True,
                      prefixes=["faq-a"], other_prefixes=["faq-b", "faq-ab"])

    assert plan.deleted == ["faq-a/old.md"]


def test_bare_prefix_run_does_not_delete_other_roots() -> None:
    stored = {s.source: s for s in [record("guide/a.md"), record("top.md"),
                                    record("faq-app-ragplate/x.md")]}

    plan = plan_index("developer", [], stored, MODEL, full=False, prefixes=[""],
                      other_prefixes=["faq-app-ragplate"])

    assert plan.deleted == ["guide/a.md", "top.md"]


# -- emptied roots ---------------------------------------------------------------------


def test_emptied_roots_are_the_roots_read_without_any_document() -> None:
    documents = [Document("a/x.md", "x", {}, "h", root="a")]

    assert emptied_roots(documents, ["a", "b", ""]) == ["b", ""]
    assert emptied_roots([], ["a"]) == ["a"]
    assert emptied_roots(documents, ["a"]) == []


def test_deletions_of_an_emptied_root_are_its_own_sources_only() -> None:
    stored = {
        "b/one.md": record("b/one.md"),
        "b/two.md": replace_root(record("b/two.md"), "b"),
        "a/gone.md": replace_root(record("a/gone.md"), "a"),
        "legacy.md": record("legacy.md"),  # no recorded root: the bare label rule decides
    }
    plan = IndexPlan("developer", [], [], sorted(stored), False)

    found = emptied_root_deletions(plan, stored, ["b", ""], prefixes=["a", "b", ""],
                                   other_prefixes=["cfg"])

    assert found == {"b": ["b/one.md", "b/two.md"], "": ["legacy.md"]}
    assert emptied_root_deletions(plan, stored, ["c"], prefixes=["a", "b", "c"]) == {}


def test_refusal_names_each_root_index_and_count() -> None:
    paths = {"b": Path("/docs/b"), "": Path("/docs/bare")}

    with pytest.raises(EmptyRootError) as error:
        refuse_emptied_roots({"developer": {"b": ["b/1.md", "b/2.md"]},
                              "user": {"": ["x.md"]}}, paths)

    message = str(error.value)
    assert ("documentation root /docs/b (prefix 'b') holds no Markdown file, but the "
            "developer index holds 2 of its sources") in message
    assert "documentation root /docs/bare (prefix '') " in message
    assert "the user index holds 1 of its sources" in message
    assert "--allow-empty" in message
    refuse_emptied_roots({"developer": {}}, paths)  # nothing to delete: no refusal


def replace_root(item: SourceRecord, root: str) -> SourceRecord:
    return SourceRecord(item.source, item.content_hash, item.model_key, item.chunk_count,
                        root=root)


@pytest.mark.parametrize(
    ("source", "prefixes", "others", "expected"),
    [
        ("p/a.md", ["p"], [], True),
        ("p/sub/a.md", ["p"], [], True),
        ("pp/a.md", ["p"], [], False),  # a prefix is a whole path segment
        ("p", ["p"], [], False),
        ("q/a.md", ["p"], ["q"], False),
        ("q/a.md", ["p", "q"], [], True),
        ("a.md", [""], [], True),
        ("guide/a.md", [""], ["faq"], True),
        ("faq/a.md", [""], ["faq"], False),
        ("faq/a.md", ["", "faq"], [], True),
        ("faq/a.md", [""], ["", "faq"], False),  # an empty other prefix owns nothing
        ("x/a.md", [], [], False),
    ],
)
def test_in_scope(source: str, prefixes: list[str], others: list[str], expected: bool) -> None:
    assert in_scope(source, prefixes, others) is expected


# -- make_batches ------------------------------------------------------------------------


def chunks_of(source: str, n: int) -> list[Chunk]:
    return [Chunk(source, i, f"{source}#{i}") for i in range(n)]


def test_batches_group_whole_sources_up_to_the_limit() -> None:
    documents = [doc("a.md", "ha"), doc("b.md", "hb"), doc("c.md", "hc")]
    chunks = chunks_of("a.md", 2) + chunks_of("b.md", 2) + chunks_of("c.md", 3)

    batches = make_batches(documents, chunks, MODEL, batch_chunks=4)

    assert [[s.source for s in b.sources] for b in batches] == [["a.md", "b.md"], ["c.md"]]
    assert batches[0].sources[0] == SourceRecord("a.md", "ha", MODEL, 2, VECTOR_RECIPE, "")
    assert [len(b.chunks) for b in batches] == [4, 3]


def test_every_record_carries_its_recipe_and_root() -> None:
    documents = [doc("a.md", "ha"), doc("empty.md", "he"),
                 Document("qa/b.md", "text", {}, "hb", root="qa")]

    batches = make_batches(documents, chunks_of("a.md", 2) + chunks_of("qa/b.md", 1), MODEL,
                           batch_chunks=10, recipe=vector_recipe(0))

    assert [s.vector_recipe for s in batches[0].sources] == ["document-context=0.0"] * 3
    assert [(s.source, s.root) for s in batches[0].sources] == [
        ("a.md", ""), ("empty.md", ""), ("qa/b.md", "qa")]


def test_large_source_travels_alone() -> None:
    documents = [doc("a.md"), doc("big.md"), doc("c.md")]
    chunks = chunks_of("a.md", 1) + chunks_of("big.md", 9) + chunks_of("c.md", 1)

    batches = make_batches(documents, chunks, MODEL, batch_chunks=3)

    assert [[s.source for s in b.sources] for b in batches] == [["a.md"], ["big.md"], ["c.md"]]
    assert [len(b.chunks) for b in batches] == [1, 9, 1]


def test_empty_source_still_gets_a_record() -> None:
    documents = [doc("empty.md", "he"), doc("full.md")]

    batches = make_batches(documents, chunks_of("full.md", 2), MODEL, batch_chunks=10)

    assert len(batches) == 1
    assert SourceRecord("empty.md", "he", MODEL, 0, VECTOR_RECIPE, "") in batches[0].sources
    assert make_batches([doc("only-empty.md")], [], MODEL, batch_chunks=5)[0].sources == [
        SourceRecord("only-empty.md", "h1", MODEL, 0, VECTOR_RECIPE, "")
    ]


def test_no_documents_no_batches() -> None:
    assert make_batches([], [], MODEL, batch_chunks=5) == []


@pytest.mark.parametrize("seed", range(40))
def test_batches_never_split_a_source(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.randint(1, 12)
    sizes = {f"s{i:03d}.md": rng.choice([0, 1, 1, 2, 3, 5, limit, limit + 1, 3 * limit])
             for i in range(rng.randint(1, 30))}
    documents = [doc(s, f"hash-{s}") for s in sizes]
    chunks = [c for s, n in sizes.items() for c in chunks_of(s, n)]
    rng.shuffle(chunks)  # chunk order must not matter

    batches = make_batches(documents, chunks, MODEL, batch_chunks=limit)

    # Every source has exactly one record, in exactly one batch, with its own chunk count.
    listed = [r.source for b in batches for r in b.sources]
    assert sorted(listed) == sorted(sizes)
    assert all(r.chunk_count == sizes[r.source] for b in batches for r in b.sources)
    assert all(r.content_hash == f"hash-{r.source}" and r.model_key == MODEL
               for b in batches for r in b.sources)
    # Every chunk is in exactly one batch, and that batch lists the chunk's source.
    seen = [(c.source, c.ordinal) for b in batches for c in b.chunks]
    assert sorted(seen) == sorted((c.source, c.ordinal) for c in chunks)
    for batch in batches:
        assert {c.source for c in batch.chunks} <= {r.source for r in batch.sources}
        # Over the limit only when a single source is bigger than the limit by itself.
        if len(batch.chunks) > limit:
            assert len([r for r in batch.sources if r.chunk_count]) == 1
    # Batches are as full as whole sources allow: the next source did not fit.
    for batch, following in itertools.pairwise(batches):
        assert len(batch.chunks) + following.sources[0].chunk_count > limit


def test_summary_row() -> None:
    summary = IndexSummary("developer", sources_read=3, unchanged=1, reembedded=2, deleted=1,
                           chunks_written=5, seconds=1.23456)

    assert summary.as_row() == {"index": "developer", "sources_read": 3, "unchanged": 1,
                                "re_embedded": 2, "deleted": 1, "chunks_written": 5,
                                "seconds": 1.23}
    # People read the same counts under headings; the values and their order are kept.
    assert list(headed(summary.as_row()).items()) == [
        ("index", "developer"), ("sources read", 3), ("unchanged", 1), ("re-embedded", 2),
        ("deleted", 1), ("chunks written", 5), ("seconds", 1.23)]


# -- document context ----------------------------------------------------------------------


def test_a_chunk_vector_is_its_direction_plus_its_documents_mean_direction() -> None:
    # Two chunks of a.md along x and y, one of b.md along z (lengths 2, 1 and 3).
    matrix = np.array([[2.0, 0, 0], [0, 1.0, 0], [0, 0, 3.0]])

    mixed = with_document_context(matrix, ["a.md", "a.md", "b.md"], weight=1.0)

    # a.md's mean direction is (0.5, 0.5, 0): chunk 1 -> (1.5, 0.5, 0), put back at length 2.
    expected_first = np.array([1.5, 0.5, 0]) / np.linalg.norm([1.5, 0.5, 0]) * 2
    np.testing.assert_allclose(mixed[0], expected_first, rtol=1e-6)
    np.testing.assert_allclose(mixed[1], [0.5 / np.sqrt(2.5), 1.5 / np.sqrt(2.5), 0],
                               rtol=1e-6)
    # A source alone keeps its own direction and length; nothing leaks from a.md.
    np.testing.assert_allclose(mixed[2], [0, 0, 3.0], rtol=1e-6)
    assert mixed.dtype == np.float32


def test_document_context_does_not_depend_on_the_batch() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(3, 8)), rng.normal(size=(2, 8))

    together = with_document_context(np.vstack([a, b]), ["a"] * 3 + ["b"] * 2)

    np.testing.assert_allclose(together[:3], with_document_context(a, ["a"] * 3), rtol=1e-5)
    np.testing.assert_allclose(together[3:], with_document_context(b, ["b"] * 2), rtol=1e-5)


def test_weight_zero_and_zero_rows_are_left_alone() -> None:
    matrix = np.array([[0.0, 0.0], [1.0, 1.0]])

    np.testing.assert_array_equal(with_document_context(matrix, ["a", "b"], weight=0), matrix)
    mixed = with_document_context(matrix, ["a", "a"])
    np.testing.assert_array_equal(mixed[0], [0.0, 0.0])  # the store refuses it, not us
    np.testing.assert_allclose(np.linalg.norm(mixed[1]), np.sqrt(2), rtol=1e-6)


def test_the_vector_recipe_is_part_of_the_fingerprint() -> None:
    salt = index_salt("MarkdownAwareSplitter(200, 0)")

    assert VECTOR_RECIPE in salt
    assert fingerprint("h", salt) != fingerprint("h", "MarkdownAwareSplitter(200, 0)")
    # The default weight names the recipe (0.5 since bench retrieval chose it: indexes
    # built with 1.0 are embedded again on their next run, once).
    assert salt.endswith("|document-context=0.5")
    assert index_salt("MarkdownAwareSplitter(200, 0)", 0.5) == salt
    assert index_salt("MarkdownAwareSplitter(200, 0)", 1).endswith("|document-context=1.0")
    other = index_salt("MarkdownAwareSplitter(200, 0)", 0.0)
    assert other.endswith("|document-context=0.0")
    assert fingerprint("h", other) != fingerprint("h", salt)


@pytest.mark.integration
def test_embed_batch_applies_the_context_weight(embedder: Embedder) -> None:
    chunks = [Chunk(source=source, ordinal=i, text=text, metadata={})
              for source, i, text in [("a.md", 0, "Install the package with pip."),
                                      ("a.md", 1, "Configure the database URL."),
                                      ("b.md", 0, "Backflush deducts consumed components.")]]
    batch = make_batches([doc("a.md"), doc("b.md")], chunks, MODEL, batch_chunks=10)[0]
    raw = embedder.embed_passages([c.text_for_embedding for c in chunks])

    own = np.stack([e.embedding for e in embed_batch(embedder, batch, 0.0)])
    mixed = np.stack([e.embedding for e in embed_batch(embedder, batch)])

    np.testing.assert_allclose(own, raw, rtol=1e-6)
    np.testing.assert_allclose(mixed, with_document_context(raw, ["a.md", "a.md", "b.md"]),
                               rtol=1e-6)
    # A source alone in its document keeps its direction; the others move towards it.
    np.testing.assert_allclose(mixed[2], raw[2], rtol=1e-5)
    assert not np.allclose(mixed[0], raw[0], rtol=1e-3)
