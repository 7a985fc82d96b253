"""``ragplate bench …``: benchmarks that print figures (never timed tests)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ragplate.cli.output import examples
from ragplate.cli.paths import BUNDLED_DOCS, PROJECT_ROOT

DEFAULT_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "laraplate"
DEFAULT_DATASETS = DEFAULT_CORPUS.parents[1] / "benchmarks" / "laraplate"


def indexing(
    corpus: Annotated[Path, typer.Option(help="Documentation directory to index.")] = (
        DEFAULT_CORPUS
    ),
    datasets: Annotated[Path, typer.Option(help="Directory of the public datasets.")] = (
        DEFAULT_DATASETS
    ),
    output: Annotated[Path, typer.Option(help="Where to write the figures.")] = Path(
        "reports/bench-indexing.json"
    ),
    store: Annotated[str, typer.Option(
        help="pgvector, or elasticsearch: the store's figures measured again on "
             "Elasticsearch (RAGPLATE_ELASTICSEARCH_URL, else the noida-db emulator), beside "
             "pgvector's.")] = "pgvector",
) -> None:
    """Index a corpus cold, unchanged and with one file edited; measure raw embedding,
    retrieval quality (hit@5, MRR@5) and query latency. Uses a scratch RAGPLATE_HOME.

    Examples:

        ragplate bench indexing --corpus ../shared/corpora/laraplate

        ragplate bench indexing --store elasticsearch --output /tmp/bench-es.json
    """
    from ragplate.bench.indexing import run

    _directory(corpus, "--corpus")
    _directory(datasets, "--datasets")
    run(corpus=corpus, datasets=datasets, output=_output(output), store=_store(store))


def _directory(path: Path, option: str) -> Path:
    """``path`` when it is a directory; otherwise refused before any service starts (the
    defaults point beside the checkout, where a clone elsewhere has nothing)."""
    from ragplate.catalog.errors import InvalidInputError

    if not path.is_dir():
        raise InvalidInputError(f"{option} {path}: no such directory")
    return path


def _files(paths: list[Path], option: str) -> list[Path]:
    """``paths`` when each is a readable file; otherwise the first that is not, refused."""
    from ragplate.catalog.errors import InvalidInputError

    for path in paths:
        if not path.is_file():
            raise InvalidInputError(f"{option} {path}: no such file")
    return paths


def _output(path: Path) -> Path:
    """``path`` when the figures can be written there (a file, or a file to create in a
    directory that exists or can be made); refused before any service starts, not after a
    run of many minutes."""
    from ragplate.catalog.errors import InvalidInputError

    if path.is_dir():
        raise InvalidInputError(f"--output {path}: is a directory, not a file")
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidInputError(f"--output {path}: {parent} is not a writable directory")
    return path


def _profile(key: str, option: str) -> str:
    """``key`` when it names a declared embedding profile."""
    from ragplate.catalog.errors import InvalidInputError, UnknownProfileError
    from ragplate.catalog.profiles import get_profile

    try:
        get_profile(key)
    except UnknownProfileError as exc:
        raise InvalidInputError(f"{option}: {exc}") from None
    return key


def _store(name: str) -> str:
    from ragplate.bench.engines import STORES
    from ragplate.catalog.errors import InvalidInputError

    if name not in STORES:
        raise InvalidInputError(f"--store {name[:40]!r}: use {' or '.join(STORES)}")
    return name


def switch(
    records: Annotated[int, typer.Option(min=10, help="cms.contents records (~40 words).")] = (
        2000
    ),
    source: Annotated[str, typer.Option(help="Model serving before the switch.")] = (
        "local:intfloat/multilingual-e5-small"
    ),
    target: Annotated[str, typer.Option(help="Model switched to.")] = (
        "local:cnmoro/portuguese-multilingual-e5-small"
    ),
    output: Annotated[Path, typer.Option(help="Where to write the figures.")] = Path(
        "reports/bench-switch.json"
    ),
    store: Annotated[str, typer.Option(
        help="pgvector, or elasticsearch: a switch timed again on Elasticsearch "
             "(RAGPLATE_ELASTICSEARCH_URL, else the noida-db emulator), beside pgvector's."
    )] = "pgvector",
    rework: Annotated[bool, typer.Option(
        "--rework/--no-rework", help="Also kill a switch and resume it (two more switches).")
    ] = True,
) -> None:
    """Time a full embedding-model switch against the raw embedding of the same texts,
    and measure the rework a SIGKILL costs once resumed. Uses a scratch RAGPLATE_HOME.

    Examples:

        ragplate bench switch --records 2000

        ragplate bench switch --store elasticsearch --records 200 --no-rework
    """
    from ragplate.bench.switch import run

    run(records=records, output=_output(output), source=_profile(source, "--source"),
        target=_profile(target, "--target"), store=_store(store), rework=rework)


def fusion(
    corpus: Annotated[Path, typer.Option(help="Documentation directory to index.")] = (
        DEFAULT_CORPUS
    ),
    dataset: Annotated[
        list[Path] | None,
        typer.Option(help="Developer dataset to measure (repeatable; default: the two public "
                     "developer datasets)."),
    ] = None,
    output: Annotated[Path, typer.Option(help="Where to write the figures.")] = Path(
        "reports/bench-fusion.json"
    ),
) -> None:
    """Index a corpus, then per dataset print the MRR of the vector, keyword and hybrid
    rankings beside the fusion ceiling: the best MRR any fusion of the vector and keyword
    rankings could reach, even tuned per case. Uses a scratch RAGPLATE_HOME.

    Example: ragplate bench fusion --corpus ../shared/corpora/laraplate
    """
    from ragplate.bench.fusion import run

    datasets = dataset or [DEFAULT_DATASETS / "2026-09-17-developer-core-baseline.json",
                           DEFAULT_DATASETS / "2026-09-18-developer-retrieval.json"]
    run(corpus=_directory(corpus, "--corpus"), datasets=_files(datasets, "--dataset"),
        output=_output(output))


def hostile(
    corpus: Annotated[Path, typer.Option(help="The clean documentation directory the hostile "
                                         "files are added to.")] = BUNDLED_DOCS,
    output: Annotated[Path, typer.Option(help="Where to write the figures.")] = Path(
        "reports/bench-hostile.json"
    ),
) -> None:
    """Index a corpus clean, with the indexable hostile files (links out of the root, an
    alias bomb, 20,000-level front matter, a byte order mark) and with the refused ones
    too (a NUL byte, a 20 MB file, a binary .md), each run as its own process; print time,
    peak RSS, exit code and the refusals named. Uses a scratch RAGPLATE_HOME.

    Example: ragplate bench hostile --corpus docs
    """
    from ragplate.bench.hostile import run

    run(corpus=_directory(corpus, "--corpus"), output=_output(output))


def retrieval(
    corpus: Annotated[Path, typer.Option(help="Documentation directory to index.")] = (
        DEFAULT_CORPUS
    ),
    dataset: Annotated[
        list[Path] | None,
        typer.Option(help="Developer dataset to score (repeatable; default: the two public "
                     "developer datasets, datasets/documentation-laraplate-dev.json, "
                     "whose tuning and test parts count apart, and the held-out "
                     "datasets/documentation-laraplate-heldout.json)."),
    ] = None,
    output: Annotated[Path, typer.Option(help="Where to write the figures.")] = Path(
        "reports/bench-retrieval.json"
    ),
    recipe: Annotated[
        list[str] | None,
        typer.Option(help="Measure only the recipes whose name holds this text (repeatable; "
                     "the reference recipe, the former default, is always measured)."),
    ] = None,
) -> None:
    """Score every documentation-retrieval recipe (chunk size and overlap, what is prepended
    to the embedded text, document-context weight, and the retrieval: vector, hybrid or
    adaptive with its RRF constant) on every dataset, with the real model; mark the recipes
    that lose more than one case against the former default anywhere. Uses a scratch
    RAGPLATE_HOME.

    Example: ragplate bench retrieval --corpus ../shared/corpora/laraplate --recipe adaptive
    """
    from ragplate.bench.retrieval import run

    datasets = dataset or [DEFAULT_DATASETS / "2026-09-17-developer-core-baseline.json",
                           DEFAULT_DATASETS / "2026-09-18-developer-retrieval.json",
                           PROJECT_ROOT / "datasets" / "documentation-laraplate-dev.json",
                           PROJECT_ROOT / "datasets" / "documentation-laraplate-heldout.json"]
    run(corpus=_directory(corpus, "--corpus"), datasets=_files(datasets, "--dataset"),
        output=_output(output), only=recipe or [])


def assistant(
    dataset: Annotated[
        list[Path] | None,
        typer.Option(help="Screening dataset (repeatable; default: the screening datasets "
                     "under datasets/ and the public assistant-injection.json)."),
    ] = None,
    docs: Annotated[Path, typer.Option(help="Documentation respond() (its user pages) and "
                                       "ragplate help answer from.")] = BUNDLED_DOCS,
    output: Annotated[Path, typer.Option(help="Where to write the figures.")] = Path(
        "reports/bench-assistant.json"
    ),
) -> None:
    """The input guardrails' figures per class and locale (attacks blocked, benign
    look-alikes allowed), their latency per message, respond()'s p50/p95 on the
    extractive default with the real model, and the wall time of ragplate help --question
    … --json as a whole process (6 runs, the first left out: min, median, max, and whether
    the answer had sources). Uses a scratch RAGPLATE_HOME.

    Example: ragplate bench assistant --dataset my-screening.json
    """
    from ragplate.bench.assistant import run

    datasets = dataset or [*sorted((PROJECT_ROOT / "datasets").glob("assistant-screening*.json")),
                           DEFAULT_DATASETS / "assistant-injection.json"]
    run(datasets=_files(datasets, "--dataset"), docs=_directory(docs, "--docs"),
        output=_output(output))


def register(app: typer.Typer) -> None:
    """Attach the ``bench`` group to the root app."""
    group = typer.Typer(help="Benchmarks that print figures.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate bench retrieval --corpus ../shared/corpora/laraplate",
                            "ragplate bench indexing --output reports/bench-indexing.json",
                            "ragplate bench assistant"))
    group.command("indexing")(indexing)
    group.command("switch")(switch)
    group.command("fusion")(fusion)
    group.command("hostile")(hostile)
    group.command("retrieval")(retrieval)
    group.command("assistant")(assistant)
    app.add_typer(group, name="bench")
