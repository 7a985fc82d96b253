"""Document metadata rules: audience validation, developer defaults, the audience policy."""

from __future__ import annotations

from typing import Any

import pytest

from ragplate.catalog.documents import (
    AUDIENCES,
    SAFE_FIELDS,
    AudiencePolicy,
    Chunk,
    apply_developer_defaults,
    breadcrumb_text,
    safe_projection,
    tenant_ids,
    tenant_scope_valid,
    validate_audience,
)
from ragplate.catalog.errors import InvalidInputError, SourceError, UnknownAudienceError

#: A user-corpus document that declares everything the policy asks for.
ADMITTED: dict[str, Any] = {
    "audience": "user",
    "module": "billing",
    "locale": "en",
    "canonical_source": "docs/billing/invoices.md",
    "safe_source_label": "Invoices help",
    "version": "2.1",
    "policy_classification": "user_safe",
    "policy_classification_version": "in-app-docs-v1",
    "required_permissions": ["billing.view"],
    "tenant_scope": "global",
    "heading_breadcrumb": ["Billing", "Invoices"],
    "owner": "team-billing",
    "internal_notes": "never shown",
}


# -- validate_audience -------------------------------------------------------------------


@pytest.mark.parametrize("audience", AUDIENCES)
def test_known_audiences_are_accepted(audience: str) -> None:
    validate_audience("a.md", {"audience": audience})


@pytest.mark.parametrize("metadata", [{}, {"audience": None}, {"audience": ""}])
def test_absent_or_empty_audience_is_not_an_error(metadata: dict[str, Any]) -> None:
    validate_audience("a.md", metadata)


@pytest.mark.parametrize("value", ["User", "DEVELOPER", "Shared", "admin", " user", "user ",
                                   5, ["user"], True])
def test_unknown_audience_names_file_and_value(value: object) -> None:
    with pytest.raises(UnknownAudienceError) as error:
        validate_audience("faq/guide.md", {"audience": value})

    message = str(error.value)
    assert message.startswith("faq/guide.md: ")
    assert repr(value) in message
    assert "accepted: user, developer, shared" in message
    assert (error.value.source, error.value.value) == ("faq/guide.md", value)
    assert isinstance(error.value, SourceError) and isinstance(error.value, InvalidInputError)
    assert error.value.exit_code == 2


# -- developer defaults ------------------------------------------------------------------


def test_developer_defaults_fill_everything_missing() -> None:
    assert apply_developer_defaults("faq/a.md", {}) == {
        "audience": "shared",
        "module": "app",
        "locale": "und",
        "canonical_source": "faq/a.md",
        "heading_breadcrumb": [],
        "source_type": "file",
    }


def test_developer_defaults_keep_declared_values() -> None:
    declared = {
        "audience": "developer",
        "module": "billing",
        "locale": "it",
        "canonical_source": "https://example.test/a",
        "heading_breadcrumb": ["Top"],
        "source_type": "url",
        "owner": "team",
    }

    assert apply_developer_defaults("faq/a.md", declared) == declared


@pytest.mark.parametrize("blank", [None, "", "   ", "\t\n"])
def test_blank_values_get_the_default(blank: object) -> None:
    keys = ("audience", "module", "locale", "canonical_source", "source_type")
    result = apply_developer_defaults("x/y.md", dict.fromkeys(keys, blank))

    assert [result[k] for k in keys] == ["shared", "app", "und", "x/y.md", "file"]


@pytest.mark.parametrize("crumb", [None, "A > B", {"a": 1}, 3])
def test_non_list_breadcrumb_becomes_empty(crumb: object) -> None:
    result = apply_developer_defaults("a.md", {"heading_breadcrumb": crumb})
    assert result["heading_breadcrumb"] == []


def test_developer_defaults_do_not_mutate_their_input() -> None:
    metadata = {"module": ""}

    apply_developer_defaults("a.md", metadata)

    assert metadata == {"module": ""}


def test_non_string_declared_values_are_kept() -> None:
    assert apply_developer_defaults("a.md", {"module": 7, "locale": 0})["module"] == 7
    assert apply_developer_defaults("a.md", {"locale": 0})["locale"] == 0


# -- AudiencePolicy ----------------------------------------------------------------------


def with_(**changes: Any) -> dict[str, Any]:
    """ADMITTED with some keys changed; a value of ``...`` removes the key."""
    result = dict(ADMITTED)
    for key, value in changes.items():
        if value is ...:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def test_fully_declared_document_is_admitted() -> None:
    policy = AudiencePolicy()

    assert policy.refusal(ADMITTED) is None
    assert policy.allows(ADMITTED)
    assert policy.allows(with_(audience="shared"))
    assert policy.allows(with_(version=3, tenant_scope=["acme", 42], required_permissions=[]))


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"audience": "developer"}, "audience is not user or shared"),
        ({"audience": ...}, "audience is not user or shared"),
        ({"audience": "User"}, "audience is not user or shared"),
        ({"module": ...}, "module is missing"),
        ({"module": "  "}, "module is missing"),
        ({"locale": ...}, "locale is missing"),
        ({"locale": ""}, "locale is missing"),
        ({"canonical_source": ...}, "canonical_source is missing"),
        ({"canonical_source": None}, "canonical_source is missing"),
        ({"safe_source_label": ...}, "safe_source_label is missing"),
        ({"safe_source_label": ["Invoices"]}, "safe_source_label is missing"),
        ({"version": ...}, "version is missing"),
        ({"version": ""}, "version is missing"),
        ({"policy_classification": ...}, "policy_classification is not user_safe"),
        ({"policy_classification": "internal"}, "policy_classification is not user_safe"),
        ({"policy_classification_version": ...}, "policy_classification_version does not"),
        ({"policy_classification_version": "in-app-docs-v2"},
         "policy_classification_version does not"),
        ({"required_permissions": ...}, "required_permissions is not a list of strings"),
        ({"required_permissions": "billing.view"}, "required_permissions is not a list"),
        ({"required_permissions": ["ok", 3]}, "required_permissions is not a list"),
        ({"required_permissions": None}, "required_permissions is not a list"),
        ({"tenant_scope": ...}, "tenant_scope is missing or invalid"),
        ({"tenant_scope": ""}, "tenant_scope is missing or invalid"),
        ({"tenant_scope": []}, "tenant_scope is missing or invalid"),
        ({"tenant_scope": [True]}, "tenant_scope is missing or invalid"),
        ({"tenant_scope": {"id": "acme"}}, "tenant_scope is missing or invalid"),
        ({"tenant_scope": False}, "tenant_scope is missing or invalid"),
        ({"tenant_scope": ["acme", "global"]}, "tenant_scope mixes global with tenant ids"),
        ({"tenant_scope": ["global", 7]}, "tenant_scope mixes global with tenant ids"),
    ],
)
def test_policy_refuses_each_missing_or_wrong_field(changes: dict[str, Any], reason: str) -> None:
    policy = AudiencePolicy()
    metadata = with_(**changes)

    refusal = policy.refusal(metadata)

    assert refusal is not None and refusal.startswith(reason)
    assert not policy.allows(metadata)


def test_policy_uses_its_own_classification_version() -> None:
    policy = AudiencePolicy("in-app-docs-v2")

    assert not policy.allows(ADMITTED)
    assert policy.allows(with_(policy_classification_version="in-app-docs-v2"))


# -- tenant scopes, safe projection, breadcrumbs ----------------------------------------


@pytest.mark.parametrize(
    ("scope", "valid", "ids"),
    [("global", True, ["global"]), ("acme", True, ["acme"]), (7, True, ["7"]),
     (["acme", 7], True, ["acme", "7"]), ("  ", False, None), ([], False, None),
     (None, False, None), (True, False, None), ([None], False, None)],
)
def test_tenant_scope(scope: Any, valid: bool, ids: list[str] | None) -> None:
    assert tenant_scope_valid(scope) is valid
    if ids is not None:
        assert tenant_ids(scope) == ids


def test_safe_projection_keeps_only_the_six_safe_fields() -> None:
    projected = safe_projection(ADMITTED)

    assert set(SAFE_FIELDS) == {"audience", "heading_breadcrumb", "locale", "module",
                                "safe_source_label", "version"}
    assert projected == {
        "audience": "user",
        "heading_breadcrumb": ["Billing", "Invoices"],
        "locale": "en",
        "module": "billing",
        "safe_source_label": "Invoices help",
        "version": "2.1",
    }


def test_safe_projection_does_not_invent_missing_fields() -> None:
    assert safe_projection({"audience": "user", "tenant_scope": "acme"}) == {"audience": "user"}
    assert safe_projection({}) == {}


@pytest.mark.parametrize(
    ("crumb", "text"),
    [(["A", "B", "C"], "A > B > C"), ([], ""), (None, ""), ("Already text", "Already text")],
)
def test_breadcrumb_text(crumb: Any, text: str) -> None:
    assert breadcrumb_text(crumb) == text


def test_chunk_embeds_its_own_text_unless_told_otherwise() -> None:
    assert Chunk("a.md", 0, "body").text_for_embedding == "body"
    assert Chunk("a.md", 0, "body", embed_text="A\n\nbody").text_for_embedding == "A\n\nbody"
