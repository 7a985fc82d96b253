"""What an indexing run reads and writes: its roots and its indexes (no Prefect, so the
command line checks them before starting any service)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragplate.catalog.documents import INDEXES, label_prefix_problem
from ragplate.catalog.errors import InvalidInputError

if TYPE_CHECKING:
    from ragplate.catalog.settings import Settings


def explicit_root(path: str | None, prefix: str | None) -> dict[str, Path] | None:
    """The root of ``--path`` (with its prefix, default the directory name), ``None``
    without one; refuses an empty value, a missing directory or ``--prefix`` alone."""
    if path is None:
        if prefix is not None:
            raise InvalidInputError("--prefix needs --path")
        return None
    if not path.strip():
        # Path("") is the working directory: an empty value (an unset shell variable) would
        # index whatever the command was started in.
        raise InvalidInputError("--path is empty: name the documentation directory")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise InvalidInputError(f"--path {path}: not a directory")
    label_prefix = root.resolve().name if prefix is None else prefix.strip("/")
    problem = label_prefix_problem(label_prefix)
    if problem is not None:
        shown = f"--prefix {prefix!r}" if prefix is not None else f"--path {path}"
        raise InvalidInputError(f"{shown}: {problem}")
    return {label_prefix: root}


def resolve_roots(settings: Settings, path: str | None, prefix: str | None) -> dict[str, Path]:
    """An explicit ``--path`` (:func:`explicit_root`) or the configured roots plus
    ``RAGPLATE_DOCS_PATH``."""
    explicit = explicit_root(path, prefix)
    return settings.all_roots() if explicit is None else explicit


def indexes_for(profile: str) -> tuple[str, ...]:
    """``developer``, ``user`` or both."""
    if profile == "all":
        return INDEXES
    if profile not in INDEXES:
        raise InvalidInputError(f"--profile {profile!r}: expected developer, user or all")
    return (profile,)
