"""The assistant's scope: server-owned, never chosen by the model or taken as sent.

The module of the request's context counts only when it is a module key
(``^[a-z][a-z0-9_]*$``) that the documentation index actually holds; then retrieval keeps
that module's documents and the cross-cutting guides (``cross_cutting_user: true``), on top
of every access filter. Anything else falls back to the whole corpus the person may see.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ragplate.catalog.assistant import MODULE_KEY, Policy


@dataclass(frozen=True)
class Scope:
    """``module`` None: the whole corpus (the generic scope)."""

    module: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """What a message's metadata records of it."""
        return {"module": self.module, "doc_scope": "module" if self.module else "application"}


def requested_module(context: Mapping[str, Any] | None) -> str | None:
    """The module a context names (``{"module": "cms"}`` or a page resource
    ``{"page": {"resource": "cms/contents"}}``), unchecked."""
    if not context:
        return None
    module = context.get("module")
    page = context.get("page")
    if module is None and isinstance(page, Mapping):
        resource = page.get("resource")
        if isinstance(resource, str) and "/" in resource:
            module = resource.split("/", 1)[0]
    return module if isinstance(module, str) else None


def resolve_scope(policy: Policy, context: Mapping[str, Any] | None,
                  known_modules: Callable[[], set[str] | None]) -> Scope:
    """The scope of one message: the context's module when it is a recognisable module of
    the profile's index, else the generic scope (also when the store cannot list its
    modules: ``known_modules`` None)."""
    if policy.profile.name != "in_app":
        return Scope()
    module = requested_module(context)
    if module is None or not MODULE_KEY.match(module):
        return Scope()
    known = known_modules()
    if known is None or module not in known:
        return Scope()
    return Scope(module)
