"""Directories under ``RAGPLATE_HOME``, created on demand."""

from __future__ import annotations

from pathlib import Path

from ragplate.catalog.errors import ConfigurationError


def ensure_dir(path: Path) -> Path:
    """``path`` (and its parents) as a directory; a path that cannot be created (a file
    in the way, no permission) raises :class:`ConfigurationError` naming it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"{path} cannot be created ({exc.strerror or exc}); set RAGPLATE_HOME to a "
            "directory this user can write"
        ) from None
    return path
