"""Reading the settings from the environment: the one place that does.

The edges call :func:`get_settings` (or :func:`load_settings`) once, a CLI command, the
API's factory, the start of a flow run, and pass the :class:`~ragplate.catalog.settings.
Settings` on; nothing below them reads the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_settings.exceptions import SettingsError

from ragplate.catalog.errors import ConfigurationError, validation_message
from ragplate.catalog.profiles import enable_test_profiles
from ragplate.catalog.settings import Settings
from ragplate.infra.home import named_home


def default_home(environ: Mapping[str, str]) -> Path | None:
    """``$XDG_DATA_HOME/ragplate`` when ``XDG_DATA_HOME`` is set and ``RAGPLATE_HOME`` is
    not; ``None`` otherwise (the variable, or the settings' own default, applies). A
    ``RAGPLATE_HOME`` set but empty (or only whitespace) is refused with
    :class:`EmptyVariableError`, as for every setting."""
    if named_home(environ) is not None:
        return None
    base = environ.get("XDG_DATA_HOME")
    return Path(base) / "ragplate" if base else None


def load_settings() -> Settings:
    """Settings from the environment; a value that does not parse raises
    :class:`ConfigurationError` naming the variable (not pydantic's traceback).

    ``RAGPLATE_TEST_PROFILES=true`` also declares the test-only hashing profiles in this
    process, so that a flow run or a command started by a test sees them."""
    home = default_home(os.environ)
    overrides: dict[str, Any] = {} if home is None else {"home": home}
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        problems = [
            f"{_variable(error['loc'])}: {validation_message(error)}"
            f"{_shown(error['loc'], error.get('input'))}"
            for error in exc.errors(include_url=False)
        ]
        raise ConfigurationError("invalid setting: " + "; ".join(problems)) from None
    except SettingsError as exc:
        # pydantic-settings names the field, not the variable: "error parsing value for
        # field "switch_retry_delays" from source …".
        match = re.search(r'field "([^"]+)"', str(exc))
        name = _variable((match.group(1),)) if match else "a RAGPLATE_ variable"
        raise ConfigurationError(f"invalid setting: {name} is not valid JSON") from None
    if settings.test_profiles:
        enable_test_profiles()
    return settings


def _shown(loc: tuple[Any, ...], value: object) -> str:
    """The rejected value for the message, unless the variable may hold a secret."""
    if any(word in str(part).lower() for part in loc
           for word in ("key", "secret", "token", "password", "url")):
        return ""
    return f" (got {str(value)[:80]!r})"


def _variable(loc: tuple[Any, ...]) -> str:
    """The environment variable of a settings field location."""
    return "RAGPLATE_" + "__".join(str(part).upper() for part in loc)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; tests call ``get_settings.cache_clear()``)."""
    return load_settings()
