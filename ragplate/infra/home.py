"""Directories under ``RAGPLATE_HOME``, created on demand, and Prefect's files kept there.

Light on purpose (no pydantic, no prefect): the CLI's entry point uses it before any
command, so that ``import prefect`` (which creates its home) finds it under
``RAGPLATE_HOME``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ragplate.catalog.errors import ConfigurationError, EmptyVariableError, is_blank


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


#: Prefect's settings that name where it writes: its home (created by ``import prefect``),
#: and the local result storage (written by a failed flow run), both aliases.
HOME_VARIABLES = ("PREFECT_HOME",)
STORAGE_VARIABLES = ("PREFECT_RESULTS_LOCAL_STORAGE_PATH", "PREFECT_LOCAL_STORAGE_PATH")
#: ``RAGPLATE_HOME`` when neither it nor ``XDG_DATA_HOME`` is set (the settings' default).
DEFAULT_HOME = Path("~/.local/share/ragplate")

#: What :func:`use_home_for_prefect` put in this process's environment.
_chosen: dict[str, str] = {}


def named_home(environ: Mapping[str, str]) -> str | None:
    """``RAGPLATE_HOME`` of ``environ`` in any case, as the settings read it (``None`` when
    unset). Set but empty (or only whitespace), it is refused with
    :class:`EmptyVariableError`, as the settings refuse it."""
    named = [value for key, value in environ.items() if key.upper() == "RAGPLATE_HOME"]
    if named and is_blank(named[0]):
        raise EmptyVariableError(["RAGPLATE_HOME"])
    return named[0] if named else None


def ragplate_home(environ: Mapping[str, str]) -> Path:
    """:func:`named_home`, else ``$XDG_DATA_HOME/ragplate``, else :data:`DEFAULT_HOME`;
    absolute."""
    named = named_home(environ)
    if named is not None:
        home = Path(named)
    elif environ.get("XDG_DATA_HOME"):
        home = Path(environ["XDG_DATA_HOME"]) / "ragplate"
    else:
        home = DEFAULT_HOME
    return home.expanduser().resolve()


def prefect_home_environment(home: Path,
                             environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where Prefect writes in a ragplate process of ``home``: ``PREFECT_HOME`` and the
    local result storage under ``home/prefect`` (the local server's own directory). Only
    what the operator did not set: a ``PREFECT_HOME`` of theirs keeps both (its storage
    follows it), a storage path of theirs keeps that one."""
    environ = os.environ if environ is None else environ

    def operator_set(name: str) -> bool:
        # A value this process set for an earlier home is not the operator's choice.
        return bool(environ.get(name)) and environ.get(name) != _chosen.get(name)

    if any(operator_set(name) for name in HOME_VARIABLES):
        return {}
    prefect_home = home / "prefect"
    chosen = {"PREFECT_HOME": str(prefect_home)}
    if not any(operator_set(name) for name in STORAGE_VARIABLES):
        chosen["PREFECT_RESULTS_LOCAL_STORAGE_PATH"] = str(prefect_home / "storage")
    return chosen


def prefect_logging_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Prefect's logging settings a ragplate process needs that ``environ`` lacks:
    ragplate's own loggers among Prefect's extra loggers, so that a warning of a step (a
    switch's forced activation, a gate that compared nothing) is in its flow run's logs in
    the UI, not only on the console of the process that ran it; and no warning for their
    records outside any flow run (a command's own work), which stay on the console."""
    environ = os.environ if environ is None else environ
    chosen: dict[str, str] = {}
    extra = [n.strip() for n in environ.get("PREFECT_LOGGING_EXTRA_LOGGERS", "").split(",")
             if n.strip()]
    if "ragplate" not in extra:
        chosen["PREFECT_LOGGING_EXTRA_LOGGERS"] = ",".join([*extra, "ragplate"])
    if not environ.get("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW"):
        chosen["PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW"] = "ignore"
    return chosen


def use_home_for_prefect(home: Path) -> dict[str, str]:
    """Set :func:`prefect_home_environment` and :func:`prefect_logging_environment` in this
    process's environment (read when ``prefect`` is imported, and inherited by the
    processes it starts); returns the home's part."""
    chosen = prefect_home_environment(home)
    os.environ.update(chosen)
    os.environ.update(prefect_logging_environment())
    _chosen.update(chosen)
    return chosen
