"""Bulk writes that a busy cluster refuses with 429 are sent again with back-off, through
a loopback proxy in front of the Elasticsearch target that answers the first bulk request's
items with 429 (as a cluster whose write queue is full does), and a refusal other than 429
fails the write in one line naming the index."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from ragplate.catalog.errors import IndexMappingError
from ragplate.catalog.settings import Settings
from ragplate.infra.elasticsearch.bulk import bulk
from ragplate.infra.elasticsearch.client import connect
from ragplate.infra.elasticsearch.indexes import delete_index
from ragplate.infra.ports import free_port
from ragplate.infra.stores.elasticsearch import ElasticsearchStore
from tests.testing.document_store_contract import TINY, basic_items, load


class Busy:
    """A proxy that refuses the items of the first ``refusals`` bulk requests with 429."""

    def __init__(self, upstream: str, refusals: int) -> None:
        self.upstream, self.refusals, self.bulks = upstream, refusals, 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def forward(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(size) if size else None
                request = urllib.request.Request(
                    proxy.upstream + self.path, data=body, method=self.command,
                    headers={k: v for k, v in self.headers.items()
                             if k.lower() not in ("host", "content-length")})
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        status, payload = answer.status, answer.read()
                        kind = answer.headers.get("content-type", "application/json")
                except urllib.error.HTTPError as error:
                    status, payload = error.code, error.read()
                    kind = error.headers.get("content-type", "application/json")
                if self.path.split("?")[0].endswith("/_bulk"):
                    proxy.bulks += 1
                    if proxy.bulks <= proxy.refusals:
                        answer_body = json.loads(payload)
                        answer_body["errors"] = True
                        for item in answer_body["items"]:
                            result = next(iter(item.values()))
                            result["status"] = 429
                            result["error"] = {"type": "es_rejected_execution_exception",
                                               "reason": "write queue full"}
                        payload = json.dumps(answer_body).encode()
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("x-elastic-product", "Elasticsearch")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def busy(es_settings: Settings) -> Iterator[tuple[Busy, Settings]]:
    proxy = Busy(str(es_settings.elasticsearch_url), refusals=2)
    settings = es_settings.model_copy(update={"elasticsearch_url": proxy.url,
                                              "elasticsearch_index_prefix": "rpbusy"})
    try:
        yield proxy, settings
    finally:
        proxy.close()


def test_items_refused_with_429_are_sent_again(busy: tuple[Busy, Settings]) -> None:
    proxy, settings = busy
    store = ElasticsearchStore.from_settings("developer", TINY, settings)
    try:
        load(store, basic_items())
        # The chunks' request and its retry were refused, the third went through; then the
        # source records.
        assert proxy.bulks >= 4
        assert store.count() == 4 and set(store.sources()) == set("abcd")
    finally:
        delete_index(store.client, store.name)


def test_another_refusal_fails_in_one_line_naming_the_index(es_settings: Settings) -> None:
    store = ElasticsearchStore.from_settings("bulk-refused", TINY, es_settings)
    store.ensure_index()
    try:
        with pytest.raises(IndexMappingError) as error:
            bulk(connect(es_settings), [{"_index": store.name, "_source": {"unknown": 1}}],
                 index=store.name, retries=2, recreate=store.recreate)
        message = str(error.value)
        assert store.name in message and "strict_dynamic_mapping" in message
        assert "\n" not in message and "--force" in message
    finally:
        delete_index(store.client, store.name)
