"""The candidates of ``tune-retrieval``: the 108-candidate default grid, or a JSON file.

A candidate is a partial fusion parameter set; what it omits keeps the planner's value for
each query. The default grid crosses six weight triples (keyword, vector, hybrid) with three
``rrf_k``, three ``rrf_weight`` and two ``agreement_boost`` values (6 × 3 × 3 × 2 = 108);
its first candidate is the L0 constants, so a tie keeps them. A grid file holds a JSON list
of parameter sets and replaces the default; ranking parameters (``rerank_top_k``,
``rerank_blend``) are refused, because the rerank blend cannot be replayed from fused
scores.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.search_tuning import ParamSet, check_params
from ragplate.tasks.evaluation.dataset_files import read_json

#: (keyword, vector, hybrid): the L0 weights first, then the planner's short-query split,
#: then one leaning on each strategy and an even split.
WEIGHT_TRIPLES: tuple[tuple[float, float, float], ...] = (
    (0.35, 0.35, 0.30), (0.30, 0.40, 0.30), (0.50, 0.25, 0.25),
    (0.25, 0.50, 0.25), (0.25, 0.25, 0.50), (0.34, 0.33, 0.33),
)
RRF_KS: tuple[int, ...] = (60, 20, 100)
RRF_WEIGHTS: tuple[float, ...] = (0.25, 0.10, 0.50)
AGREEMENT_BOOSTS: tuple[float, ...] = (0.15, 0.0)
MAX_GRID_BYTES = 1_000_000
MAX_CANDIDATES = 2000


def default_grid() -> list[ParamSet]:
    """The 108 default candidates, the L0 constants first."""
    grid: list[ParamSet] = []
    for (kw, vec, hyb), rrf_k, rrf_weight, boost in itertools.product(
            WEIGHT_TRIPLES, RRF_KS, RRF_WEIGHTS, AGREEMENT_BOOSTS):
        grid.append({"keyword_weight": kw, "vector_weight": vec, "hybrid_weight": hyb,
                     "rrf_k": rrf_k, "rrf_weight": rrf_weight, "agreement_boost": boost})
    return grid


def parse_grid(data: Any, where: str) -> list[ParamSet]:
    """Validate a decoded grid file: a non-empty list of parameter sets; an error names
    the candidate (by position) and the parameter."""
    if not isinstance(data, list) or not data:
        raise InvalidInputError(f"{where}: a grid is a non-empty JSON list of parameter sets")
    if len(data) > MAX_CANDIDATES:
        raise InvalidInputError(f"{where}: {len(data)} candidates, above the cap of "
                                f"{MAX_CANDIDATES}")
    grid = []
    for position, params in enumerate(data):
        try:
            grid.append(check_params(params, f"{where}: candidate #{position}"))
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from None
        if not grid[-1]:
            raise InvalidInputError(f"{where}: candidate #{position} sets no parameter")
    return grid


def load_grid(grid: str) -> tuple[str, list[ParamSet]]:
    """``("default", the default grid)`` for ``default``, else the named file, validated;
    returns the grid's name (the file name) and its candidates."""
    if grid == "default":
        return "default", default_grid()
    path = Path(grid)
    # Read as datasets are: caps, UTF-8, no key twice (the second would replace the first).
    data = read_json(path, max_bytes=MAX_GRID_BYTES, name=f"--grid {grid}")[1]
    return path.name, parse_grid(data, f"--grid {grid}")
