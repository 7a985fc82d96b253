"""An index's life: created with its mapping on first need (and its role's alias when the
role has none yet), checked against the mapping ragplate writes, deleted; aliases read and
moved in one ``_aliases`` call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragplate.catalog.errors import IndexMappingError
from ragplate.infra.elasticsearch.client import call, call_or_none

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch


def index_mapping(client: Elasticsearch, name: str) -> dict[str, Any] | None:
    """The mapping of an index (``mappings``: ``_meta``, ``properties``…), ``None`` when
    the index does not exist."""
    found = call_or_none(lambda: client.indices.get_mapping(index=name), name)
    if found is None:
        return None
    for body in found.values():  # keyed by the concrete index (also when named by alias)
        return dict(body.get("mappings") or {})
    return None


def index_meta(client: Elasticsearch, name: str) -> dict[str, Any] | None:
    """``_meta.ragplate`` of an index (``{}`` when it has none), ``None`` when the index
    does not exist."""
    mapping = index_mapping(client, name)
    if mapping is None:
        return None
    return dict((mapping.get("_meta") or {}).get("ragplate") or {})


def check_meta(name: str, found: dict[str, Any], wanted: dict[str, Any], recreate: str) -> None:
    """Refuse an index whose ``_meta.ragplate`` differs from the mapping ragplate writes
    (another mapping version, model, dimension count or similarity)."""
    for key, value in wanted.items():
        if found.get(key) != value:
            raise IndexMappingError(
                f"Elasticsearch index {name} has {key} {found.get(key)!r}, ragplate writes "
                f"{value!r}; recreate it with `{recreate}`")


def ensure_index(client: Elasticsearch, name: str, *, settings: dict[str, Any],
                 mappings: dict[str, Any], recreate: str, alias: str | None = None) -> None:
    """Create ``name`` with its settings and mapping unless it exists with the same
    ``_meta.ragplate``; an index of another mapping raises :class:`IndexMappingError`.
    ``alias``: given to the index when no index holds it yet (the first model of a role
    serves; later ones only through the switch's activation).

    Every write asks first (one small request): no process remembers an index as ready,
    because another one may have deleted it (a switch's prune), and a bulk write to a
    missing index lets the cluster create it with a guessed mapping wherever
    ``action.auto_create_index`` allows it."""
    wanted = mappings["_meta"]["ragplate"]
    mapping = index_mapping(client, name)
    if mapping is None:
        try:
            call(lambda: client.indices.create(index=name, settings=settings,
                                               mappings=mappings), name, recreate=recreate)
        except IndexMappingError as exc:  # created meanwhile by another process
            if "already_exists" not in str(exc):
                raise
        mapping = index_mapping(client, name) or {}
    check_meta(name, dict((mapping.get("_meta") or {}).get("ragplate") or {}), wanted,
               recreate)
    # A field a later release of the same mapping version added: an index made before
    # gets it (adding a field is the one change a strict mapping takes in place).
    missing = {field: body for field, body in mappings["properties"].items()
               if field not in (mapping.get("properties") or {})}
    if missing:
        call(lambda: client.indices.put_mapping(index=name, properties=missing), name,
             recreate=recreate)
    if alias is not None and not alias_targets(client, alias):
        call(lambda: client.indices.update_aliases(
            actions=[{"add": {"index": name, "alias": alias}}]), alias)


def delete_index(client: Elasticsearch, name: str) -> bool:
    """Delete ``name`` (its aliases go with it); whether it existed."""
    return call_or_none(lambda: client.indices.delete(index=name), name) is not None


def alias_targets(client: Elasticsearch, alias: str) -> list[str]:
    """The indexes ``alias`` points to (none when it does not exist)."""
    found = call_or_none(lambda: client.indices.get_alias(name=alias), alias)
    return sorted(found or ())


def point_alias(client: Elasticsearch, alias: str, index: str) -> list[str]:
    """Make ``alias`` name ``index`` only, in one ``_aliases`` call (removals and the
    addition are atomic: a reader of the alias never finds it missing or doubled);
    returns the indexes it left."""
    previous = [name for name in alias_targets(client, alias) if name != index]
    actions: list[dict[str, Any]] = [{"remove": {"index": name, "alias": alias}}
                                     for name in previous]
    actions.append({"add": {"index": index, "alias": alias}})
    call(lambda: client.indices.update_aliases(actions=actions), alias)
    return previous


def indexes_of(client: Elasticsearch, pattern: str) -> list[str]:
    """Existing indexes whose names match ``pattern`` (a ``*`` wildcard)."""
    found = call(lambda: client.indices.get(index=pattern, allow_no_indices=True,
                                            ignore_unavailable=True), pattern)
    return sorted(found)
