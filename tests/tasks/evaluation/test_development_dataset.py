"""The development dataset and its split: deterministic by case id, a part per purpose."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

from ragplate.catalog.datasets import DocumentationDataset
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.tasks.evaluation.dataset_files import dataset_part, held_out, read_dataset
from ragplate.tasks.evaluation.expectations import validate_documentation_dataset

DEV = PROJECT_ROOT / "datasets" / "documentation-laraplate-dev.json"


def test_held_out_depends_on_the_ids_only() -> None:
    ids = [f"case-{i}" for i in range(10)]
    chosen = held_out(ids, 0.3)
    assert len(chosen) == 3
    assert held_out(list(reversed(ids)), 0.3) == chosen
    # The first three by the SHA-256 of the id, not the first three given.
    by_hash = sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    assert chosen == set(by_hash[:3]) != set(ids[:3])
    assert held_out(ids, 0.0) == set() and held_out([], 0.5) == set()


def test_the_development_dataset_is_large_mixed_and_split_in_two() -> None:
    data = read_dataset(DEV, DocumentationDataset).data
    validate_documentation_dataset(data)
    assert len(data.cases) >= 150
    locales = Counter(c.locale for c in data.cases)
    assert locales["en"] >= 50 and locales["it"] >= 50
    kinds = Counter(tag for c in data.cases for tag in c.slices)
    for kind in ("paraphrase", "section", "multihop", "noanswer"):
        assert kinds[kind] >= 15, kind
    assert sum(c.expect_refusal for c in data.cases) == kinds["noanswer"]
    tuning, test = dataset_part(data, "tuning"), dataset_part(data, "test")
    assert {c.id for c in tuning.cases}.isdisjoint(c.id for c in test.cases)
    assert len(tuning.cases) + len(test.cases) == len(data.cases)
    assert abs(len(tuning.cases) - len(test.cases)) <= 0.2 * len(data.cases)
    assert dataset_part(data, "all") is data


HELDOUT = PROJECT_ROOT / "datasets" / "documentation-laraplate-heldout.json"


def test_the_held_out_dataset_is_separate_mixed_and_labelled_with_real_pages(
    laraplate_corpus: Path,
) -> None:
    data = read_dataset(HELDOUT, DocumentationDataset).data
    validate_documentation_dataset(data)
    assert len(data.cases) >= 60
    assert "tuning part" not in (data.description or "")  # scored whole, never split
    locales = Counter(c.locale for c in data.cases)
    assert locales["en"] >= 30 and locales["it"] >= 15
    kinds = Counter(tag for c in data.cases for tag in c.slices)
    for kind in ("howto", "concept", "config", "keyword", "multi-hop", "troubleshooting"):
        assert kinds[kind] >= 4, kind
    dev = read_dataset(DEV, DocumentationDataset).data
    assert {c.id for c in data.cases}.isdisjoint(c.id for c in dev.cases)
    assert {c.query.casefold() for c in data.cases}.isdisjoint(
        c.query.casefold() for c in dev.cases)
    labels = {label for c in data.cases for label in c.expected_source_labels}
    missing = sorted(label for label in labels if not (laraplate_corpus / label).is_file())
    assert not missing
    assert len(labels) >= 30  # spread over the corpus, not a few pages


EVERYDAY = PROJECT_ROOT / "datasets" / "documentation-laraplate-everyday.json"


def test_the_everyday_dataset_is_no_answer_questions_apart_from_the_others() -> None:
    data = read_dataset(EVERYDAY, DocumentationDataset).data
    # Questions with no answer alone are a valid dataset: it measures abstention.
    assert validate_documentation_dataset(data).rows == len(data.cases) == 200
    assert all(c.expect_refusal and not c.expected_source_labels
               and not c.expected_citation_labels for c in data.cases)
    assert Counter(c.locale for c in data.cases) == {"en": 100, "it": 100}
    assert all(c.slices[0] == "everyday" and len(c.slices) >= 2 for c in data.cases)
    worklike = Counter(c.locale for c in data.cases if "worklike" in c.slices)
    assert worklike["en"] >= 20 and worklike["it"] >= 20
    others = [read_dataset(path, DocumentationDataset).data for path in (DEV, HELDOUT)]
    asked = {c.query.casefold() for other in others for c in other.cases}
    assert asked.isdisjoint(c.query.casefold() for c in data.cases)
    assert len({c.query.casefold() for c in data.cases}) == 200
