"""Indexing: read documentation roots, split documents, plan, embed and write batches."""
