"""The retry policy of every wing's Prefect tasks: only I/O steps retry (reading files, the
database, a remote model server), and a deterministic refusal (bad input, a wrong vector
length, a configuration mistake) fails at once, since a retry cannot fix it. And
:func:`as_is`, how a flow hands a task a large value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from ragplate.catalog.errors import ConfigurationError, DimensionMismatchError, InvalidInputError

IO_RETRY_DELAYS: list[float] = [2, 5, 10]
_PERMANENT = (InvalidInputError, DimensionMismatchError, ConfigurationError)


def retry_unless_permanent(task_: Any, task_run: Any, state: Any) -> bool:
    """Retry an I/O step unless it failed on bad input, which a retry cannot fix."""
    try:
        state.result()
    except _PERMANENT:
        return False
    except Exception:
        return True
    return True


P = ParamSpec("P")
R = TypeVar("R")


def io_task(name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """``@task`` for an I/O step: retried (unless permanent), never cached."""
    return task(
        name=name,
        retries=3,
        retry_delay_seconds=IO_RETRY_DELAYS,
        retry_condition_fn=retry_unless_permanent,
        cache_policy=NO_CACHE,
    )


T = TypeVar("T")


def as_is(value: T) -> T:
    """``value`` as a task argument Prefect passes without walking it.

    To record a task run's inputs Prefect visits every field of every argument, which for
    a run's documents or batches costs more than the step itself; the task receives the
    value unchanged (``quote``), typed as the value for the caller."""
    return cast(T, quote(value))
