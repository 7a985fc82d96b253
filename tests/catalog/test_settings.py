"""Process settings: RAGPLATE_* environment parsing, the top-k clamp, extra doc roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.settings import SWITCH_BOUNDS, Settings, clamp_top_k


def test_env_variables_with_the_prefix_are_parsed(clean_env: pytest.MonkeyPatch, tmp_path: Path):
    docs = tmp_path / "docs"
    clean_env.setenv("RAGPLATE_PREFECT_PORT", "4321")
    clean_env.setenv("RAGPLATE_VECTOR_STORE", "filesystem")
    clean_env.setenv("RAGPLATE_SPLITTER", "sentence")
    clean_env.setenv("RAGPLATE_MIN_SIMILARITY", "0.25")
    clean_env.setenv("RAGPLATE_EMBEDDINGS_URL", "http://127.0.0.1:8080")
    clean_env.setenv("RAGPLATE_EMBEDDINGS_API_KEY", "s3cret")
    clean_env.setenv("RAGPLATE_DATABASE_URL", "postgresql://u:pw@db/ragplate")
    clean_env.setenv("RAGPLATE_DOCS_ROOTS", f'{{"faq-mine": "{docs}"}}')
    clean_env.setenv("RAGPLATE_INDEX_BATCH_CHUNKS", "7")

    settings = Settings()

    assert settings.home == (tmp_path / "home").resolve()
    assert settings.prefect_port == 4321
    assert settings.vector_store == "filesystem"
    assert settings.splitter == "sentence"
    assert settings.min_similarity == 0.25
    assert settings.embeddings_url == "http://127.0.0.1:8080"
    assert settings.index_batch_chunks == 7
    assert settings.docs_roots == {"faq-mine": docs}
    # Secrets are parsed but never shown.
    assert settings.embeddings_api_key is not None
    assert settings.embeddings_api_key.get_secret_value() == "s3cret"
    assert settings.database_url is not None
    assert "pw" not in repr(settings) and "s3cret" not in repr(settings)


def test_variables_without_the_prefix_are_ignored(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("PREFECT_PORT", "1234")
    clean_env.setenv("MAX_DOCUMENTS", "3")

    settings = Settings()

    assert settings.prefect_port == Settings.model_fields["prefect_port"].default != 1234
    assert settings.max_documents == Settings.model_fields["max_documents"].default != 3


#: Every setting's variable, and nested ones (a server's URL, its API, a documentation root),
#: but the switch's tuning settings, whose any bad value gives the default (the spec's rule;
#: tests/catalog/test_switch_catalog.py).
EVERY_VARIABLE = [f"RAGPLATE_{name.upper()}" for name in Settings.model_fields
                  if name not in SWITCH_BOUNDS] + [
    "RAGPLATE_SERVERS__CHAT__URL", "RAGPLATE_SERVERS__RERANK__API",
    "RAGPLATE_DOCS_ROOTS__FAQ_MINE"]


def refusal(*variables: str) -> str:
    if len(variables) == 1:
        return (f"{variables[0]} is set but empty: unset it to use the default, or give a "
                "value")
    return (f"{', '.join(variables)} are set but empty: unset them to use the defaults, or "
            "give values")


@pytest.mark.parametrize("variable", EVERY_VARIABLE)
def test_a_variable_set_but_empty_is_refused_naming_it(clean_env: pytest.MonkeyPatch,
                                                       variable: str) -> None:
    # RAGPLATE_DATABASE_URL= (a compose file whose ${DATABASE_URL} is unset) must not start
    # on the embedded database, nor RAGPLATE_APP_KEY= mean "no key" or an empty key.
    clean_env.setenv(variable, "")

    with pytest.raises(ConfigurationError) as error:
        Settings()

    assert str(error.value) == refusal(variable)
    assert error.value.exit_code == 2


@pytest.mark.parametrize(("variable", "value"), [
    ("RAGPLATE_DATABASE_URL", " "),
    ("RAGPLATE_APP_KEY", "\t"),
    ("RAGPLATE_MIN_SIMILARITY", "  "),
    ("RAGPLATE_SERVERS__CHAT__URL", " \n"),
    ("RAGPLATE_HOME", " "),
])
def test_a_variable_of_only_whitespace_is_refused_naming_it(
    clean_env: pytest.MonkeyPatch, variable: str, value: str,
) -> None:
    clean_env.setenv(variable, value)

    with pytest.raises(ConfigurationError) as error:
        Settings()

    assert str(error.value) == refusal(variable)


def test_every_empty_variable_is_named_at_once(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RAGPLATE_DATABASE_URL", "")
    clean_env.setenv("RAGPLATE_SERVERS__CHAT__URL", "")
    clean_env.setenv("ragplate_app_key", "")  # read in any case, named upper-case

    with pytest.raises(ConfigurationError) as error:
        Settings()

    # In the order of the settings.
    assert str(error.value) == refusal("RAGPLATE_DATABASE_URL", "RAGPLATE_SERVERS__CHAT__URL",
                                       "RAGPLATE_APP_KEY")


def test_an_empty_variable_ragplate_does_not_read_as_a_setting_is_left_alone(
    clean_env: pytest.MonkeyPatch,
) -> None:
    for variable in ("RAGPLATE_BASELINE_REGEN", "RAGPLATE_REQUIRE_BROWSER",
                     "RAGPLATE_SWITCH_FAULTS", "RAGPLATE_HOME__EXTRA"):
        clean_env.setenv(variable, "")

    assert Settings().database_url is None


def test_an_empty_value_given_in_code_is_a_value(clean_env: pytest.MonkeyPatch) -> None:
    settings = Settings(app_key="", docs_path="")

    assert settings.app_key is not None and settings.app_key.get_secret_value() == ""
    assert settings.docs_path == ""


def test_a_delimiter_of_whitespace_is_a_value(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RAGPLATE_SPLITTER_DELIMITER", "\n")

    assert Settings().splitter_delimiter == "\n"


def test_empty_json_lists_and_objects_keep_their_meaning(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RAGPLATE_ASSISTANT_FALLBACK_LOCALES", "[]")
    clean_env.setenv("RAGPLATE_DOCS_ROOTS", "{}")

    settings = Settings()

    assert settings.assistant_fallback_locales == []
    assert settings.docs_roots == {}


def test_home_is_made_absolute(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.chdir(tmp_path)
    clean_env.setenv("RAGPLATE_HOME", "relative/home")

    assert Settings().home == tmp_path.resolve() / "relative" / "home"


@pytest.mark.parametrize(
    ("value", "expected"), [("50", 10), ("11", 10), ("10", 10), ("3", 3), ("1", 1), ("0", 1),
                            ("-4", 1)]
)
def test_max_documents_from_env_is_clamped(
    clean_env: pytest.MonkeyPatch, value: str, expected: int
) -> None:
    clean_env.setenv("RAGPLATE_MAX_DOCUMENTS", value)

    assert Settings().max_documents == expected


@pytest.mark.parametrize(("value", "expected"), [(50, 10), (10, 10), (5, 5), (1, 1), (0, 1),
                                                 (-1, 1)])
def test_clamp_top_k(value: int, expected: int) -> None:
    assert clamp_top_k(value) == expected
    assert Settings(max_documents=value).max_documents == expected


@pytest.mark.parametrize(
    ("key", "value"),
    [("RAGPLATE_PREFECT_PORT", "0"), ("RAGPLATE_PREFECT_PORT", "70000"),
     ("RAGPLATE_VECTOR_STORE", "redis"), ("RAGPLATE_SPLITTER", "tokens"),
     ("RAGPLATE_INDEX_BATCH_CHUNKS", "0"), ("RAGPLATE_EMBEDDINGS_TIMEOUT", "0"),
     # A floor outside the cosine's range would silently empty every answer.
     ("RAGPLATE_MIN_SIMILARITY", "5"), ("RAGPLATE_MIN_SIMILARITY", "nan"),
     ("RAGPLATE_MIN_SIMILARITY", "-inf"), ("RAGPLATE_ASSISTANT_MIN_SIMILARITY", "nan")],
)
def test_invalid_env_values_are_refused(
    clean_env: pytest.MonkeyPatch, key: str, value: str
) -> None:
    clean_env.setenv(key, value)

    with pytest.raises(ValidationError) as error:
        Settings()

    field = key.removeprefix("RAGPLATE_").lower()
    assert field in str(error.value)


def test_docs_path_adds_one_root_per_directory(clean_env: pytest.MonkeyPatch, tmp_path: Path):
    first, second = tmp_path / "alpha", tmp_path / "nested" / "beta"
    first.mkdir()
    second.mkdir(parents=True)
    # Blank entries (leading, doubled, trailing separators) are skipped.
    raw = os.pathsep.join(["", str(first), "", f" {second} ", ""])
    clean_env.setenv("RAGPLATE_DOCS_PATH", raw)
    clean_env.setenv("RAGPLATE_DOCS_ROOTS", f'{{"faq-configured": "{tmp_path}"}}')

    settings = Settings()

    assert settings.extra_roots() == {"faq-extra-alpha": first, "faq-extra-beta": second}
    assert settings.all_roots() == {
        "faq-configured": tmp_path,
        "faq-extra-alpha": first,
        "faq-extra-beta": second,
    }
    assert list(settings.all_roots()) == ["faq-configured", "faq-extra-alpha", "faq-extra-beta"]


def test_two_docs_path_directories_of_one_name_are_refused(clean_env: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "docs", tmp_path / "b" / "docs"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    clean_env.setenv("RAGPLATE_DOCS_PATH", os.pathsep.join([str(first), str(second)]))

    with pytest.raises(ConfigurationError) as error:
        Settings().extra_roots()

    assert str(error.value) == (
        f"RAGPLATE_DOCS_PATH entries {first} and {second} share the prefix 'faq-extra-docs' "
        "(the directory name): rename one, or index it with index-docs --path DIR --prefix P")


def test_one_directory_named_twice_in_docs_path_is_one_root(clean_env: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    clean_env.setenv("RAGPLATE_DOCS_PATH", os.pathsep.join([str(tmp_path), f"{tmp_path}/"]))

    assert Settings().extra_roots() == {f"faq-extra-{tmp_path.name}": Path(f"{tmp_path}/")}


def test_no_docs_path_means_no_extra_roots(clean_env: pytest.MonkeyPatch) -> None:
    settings = Settings()

    assert settings.extra_roots() == {}
    assert settings.all_roots() == settings.docs_roots
    assert list(settings.docs_roots) == ["faq-app-ragplate"]


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_docs_path_entry_that_is_not_a_directory_is_an_error(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    good = tmp_path / "good"
    good.mkdir()
    bad = tmp_path / "not-here"
    if kind == "file":
        bad.write_text("x")
    clean_env.setenv("RAGPLATE_DOCS_PATH", os.pathsep.join([str(good), str(bad)]))

    settings = Settings()  # the path is checked when the roots are resolved
    with pytest.raises(ConfigurationError) as error:
        settings.all_roots()

    assert str(bad) in str(error.value)
    assert "RAGPLATE_DOCS_PATH" in str(error.value)
    assert error.value.exit_code == 2


def test_run_and_log_dirs_live_under_home(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)

    assert settings.run_dir == tmp_path.resolve() / "run"
    assert settings.log_dir == tmp_path.resolve() / "logs"


@pytest.mark.parametrize("url", ["mysql://x", "not a url", "sqlite:///ragplate.db"])
def test_a_database_url_that_is_not_postgresql_is_one_line_without_the_url(
        clean_env: pytest.MonkeyPatch, url: str) -> None:
    from ragplate.infra.environment import load_settings

    clean_env.setenv("RAGPLATE_DATABASE_URL", url)
    with pytest.raises(ConfigurationError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith("invalid setting: RAGPLATE_DATABASE_URL: must be a PostgreSQL URL")
    assert "\n" not in message and url not in message


@pytest.mark.parametrize("url", ["postgresql://u:p@h/db", "postgresql+psycopg://u@h:5432/db",
                                 "postgres://h/db"])
def test_postgresql_urls_are_accepted(url: str) -> None:
    assert Settings(database_url=url).database_url is not None
