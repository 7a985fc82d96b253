"""The Elasticsearch room: the client (connection, version check, errors as one line
naming the index), bulk writes with back-off on 429, index names and mappings. The drivers
that use it live beside their PostgreSQL twins: ``infra/stores/elasticsearch.py``,
``infra/records/es_search.py``, ``infra/es_analytics.py``."""
