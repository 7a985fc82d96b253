"""Documents, chunks and the metadata rules of the two corpora."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ragplate.catalog.errors import UnknownAudienceError

AUDIENCES: tuple[str, ...] = ("user", "developer", "shared")
IndexName = Literal["developer", "user"]
INDEXES: tuple[IndexName, ...] = ("developer", "user")
#: The largest documentation file read, in bytes (``RAGPLATE_DOCS_MAX_FILE_BYTES``).
DEFAULT_MAX_SOURCE_BYTES = 5_000_000

#: The only fields a user-index hit exposes (a security boundary, not a relevance signal).
SAFE_FIELDS: tuple[str, ...] = (
    "audience",
    "heading_breadcrumb",
    "locale",
    "module",
    "safe_source_label",
    "version",
)


@dataclass(frozen=True)
class Document:
    """One Markdown file: its source label, indexed text and front-matter metadata."""

    source: str
    text: str
    metadata: dict[str, Any]
    content_hash: str
    #: The prefix of the root it was read from (labels of that root start with it).
    root: str = ""


@dataclass(frozen=True)
class Chunk:
    """A piece of a document.

    ``text`` is what is stored and shown as the excerpt; ``embed_text`` (when set) is what
    the model sees, e.g. the text prefixed with its heading breadcrumb. Metadata is the
    document's plus the chunk's own ``heading_breadcrumb`` (a list of headings).
    """

    source: str
    ordinal: int
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    embed_text: str | None = None

    @property
    def text_for_embedding(self) -> str:
        """The passage handed to the embedding model (without any model prefix)."""
        return self.embed_text if self.embed_text is not None else self.text


def validate_audience(source: str, metadata: Mapping[str, Any]) -> None:
    """Raise :class:`UnknownAudienceError` for any audience outside :data:`AUDIENCES`.

    Absent or empty audiences are not errors (they get defaults or fail the policy).
    """
    value = metadata.get("audience")
    if value is None or value == "":
        return
    if not isinstance(value, str) or value not in AUDIENCES:
        raise UnknownAudienceError(source, value)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def apply_developer_defaults(source: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The developer corpus keeps what the front matter declares and fills the rest.

    Mirrors ``DocumentationMetadata::applyDeveloperDefaults()``: audience ``shared``,
    module ``app``, locale ``und``, the source name as canonical source, an empty
    breadcrumb and source type ``file``.
    """
    result = dict(metadata)
    defaults: dict[str, Any] = {
        "audience": "shared",
        "module": "app",
        "locale": "und",
        "canonical_source": source,
        "heading_breadcrumb": [],
        "source_type": "file",
    }
    for key, default in defaults.items():
        if key == "heading_breadcrumb":
            if not isinstance(result.get(key), list):
                result[key] = default
        elif _blank(result.get(key)):
            result[key] = default
    return result


@dataclass(frozen=True)
class AudiencePolicy:
    """``DocumentAudiencePolicy``: admits a document to the user corpus on its declared
    metadata alone. No default is ever applied to satisfy it."""

    classification_version: str = "in-app-docs-v1"

    def refusal(self, metadata: Mapping[str, Any]) -> str | None:
        """Why the document is not admitted, or ``None`` when it is."""
        if metadata.get("audience") not in ("user", "shared"):
            return "audience is not user or shared"
        for key in ("module", "locale", "canonical_source", "safe_source_label", "version"):
            value = metadata.get(key)
            if not isinstance(value, str | int | float) or _blank(str(value)):
                return f"{key} is missing"
        if metadata.get("policy_classification") != "user_safe":
            return "policy_classification is not user_safe"
        if str(metadata.get("policy_classification_version")) != self.classification_version:
            return "policy_classification_version does not match"
        perms = metadata.get("required_permissions")
        if not isinstance(perms, list) or not all(isinstance(p, str) for p in perms):
            return "required_permissions is not a list of strings"
        scope = metadata.get("tenant_scope")
        if mixes_global(scope):
            # Fail closed: a list naming tenants reads as restricted, yet global in it would
            # show the document to every tenant.
            return "tenant_scope mixes global with tenant ids"
        if not tenant_scope_valid(scope):
            return "tenant_scope is missing or invalid"
        if any("*" in t or "?" in t for t in tenant_ids(scope)):
            # A wildcard reads as "every tenant" to a person and to other engines; here it
            # would match nobody, so it is refused rather than left to mean either.
            return "tenant_scope holds a wildcard"
        return None

    def allows(self, metadata: Mapping[str, Any]) -> bool:
        """True when the document may enter the user corpus."""
        return self.refusal(metadata) is None


def tenant_scope_valid(scope: Any) -> bool:
    """``global``, one tenant id, or a non-empty list of tenant ids."""
    if isinstance(scope, str):
        return bool(scope.strip())
    if isinstance(scope, int) and not isinstance(scope, bool):
        return True
    return (
        isinstance(scope, list)
        and bool(scope)
        and all(isinstance(t, str | int) and not isinstance(t, bool) for t in scope)
    )


def mixes_global(scope: Any) -> bool:
    """A list of tenant ids that also holds ``global`` (refused by the policy)."""
    return (isinstance(scope, list) and len(scope) > 1
            and any(str(t) == "global" for t in scope))


def tenant_ids(scope: Any) -> list[str]:
    """Tenant ids of a document scope; ``["global"]`` for global documents."""
    if isinstance(scope, list):
        return [str(t) for t in scope]
    return [str(scope)]


@dataclass(frozen=True)
class AccessContext:
    """Who is asking on the user index: tenant (``None`` = no tenant), locale and
    the permissions they hold."""

    tenant: str | None = None
    locale: str | None = None
    permissions: frozenset[str] = frozenset()
    module: str | None = None
    #: The assistant's module scope: that module's documents and the cross-cutting guides.
    scope_module: str | None = None
    #: Locales also searched beside ``locale`` (the assistant: the locale's language, then
    #: the configured fallbacks), so a person whose language has no guide is still helped.
    fallback_locales: tuple[str, ...] = ()


def safe_projection(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Only :data:`SAFE_FIELDS` survive into a user-index answer."""
    return {key: metadata[key] for key in SAFE_FIELDS if key in metadata}


#: Front-matter switch of a user document: cite it per section, not as a whole.
SECTION_LABELS_KEY = "safe_label_sections"
#: Joins a document's safe source label and a section title (``Core · Glossary · ACL``).
LABEL_SEPARATOR = " · "


def section_safe_label(metadata: Mapping[str, Any], section: str | None) -> str | None:
    """The safe label of a chunk of a document that declares ``safe_label_sections: true``:
    ``<safe_source_label> · <section>``, where ``section`` is the chunk's deepest heading of
    level 2 or below, e.g. ``Core · Glossary`` + ``Permission vs ACL``. ``None`` (keep the
    document's label) when the document does not opt in, has no safe label, or the chunk
    sits before the first section (under the title only)."""
    label = metadata.get("safe_source_label")
    if metadata.get(SECTION_LABELS_KEY) is not True or not isinstance(label, str):
        return None
    if not label.strip() or not section or not section.strip():
        return None
    return f"{label}{LABEL_SEPARATOR}{section.strip()}"


def breadcrumb_text(breadcrumb: Any) -> str:
    """A breadcrumb list rendered as ``A > B > C``."""
    if isinstance(breadcrumb, list):
        return " > ".join(str(part) for part in breadcrumb)
    return str(breadcrumb or "")


def label_prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot begin a source label, or ``None``. A label reads as a path
    (``../x/bom.md`` would name a place outside every root) and is typed back at the
    command line (``sources remove``), so a prefix is names joined by ``/``: no empty,
    ``.`` or ``..`` name, no backslash, no control character, no space around a name."""
    if not prefix:
        return None  # bare relative paths
    names = prefix.split("/")
    if any(n in ("", ".", "..") for n in names) or "\\" in prefix:
        return "a label prefix is names joined by '/', without '.' or '..' names"
    if not prefix.isprintable():
        return "a label prefix holds no control character"
    if any(n != n.strip() for n in names):
        return "a name of a label prefix neither begins nor ends with a space"
    return None
