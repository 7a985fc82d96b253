"""Retention and erasure of query records: both work whether logging is on or off, and do
nothing when the store does not exist."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ragplate.catalog.analytics import user_ref
from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.settings import Settings
from ragplate.infra.analytics import QueryLog


def prune(store: QueryLog, *, retention_days: int, now: datetime | None = None) -> int:
    """Delete the records older than ``retention_days``; how many."""
    cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    return store.delete_before(cutoff)


def refs(user_id: int, settings: Settings) -> list[str]:
    """The references of ``user_id`` under the current key and every previous one."""
    keys = ([settings.app_key] if settings.app_key is not None else []) + list(
        settings.app_previous_keys)
    return list(dict.fromkeys(user_ref(user_id, k.get_secret_value()) for k in keys))


#: Why an erasure without any application key is refused rather than reported as done.
NO_KEY = ("RAGPLATE_APP_KEY is not set: query records name a person only by a reference "
          "made with it, so none can be found to erase; set it (and RAGPLATE_APP_PREVIOUS_KEYS "
          "for the keys before it) to the key(s) the API logged under")


def erase(store: QueryLog, settings: Settings, *, user_id: int) -> int:
    """Delete every record of ``user_id`` (any key it was written under); how many.
    :class:`ConfigurationError` without the current key: a "0 deleted" (or the count
    under the previous keys alone) would say the person's records are gone when those
    logged now could not even be looked for."""
    if settings.app_key is None:  # the previous keys alone miss what is logged now
        raise ConfigurationError(NO_KEY)
    return store.delete_refs(refs(user_id, settings))
