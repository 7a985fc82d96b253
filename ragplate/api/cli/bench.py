"""``ragplate bench …``: benchmarks that print figures (never timed tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Benchmarks that print figures.", no_args_is_help=True)

DEFAULT_CORPUS = Path(__file__).resolve().parents[4] / "shared" / "corpora" / "laraplate"
DEFAULT_DATASETS = DEFAULT_CORPUS.parents[1] / "benchmarks" / "laraplate"


@app.command("indexing")
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
) -> None:
    """Index a corpus cold, unchanged and with one file edited; measure raw embedding,
    retrieval quality (hit@5, MRR@5) and query latency. Uses a scratch RAGPLATE_HOME.

    Example: ragplate bench indexing --corpus ../shared/corpora/laraplate
    """
    from ragplate.bench.indexing import run

    run(corpus=corpus, datasets=datasets, output=output)
