"""The Elasticsearch client's checks that need no server: a cluster of another major
version is refused in one line (naming it without credentials), and the settings that
select Elasticsearch."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ragplate.catalog.errors import EngineVersionError
from ragplate.catalog.settings import Settings
from ragplate.infra.elasticsearch.client import check_version, safe_url


class Answering:
    """A client whose ``info()`` answers like a server of ``number``."""

    def __init__(self, number: str) -> None:
        self.number = number

    def info(self) -> dict[str, Any]:
        return {"version": {"number": self.number}}


def test_another_major_version_is_refused_in_one_line() -> None:
    with pytest.raises(EngineVersionError) as error:
        check_version(Answering("9.1.0"), "https://user:secret@es.example:9200/")  # type: ignore[arg-type]
    message = str(error.value)
    assert "9.1.0" in message and "8.x" in message and "es.example:9200" in message
    assert "secret" not in message and "\n" not in message and error.value.exit_code == 2


def test_the_same_major_is_accepted() -> None:
    check_version(Answering("8.17.2"), "http://127.0.0.1:1/for-this-test")  # type: ignore[arg-type]
    assert safe_url("https://u:p@h:9200/x?y=1") == "https://h:9200/x"


def test_the_url_selects_elasticsearch_and_needs_a_scheme(clean_env: pytest.MonkeyPatch) -> None:
    assert Settings(elasticsearch_url="https://es:9200").vector_store == "elasticsearch"
    assert Settings().vector_store == "pgvector" and not Settings().uses_elasticsearch
    with pytest.raises(ValidationError, match="scheme"):
        Settings(elasticsearch_url="es:9200")
    with pytest.raises(ValidationError, match="RAGPLATE_ELASTICSEARCH_URL"):
        Settings(vector_store="elasticsearch")


def _refusal(kind: str) -> Any:
    from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
    from elasticsearch import ApiError

    meta = ApiResponseMeta(status=400, http_version="1.1", headers=HttpHeaders(),
                           duration=0.0, node=NodeConfig("http", "localhost", 9200))
    body = {"error": {"type": kind, "reason": "failed to create query: field [x]"},
            "status": 400}

    def request() -> None:
        raise ApiError(kind, meta, body)
    return request


def test_a_refused_search_is_not_called_a_mapping_conflict() -> None:
    from ragplate.catalog.errors import IndexMappingError, SearchEngineError
    from ragplate.infra.elasticsearch.client import call

    with pytest.raises(SearchEngineError) as error:
        call(_refusal("illegal_argument_exception"), "ragplate_docs_developer")
    assert not isinstance(error.value, IndexMappingError)
    assert "ragplate_docs_developer" in str(error.value)
    assert "mapping conflict" not in str(error.value)
    # The same refusal of a write or an index creation is one.
    with pytest.raises(IndexMappingError, match=r"mapping conflict.*ragplate index create"):
        call(_refusal("illegal_argument_exception"), "ragplate_docs_developer",
             recreate="ragplate index create --force")
    with pytest.raises(IndexMappingError):
        call(_refusal("strict_dynamic_mapping_exception"), "ragplate_docs_developer")
