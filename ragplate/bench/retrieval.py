"""``ragplate bench retrieval``: documentation-retrieval recipes against every dataset.

A recipe is how documents are split (chunk size and overlap), what is prepended to the
embedded text (the heading breadcrumb, the source label in words), the document-context
weight, and the retrieval (vector, or hybrid with an RRF constant). The corpus is indexed
once per splitting into a scratch PostgreSQL with the real model (embeddings are cached by
text, so recipes that embed the same texts share them), then every dataset's cases run
through :func:`ragplate.tasks.retrieval.documentation.retrieve_developer` exactly as
``ragplate retrieve`` answers them. A development dataset counts twice: its tuning part and
its test part (:func:`ragplate.tasks.evaluation.dataset_files.dataset_part`).

Figures per recipe and dataset part: cases scored, hits in the top 5, hit@5 and MRR@5
(cases without expected labels are not scored). A recipe that loses more than one case of
hits, or more than one case's worth of reciprocal rank, against today's default on any
dataset is marked.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from ragplate.bench.scratch import scratch_home, write_figures
from ragplate.catalog.errors import InvalidInputError

console = Console(width=220)
#: Passage vectors by the SHA-256 of their text, kept between runs (the model is fixed).
def cache_path(environ: Mapping[str, str] | None = None) -> Path:
    """The passage vectors of earlier runs: in this user's cache directory
    (``$XDG_CACHE_HOME``, else ``~/.cache``), not a file every user of /tmp shares."""
    environ = os.environ if environ is None else environ
    base = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ragplate" / "bench-retrieval-embeddings.npz"


@dataclass(frozen=True)
class Splitting:
    """How documents become embedded chunks."""

    name: str
    max_words: int
    overlap_words: int
    breadcrumb: bool
    source_label: bool


@dataclass(frozen=True)
class Recipe:
    """A splitting, a document-context weight and a retrieval."""

    splitting: Splitting
    weight: float
    strategy: str
    rrf_k: int = 60

    @property
    def name(self) -> str:
        retrieval = self.strategy if self.strategy == "vector" else f"{self.strategy}-k{self.rrf_k}"
        return f"{self.splitting.name} w{self.weight:g} {retrieval}"


SPLITTINGS: tuple[Splitting, ...] = (
    Splitting("200/0 crumb+label", 200, 0, True, True),
    Splitting("250/30 crumb+label", 250, 30, True, True),
    Splitting("250/30 crumb", 250, 30, True, False),
    Splitting("250/30 plain", 250, 30, False, False),
    Splitting("120/20 crumb+label", 120, 20, True, True),
    Splitting("120/20 crumb", 120, 20, True, False),
    Splitting("160/30 crumb+label", 160, 30, True, True),
    Splitting("350/50 crumb+label", 350, 50, True, True),
)
WEIGHTS: tuple[float, ...] = (1.0, 0.5, 0.25, 0.0)
RETRIEVALS: tuple[tuple[str, int], ...] = (("vector", 60), ("hybrid", 60), ("hybrid", 20),
                                           ("adaptive", 20))
#: What ragplate served when this benchmark was written, the reference every recipe is held
#: to: the first splitting, weight 1, vector.
BASELINE = Recipe(SPLITTINGS[0], 1.0, "vector")


def recipes(only: Sequence[str] = ()) -> list[Recipe]:
    """Every recipe measured (or those whose name holds one of ``only``), today's default
    first."""
    every = [Recipe(s, w, strategy, k) for s in SPLITTINGS for w in WEIGHTS
             for strategy, k in RETRIEVALS]
    chosen = [r for r in every
              if r == BASELINE or not only or any(text in r.name for text in only)]
    return sorted(chosen, key=lambda r: r != BASELINE)


def _index(store: Any, documents: Sequence[Any], splitting: Splitting, weight: float,
           embed: Any, profile_key: str) -> int:
    from ragplate.infra.stores.base import EmbeddedChunk
    from ragplate.tasks.indexing import index
    from ragplate.tasks.indexing.split import MarkdownAwareSplitter, split_documents

    splitter = MarkdownAwareSplitter(splitting.max_words, splitting.overlap_words,
                                     splitting.breadcrumb, splitting.source_label)
    chunks = split_documents(documents, splitter)
    store.reset()
    for batch in index.make_batches(documents, chunks, profile_key, batch_chunks=200):
        if not batch.chunks:
            store.add([], batch.sources)
            continue
        matrix = embed([c.text_for_embedding for c in batch.chunks])
        matrix = index.with_document_context(matrix, [c.source for c in batch.chunks], weight)
        store.replace_sources([EmbeddedChunk(c, matrix[i]) for i, c in enumerate(batch.chunks)],
                              batch.sources)
    store.ensure_search_index()
    return len(chunks)


def _score(cases: Sequence[Any], answer: Any) -> dict[str, Any]:
    from ragplate.tasks.evaluation.metrics import first_rank

    scored = [c for c in cases if c.expected_source_labels]
    hits, rr = 0, 0.0
    for case in scored:
        rank = first_rank(answer(case), case.expected_source_labels)
        if rank is not None and rank <= 5:
            hits += 1
            rr += 1.0 / rank
    n = len(scored)
    return {"cases": n, "hits": hits, "rr_sum": round(rr, 4),
            "hit_at_5": round(hits / n, 4) if n else 0.0,
            "mrr_at_5": round(rr / n, 4) if n else 0.0}


def _datasets(paths: Sequence[Path]) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """``{name: cases}`` and ``{name: data_classification}``; a development dataset (with
    a description naming its split) gives its tuning and test parts."""
    from ragplate.catalog.datasets import DocumentationDataset
    from ragplate.tasks.evaluation.dataset_files import dataset_part, read_dataset

    found: dict[str, list[Any]] = {}
    classes: dict[str, str] = {}
    for path in paths:
        data = read_dataset(path, DocumentationDataset).data
        if "tuning part" in (data.description or ""):
            for part in ("tuning", "test"):
                found[f"{path.stem}:{part}"] = dataset_part(data, part).cases
                classes[f"{path.stem}:{part}"] = data.data_classification
        else:
            found[path.stem] = data.cases
            classes[path.stem] = data.data_classification
    return found, classes


def absent_label_warnings(cases: Mapping[str, Sequence[Any]],
                          classifications: Mapping[str, str], sources: Collection[str],
                          corpus: Path) -> list[str]:
    """One warning per dataset (part) whose expected source labels are not all sources of
    the corpus (read with the label prefix ``''``, so a label is the path under
    ``corpus``): its cases cannot score through them, and a dataset written for another
    corpus or prefix would score 0 in silence. A private dataset's labels are counted,
    never named."""
    from ragplate.tasks.evaluation.documentation import named

    held = set(sources)
    lines = []
    for name, part in cases.items():
        expected = sorted({label for case in part for label in case.expected_source_labels})
        absent = [label for label in expected if label not in held]
        if absent:
            lines.append(
                f"warning: {name}: {len(absent)} of {len(expected)} expected source "
                f"label(s) are not sources of the corpus {corpus} (read with the label "
                "prefix '', so a label is a path under it), so its cases cannot score "
                f"through them: {named(absent, classifications.get(name, 'private'))}")
    return lines


def run(*, corpus: Path, datasets: Sequence[Path], output: Path,
        only: Sequence[str] = ()) -> dict[str, Any]:
    """Measure every recipe (or those whose name holds one of ``only``) on every dataset;
    write and print the figures."""
    from ragplate.catalog.profiles import get_profile
    from ragplate.catalog.settings import DEFAULT_PROFILE
    from ragplate.infra.database import get_engine
    from ragplate.infra.models.local import LocalEmbedder
    from ragplate.infra.stores.pgvector import PgvectorStore
    from ragplate.tasks.evaluation.application_content import QueryMemo
    from ragplate.tasks.indexing.read import developer_corpus, read_sources
    from ragplate.tasks.retrieval.documentation import retrieve_developer

    unknown = [text for text in only if not any(text in r.name for r in recipes())]
    if unknown:
        raise InvalidInputError(f"--recipe {', '.join(map(repr, unknown))}: no recipe's name "
                                "holds it (names read like '120/20 crumb+label w0.5 adaptive-k20')")
    cases, classifications = _datasets(datasets)
    # Read before the scratch database starts: the warning comes before minutes of work.
    documents = developer_corpus(read_sources({"": corpus}))
    for line in absent_label_warnings(cases, classifications,
                                      [d.source for d in documents], corpus):
        console.print(line, markup=False, highlight=False)
    profile = get_profile(DEFAULT_PROFILE)
    embedder = QueryMemo(LocalEmbedder(profile))
    cache: dict[str, np.ndarray] = {}
    stored_at = cache_path()
    stored_at.parent.mkdir(parents=True, exist_ok=True)
    if stored_at.exists():
        try:
            with np.load(stored_at) as stored:
                cache.update({key: stored[key] for key in stored.files})
        except (OSError, ValueError) as exc:  # a cache is only ever a shortcut
            console.print(f"{stored_at}: unreadable ({type(exc).__name__}); embedding again",
                          highlight=False)
            cache.clear()

    def embed(texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if _key(t) not in cache]
        if todo:
            for text, vector in zip(todo, embedder.embed_passages(todo), strict=True):
                cache[_key(text)] = vector
            # Whole or not at all: an interrupted save must not leave a broken cache.
            partial = stored_at.with_name(f".{stored_at.name}.{os.getpid()}.npz")
            np.savez(partial, **cache)  # type: ignore[arg-type]  # keys are array names
            os.replace(partial, stored_at)
        return np.stack([cache[_key(t)] for t in texts])

    results: dict[str, dict[str, Any]] = {}
    with scratch_home("ragplate-bench-retrieval-") as (_scratch, settings):
        engine = get_engine(settings)
        chunk_counts: dict[str, int] = {}
        chosen = recipes(only)
        for splitting in SPLITTINGS:
            for weight in WEIGHTS:
                if not any(r.splitting == splitting and r.weight == weight for r in chosen):
                    continue
                store = PgvectorStore("bench-retrieval", profile, engine)
                chunk_counts[splitting.name] = _index(store, documents, splitting, weight,
                                                      embed, profile.key)
                for recipe in (r for r in chosen
                               if r.splitting == splitting and r.weight == weight):
                    def answer(case: Any, recipe: Recipe = recipe, store: Any = store) -> list[str]:
                        return [h.source_label for h in retrieve_developer(
                            case.query, store=store, embedder=embedder, top_k=case.top_k,
                            strategy=recipe.strategy, rrf_k=recipe.rrf_k)]  # type: ignore[arg-type]
                    results[recipe.name] = {name: _score(part, answer)
                                            for name, part in cases.items()}
                    console.print(f"{recipe.name}: " + ", ".join(
                        f"{n} {v['hit_at_5']}/{v['mrr_at_5']}" for n, v in
                        results[recipe.name].items()), highlight=False)
    figures = {"corpus": str(corpus), "datasets": [str(p) for p in datasets],
               "baseline": BASELINE.name, "chunks": chunk_counts,
               "recipes": {name: {**by_set, "loses_to_baseline": _loses(by_set,
                                                                        results[BASELINE.name])}
                           for name, by_set in results.items()}}
    write_figures(output, figures)
    _print(figures)
    return figures


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _loses(figures: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
    """The datasets on which ``figures`` lose more than one case against the baseline, in
    hits or in reciprocal rank."""
    return [name for name, own in figures.items()
            if own["hits"] < baseline[name]["hits"] - 1
            or own["rr_sum"] < baseline[name]["rr_sum"] - 1.0]


def _print(figures: dict[str, Any]) -> None:
    names = list(next(iter(figures["recipes"].values())))
    names = [n for n in names if n != "loses_to_baseline"]
    table = Table(title=f"hit@5 / MRR@5 per recipe (baseline: {figures['baseline']})")
    table.add_column("recipe")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("loses on")
    for recipe, by_set in figures["recipes"].items():
        table.add_row(recipe, *(f"{by_set[n]['hit_at_5']:.3f} / {by_set[n]['mrr_at_5']:.3f}"
                                for n in names), ", ".join(by_set["loses_to_baseline"]) or "–")
    console.print(table)
