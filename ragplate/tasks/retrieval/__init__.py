"""Retrieval: documentation retrieval, application search, rank fusion, query classes and
search strategies."""
