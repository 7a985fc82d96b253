"""Servers by name, from RAGPLATE_SERVERS__<NAME>__<FIELD> (and the legacy embeddings vars)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.catalog.settings import Settings
from ragplate.infra.models.config import (
    ServerConfig,
    embeddings_server,
    embeddings_server_named,
    require_role_server,
    role_server,
    safe_url,
)

E5 = "openai_compatible:intfloat/multilingual-e5-small"



def test_server_settings_are_read_from_nested_env_variables(clean_env: pytest.MonkeyPatch):
    clean_env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__URL", "http://127.0.0.1:8080")
    clean_env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__KEY", "emb-secret")
    clean_env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__TIMEOUT", "12.5")
    clean_env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__BATCH_SIZE", "16")
    clean_env.setenv("RAGPLATE_SERVERS__RERANK__URL", "http://127.0.0.1:7997")
    clean_env.setenv("RAGPLATE_SERVERS__RERANK__API", "cohere")
    clean_env.setenv("RAGPLATE_SERVERS__TRANSCRIPTION__URL", "http://127.0.0.1:8000")
    clean_env.setenv("RAGPLATE_SERVERS__TRANSCRIPTION__MODEL", "Systran/faster-whisper-small")

    settings = Settings()
    embeddings = embeddings_server(get_profile(E5), settings)
    rerank = role_server("rerank", settings)
    transcription = role_server("transcription", settings)

    assert (embeddings.url, embeddings.timeout, embeddings.batch_size) == (
        "http://127.0.0.1:8080", 12.5, 16)
    assert embeddings.headers() == {"Authorization": "Bearer emb-secret"}
    assert rerank is not None and (rerank.api, rerank.timeout, rerank.key) == ("cohere", 30.0, None)
    assert transcription is not None and transcription.model == "Systran/faster-whisper-small"
    assert transcription.timeout == 120.0
    assert "emb-secret" not in repr(settings) and "emb-secret" not in repr(embeddings)


def test_legacy_embeddings_variables_are_the_default_server(clean_env: pytest.MonkeyPatch):
    clean_env.setenv("RAGPLATE_EMBEDDINGS_URL", "http://127.0.0.1:9090")
    clean_env.setenv("RAGPLATE_EMBEDDINGS_API_KEY", "legacy-key")
    clean_env.setenv("RAGPLATE_EMBEDDINGS_TIMEOUT", "7")
    clean_env.setenv("RAGPLATE_EMBED_BATCH_SIZE", "8")

    server = embeddings_server(get_profile(E5), Settings())

    assert (server.name, server.url, server.timeout, server.batch_size) == (
        "embeddings", "http://127.0.0.1:9090", 7.0, 8)
    assert server.headers() == {"Authorization": "Bearer legacy-key"}


def test_nested_settings_override_the_legacy_ones(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RAGPLATE_EMBEDDINGS_URL", "http://127.0.0.1:9090")
    clean_env.setenv("RAGPLATE_EMBED_BATCH_SIZE", "8")
    clean_env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__URL", "http://127.0.0.1:8080")

    server = embeddings_server(get_profile(E5), Settings())

    assert (server.url, server.batch_size) == ("http://127.0.0.1:8080", 8)


def test_a_profile_server_of_its_own_never_inherits_the_default_key(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__URL", "http://127.0.0.1:8080")
    clean_env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__KEY", "default-key")
    clean_env.setenv("RAGPLATE_SERVERS__GPU__URL", "http://10.0.0.5:8080")
    settings = Settings()
    own = EmbeddingProfile(key="openai_compatible:BAAI/bge-m3", dimensions=1024, server="gpu")

    server = embeddings_server(own, settings)

    assert (server.name, server.url, server.key) == ("gpu", "http://10.0.0.5:8080", None)


def test_a_profile_server_without_url_falls_back_to_the_default(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("RAGPLATE_SERVERS__EMBEDDINGS__URL", "http://127.0.0.1:8080")
    own = EmbeddingProfile(key="openai_compatible:BAAI/bge-m3", dimensions=1024, server="gpu")

    server = embeddings_server(own, Settings())

    assert (server.name, server.url) == ("embeddings", "http://127.0.0.1:8080")


def test_a_missing_server_names_the_variables_to_set(clean_env: pytest.MonkeyPatch) -> None:
    own = EmbeddingProfile(key="openai_compatible:BAAI/bge-m3", dimensions=1024, server="gpu")
    settings = Settings()

    with pytest.raises(ConfigurationError) as error:
        embeddings_server(own, settings)

    assert "RAGPLATE_SERVERS__GPU__URL" in str(error.value)
    assert "RAGPLATE_SERVERS__EMBEDDINGS__URL" in str(error.value)
    assert embeddings_server_named("embeddings", settings) is None
    assert role_server("rerank", settings) is None
    with pytest.raises(ConfigurationError, match="RAGPLATE_SERVERS__RERANK__URL"):
        require_role_server("rerank", settings)


@pytest.mark.parametrize(
    ("key", "value"),
    [("RAGPLATE_SERVERS__RERANK__URLL", "http://x:1"),  # a misspelt field is not dropped
     ("RAGPLATE_SERVERS__RERANK__URL", "ftp://x:1"),
     ("RAGPLATE_SERVERS__RERANK__API", "jina"),
     ("RAGPLATE_SERVERS__EMBEDDINGS__BATCH_SIZE", "0"),
     ("RAGPLATE_SERVERS__EMBEDDINGS__TIMEOUT", "-1")],
)
def test_invalid_server_settings_are_refused(
    clean_env: pytest.MonkeyPatch, key: str, value: str
) -> None:
    clean_env.setenv(key, value)

    with pytest.raises(ValidationError, match="servers"):
        Settings()


def test_endpoints_keep_the_prefix_and_never_double_v1() -> None:
    plain = ServerConfig(name="e", role="embeddings", url="http://h:1")
    infinity = ServerConfig(name="e", role="embeddings", url="http://h:1/v1/")
    behind_proxy = ServerConfig(name="e", role="embeddings", url="http://h:1/ai/tei")

    assert plain.v1_endpoint("/embeddings") == "http://h:1/v1/embeddings"
    assert infinity.v1_endpoint("/embeddings") == "http://h:1/v1/embeddings"
    assert behind_proxy.v1_endpoint("/embeddings") == "http://h:1/ai/tei/v1/embeddings"
    assert behind_proxy.endpoint("/rerank") == "http://h:1/ai/tei/rerank"


def test_safe_url_drops_credentials_query_and_fragment() -> None:
    server = ServerConfig(name="e", role="embeddings",
                          url="https://user:pw@example.org:8443/base?api_key=abc#frag")

    endpoint = server.v1_endpoint("/embeddings")

    assert "api_key=abc" in endpoint and "user:pw@" in endpoint  # still sent to the server
    assert safe_url(endpoint) == "https://example.org:8443/base/v1/embeddings"
    assert server.safe_url == "https://example.org:8443/base"
    assert safe_url("http://[::1]:8080/x?y=1") == "http://[::1]:8080/x"
    assert "pw" not in repr(server) and "api_key" not in repr(server)
