"""Embedding profiles: keys split at the first colon, the catalog and its refusals."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragplate.catalog.errors import ConfigurationError, UnknownProfileError
from ragplate.catalog.profiles import PROFILES, EmbeddingProfile, get_profile, vector_operator
from ragplate.catalog.settings import DEFAULT_PROFILE


def test_key_splits_at_the_first_colon_only() -> None:
    profile = EmbeddingProfile(key="openai_compatible:org/model:v2:q4", dimensions=8)

    assert profile.provider == "openai_compatible"
    assert profile.service_model == "org/model:v2:q4"


def test_local_key_with_two_colons_keeps_the_rest_as_model() -> None:
    profile = EmbeddingProfile(key="local:hub:intfloat/e5", dimensions=4, local_variant="original")

    assert (profile.provider, profile.service_model) == ("local", "hub:intfloat/e5")


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("no-colon-here", "must be provider:service_model"),
        ("local:", "must be provider:service_model"),
        ("ollama:nomic-embed", "unknown provider 'ollama'"),
        (":model", "unknown provider ''"),
    ],
)
def test_malformed_keys_are_refused(key: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        EmbeddingProfile(key=key, dimensions=4, local_variant="original")


def test_local_profile_without_variant_is_refused() -> None:
    with pytest.raises(ValidationError, match="a local profile needs local_variant"):
        EmbeddingProfile(key="local:intfloat/multilingual-e5-small", dimensions=384)
    with pytest.raises(ValidationError, match="local_variant"):
        EmbeddingProfile(key="local:x/y", dimensions=384, local_variant="")


def test_openai_compatible_profile_needs_no_variant() -> None:
    profile = EmbeddingProfile(key="openai_compatible:m", dimensions=3)

    assert profile.local_variant is None and profile.server == "embeddings"


@pytest.mark.parametrize("dimensions", [0, -384])
def test_dimensions_must_be_positive(dimensions: int) -> None:
    with pytest.raises(ValidationError, match="dimensions"):
        EmbeddingProfile(key="openai_compatible:m", dimensions=dimensions)


def test_profiles_are_frozen() -> None:
    profile = get_profile(DEFAULT_PROFILE)

    with pytest.raises(ValidationError):
        profile.dimensions = 10  # type: ignore[misc]


def test_catalog_is_keyed_by_each_profile_key() -> None:
    assert all(key == profile.key for key, profile in PROFILES.items())
    assert DEFAULT_PROFILE in PROFILES
    default = get_profile(DEFAULT_PROFILE)
    assert (default.provider, default.dimensions, default.local_variant) == ("local", 384,
                                                                             "original")
    assert (default.query_prefix, default.passage_prefix) == ("query: ", "passage: ")


def test_unknown_profile_is_an_error_listing_the_known_ones() -> None:
    with pytest.raises(UnknownProfileError) as error:
        get_profile("local:no/such-model")

    message = str(error.value)
    assert "unknown embedding profile 'local:no/such-model'" in message
    assert all(key in message for key in PROFILES)
    assert error.value.key == "local:no/such-model"
    assert isinstance(error.value, ConfigurationError)
    assert (error.value.http_status, error.value.exit_code) == (404, 2)


def test_get_profile_from_another_catalog() -> None:
    mine = EmbeddingProfile(key="openai_compatible:mine", dimensions=2)
    catalog = {mine.key: mine}

    assert get_profile("openai_compatible:mine", catalog) is mine
    with pytest.raises(UnknownProfileError, match=r"known: openai_compatible:mine\)"):
        get_profile(DEFAULT_PROFILE, catalog)


@pytest.mark.parametrize(
    ("similarity", "expected"),
    [("cosine", ("<=>", "vector_cosine_ops")), ("l2", ("<->", "vector_l2_ops")),
     ("inner_product", ("<#>", "vector_ip_ops"))],
)
def test_vector_operator(similarity: str, expected: tuple[str, str]) -> None:
    assert vector_operator(similarity) == expected  # type: ignore[arg-type]


def test_unsupported_similarity_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unsupported similarity 'dot'"):
        vector_operator("dot")  # type: ignore[arg-type]
