"""Self-hosted servers by name: URL, key, timeout and batch size from the settings
(``RAGPLATE_SERVERS__<NAME>__<FIELD>``) only, never from a database setting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import SecretStr

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import ServerSettings, Settings

Role = Literal["embeddings", "rerank", "transcription"]
ServiceRole = Literal["rerank", "transcription"]

EMBEDDINGS: Final = "embeddings"
RERANK: Final = "rerank"
TRANSCRIPTION: Final = "transcription"

# Transcribing a minute of audio on a CPU takes far longer than embedding a batch.
_DEFAULT_TIMEOUT: dict[str, float] = {RERANK: 30.0, TRANSCRIPTION: 120.0}


@dataclass(frozen=True)
class ServerConfig:
    """Where one server is and how it is called. ``url`` may hold credentials or a query
    string: log :attr:`safe_url` or an endpoint from :func:`safe_url`, never ``url``."""

    name: str
    role: Role
    url: str = field(repr=False)
    key: SecretStr | None = field(default=None, repr=False)
    timeout: float = 30.0
    batch_size: int = 32
    slow_seconds: float | None = None
    api: str = "tei"
    model: str | None = None

    @property
    def safe_url(self) -> str:
        """The base URL reduced to scheme, host, port and path."""
        return safe_url(self.url)

    @property
    def slow_after(self) -> float:
        """Seconds after which an answer counts as slow (default: half the timeout)."""
        return self.slow_seconds if self.slow_seconds is not None else self.timeout / 2

    def endpoint(self, path: str) -> str:
        """The URL of ``path`` under the base URL, keeping its query and credentials."""
        import httpx

        base = httpx.URL(self.url)
        return str(base.copy_with(path=base.path.rstrip("/") + path))

    def v1_endpoint(self, path: str) -> str:
        """``<url>/v1<path>``, or ``<url><path>`` when the base URL already ends in ``/v1``
        (an Infinity started with ``--url-prefix /v1`` is often configured that way)."""
        import httpx

        base_path = httpx.URL(self.url).path.rstrip("/")
        return self.endpoint(path if base_path.endswith("/v1") else "/v1" + path)

    def headers(self) -> dict[str, str]:
        """The headers every request to this server carries."""
        if self.key is None:
            return {}
        return {"Authorization": f"Bearer {self.key.get_secret_value()}"}


def safe_url(url: str) -> str:
    """Scheme, host, port and path only: never credentials, a query or a fragment."""
    # Imported here, as in every function of this module: reading which servers are
    # configured must not load the HTTP client (see ragplate.infra.models).
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return "<invalid url>"
    host = parsed.host
    if ":" in host:  # an IPv6 literal needs its brackets back
        host = f"[{host}]"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path}"


def env_name(name: str, setting: str) -> str:
    """The environment variable of one server setting."""
    return f"RAGPLATE_SERVERS__{name.upper()}__{setting.upper()}"


def _own(settings: Settings, name: str) -> ServerSettings:
    return settings.servers.get(name.lower()) or ServerSettings()


def _default_embeddings(settings: Settings) -> ServerConfig | None:
    own = _own(settings, EMBEDDINGS)
    url = own.url or settings.embeddings_url
    if not url:
        return None
    return ServerConfig(
        name=EMBEDDINGS,
        role="embeddings",
        url=url,
        key=own.key or settings.embeddings_api_key,
        timeout=own.timeout or settings.embeddings_timeout,
        batch_size=own.batch_size or settings.embed_batch_size,
        slow_seconds=own.slow_seconds,
        model=own.model,
    )


def embeddings_server_named(name: str, settings: Settings) -> ServerConfig | None:
    """The embeddings server called ``name``, or the default one when ``name`` has no URL;
    ``None`` when neither is configured."""
    if name.lower() == EMBEDDINGS:
        return _default_embeddings(settings)
    own = _own(settings, name)
    if not own.url:
        return _default_embeddings(settings)
    # Another server never inherits the default server's key: it would be sent to a host
    # it was not issued for.
    return ServerConfig(
        name=name.lower(),
        role="embeddings",
        url=own.url,
        key=own.key,
        timeout=own.timeout or settings.embeddings_timeout,
        batch_size=own.batch_size or settings.embed_batch_size,
        slow_seconds=own.slow_seconds,
        model=own.model,
    )


def embeddings_server(profile: EmbeddingProfile, settings: Settings) -> ServerConfig:
    """The server an ``openai_compatible`` profile calls; raises ConfigurationError naming
    the variables to set when there is none."""
    server = embeddings_server_named(profile.server, settings)
    if server is None:
        own = "" if profile.server == EMBEDDINGS else f"{env_name(profile.server, 'url')} or "
        raise ConfigurationError(
            f"profile '{profile.key}' needs an embeddings server: set {own}"
            f"{env_name(EMBEDDINGS, 'url')} (or RAGPLATE_EMBEDDINGS_URL)"
        )
    return server


def role_server(role: ServiceRole, settings: Settings) -> ServerConfig | None:
    """The rerank or transcription server, or ``None`` when it has no URL."""
    own = _own(settings, role)
    if not own.url:
        return None
    return ServerConfig(
        name=role,
        role=role,
        url=own.url,
        key=own.key,
        timeout=own.timeout or _DEFAULT_TIMEOUT[role],
        batch_size=own.batch_size or settings.embed_batch_size,
        slow_seconds=own.slow_seconds,
        api=own.api or "tei",
        model=own.model,
    )


def require_role_server(role: ServiceRole, settings: Settings) -> ServerConfig:
    """Like :func:`role_server`, but a missing server is a ConfigurationError."""
    server = role_server(role, settings)
    if server is None:
        raise ConfigurationError(f"no {role} server: set {env_name(role, 'url')}")
    return server
