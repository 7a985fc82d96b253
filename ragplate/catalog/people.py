"""People: who is asking, what they may do, and the names their permissions use.

A person is read from PostgreSQL on every request (``infra.people``); nothing a client sends
says who it is except its bearer token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta

from ragplate.catalog.documents import AccessContext
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.text import parse_span

#: May search the developer index (``POST /v1/docs/search``), which holds every document.
DEVELOPER_PERMISSION = "docs.developer"
#: May name another tenant than their own in application search.
OPERATOR_PERMISSION = "tenants.operator"
#: The tenant of the records every tenant sees; no person's.
GLOBAL_TENANT = "global"

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
PERMISSION_PATTERN = re.compile(r"^[a-z][a-z0-9_]*([.:][a-z0-9_*]+)*$")
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$")
LOCALE_PATTERN = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
#: Tokens start with this, so a leaked one is recognisable (secret scanners, logs).
TOKEN_PREFIX = "rp_"
#: Characters of a token kept as its hint in listings.
TOKEN_HINT_CHARS = 8
#: Days a token lives unless ``RAGPLATE_TOKEN_TTL_DAYS`` says otherwise (also the expiry
#: migration 0014 gave the tokens issued before tokens expired), and the most that setting
#: or ``--expires-in`` may give.
DEFAULT_TOKEN_TTL_DAYS = 90
MAX_TOKEN_TTL_DAYS = 3650
#: A token issued for an operator to act as someone (``--impersonated-by``) is a working
#: session, not a standing credential: this long unless ``--expires-in`` says otherwise,
#: never longer than the most.
IMPERSONATION_TOKEN_LIFETIME = timedelta(hours=8)
MAX_IMPERSONATION_TOKEN_LIFETIME = timedelta(hours=24)
#: The shortest lifetime ``--expires-in`` may give.
MIN_TOKEN_LIFETIME = timedelta(minutes=1)


@dataclass(frozen=True)
class Person:
    """A person as the API and the assistant see them."""

    id: int
    name: str
    tenant: str | None = None
    locale: str = "en"
    permissions: frozenset[str] = field(default_factory=frozenset)
    is_guest: bool = False
    #: The operator acting as this person with a token issued for that (``ragplate users
    #: token NAME --impersonated-by OPERATOR``); known from the request's token only.
    impersonated_by: int | None = None

    def holds(self, permission: str) -> bool:
        """Whether the person holds ``permission`` (exact names; no wildcard grants)."""
        return permission in self.permissions

    def access(self, *, scope_module: str | None = None,
               fallback_locales: tuple[str, ...] = ()) -> AccessContext:
        """The principal of the user index for this person: their tenant, locale (and its
        language, ``it`` for ``it-IT``, then ``fallback_locales``) and permissions, and the
        assistant scope's module."""
        language = self.locale.split("-")[0]
        return AccessContext(tenant=self.tenant, locale=self.locale,
                             permissions=self.permissions, scope_module=scope_module,
                             fallback_locales=(language, *fallback_locales))

    def as_dict(self) -> dict[str, object]:
        """The public shape (``users list --json``, ``users create --json``)."""
        return {"id": self.id, "name": self.name, "tenant": self.tenant,
                "locale": self.locale, "permissions": sorted(self.permissions),
                "guest": self.is_guest}


def check_name(name: str) -> str:
    """A user name: letters, digits and ``_ . @ -``, 1–100 characters."""
    if not NAME_PATTERN.fullmatch(name):
        raise InvalidInputError(
            f"user name {name!r} is not valid: use letters, digits and _ . @ - "
            "(1-100 characters, starting with a letter or digit)")
    return name


def check_permissions(permissions: list[str]) -> frozenset[str]:
    """Permission names such as ``docs.developer`` or ``cms.contents:select``."""
    for permission in permissions:
        if not PERMISSION_PATTERN.fullmatch(permission):
            raise InvalidInputError(
                f"permission {permission!r} is not valid: lower-case words joined by "
                "'.' or ':' (e.g. docs.developer)")
    return frozenset(permissions)


def check_tenant(tenant: str | None) -> str | None:
    """A tenant id, or ``None`` for a person of no tenant (global documents only)."""
    if tenant is not None and not TENANT_PATTERN.fullmatch(tenant):
        raise InvalidInputError(f"tenant {tenant!r} is not valid: letters, digits and "
                                "_ . : - (1-200 characters)")
    return tenant


def check_person_tenant(tenant: str | None) -> str | None:
    """A person's tenant: :func:`check_tenant`, and never ``global``, the tenant of the
    records every tenant shares (writing them needs ``tenants.operator``: a person of
    ``global`` would write them without it)."""
    if check_tenant(tenant) == GLOBAL_TENANT:
        raise InvalidInputError(f"tenant {tenant!r} is the tenant of the records every tenant "
                                "shares, not a person's: leave --tenant out for a person of "
                                "no tenant (an operator writes shared records with the "
                                "tenants.operator permission)")
    return tenant


def check_locale(locale: str) -> str:
    """A locale such as ``en`` or ``it-IT``."""
    if not LOCALE_PATTERN.fullmatch(locale):
        raise InvalidInputError(f"locale {locale!r} is not valid (e.g. en, it, pt-BR)")
    return locale


def token_lifetime(expires_in: str | None = None, *, ttl_days: int = DEFAULT_TOKEN_TTL_DAYS,
                   impersonated: bool = False) -> timedelta:
    """How long a new token lives: ``expires_in`` (``--expires-in``: ``30m``, ``12h``,
    ``30d``) when given, else :data:`IMPERSONATION_TOKEN_LIFETIME` for a token acting as
    someone, else ``ttl_days`` (``RAGPLATE_TOKEN_TTL_DAYS``). A value that is not a span, or
    is out of bounds, is :class:`InvalidInputError` naming it."""
    longest = (MAX_IMPERSONATION_TOKEN_LIFETIME if impersonated
               else timedelta(days=MAX_TOKEN_TTL_DAYS))
    if expires_in is None:
        if not 1 <= ttl_days <= MAX_TOKEN_TTL_DAYS:
            raise InvalidInputError(f"RAGPLATE_TOKEN_TTL_DAYS {ttl_days!r}: from 1 to "
                                    f"{MAX_TOKEN_TTL_DAYS} days")
        return IMPERSONATION_TOKEN_LIFETIME if impersonated else timedelta(days=ttl_days)
    shown = expires_in if len(expires_in) <= 40 else expires_in[:40] + "…"
    named = f"--expires-in {shown!r}"
    span = parse_span(expires_in)
    if span is None:
        raise InvalidInputError(f"{named} is not a duration: a count and a unit, m "
                                "(minutes), h (hours) or d (days), e.g. 12h or 30d")
    if span < MIN_TOKEN_LIFETIME:
        raise InvalidInputError(f"{named}: a token lives at least 1m")
    if span > longest:
        hours = int(MAX_IMPERSONATION_TOKEN_LIFETIME.total_seconds()) // 3600
        most = (f"{hours}h for a token acting as someone (--impersonated-by)" if impersonated
                else f"{MAX_TOKEN_TTL_DAYS}d")
        raise InvalidInputError(f"{named}: a token lives at most {most}")
    return span
