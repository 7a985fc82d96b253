"""Prefect-free building blocks of the ingestion pipeline (splitting, ...)."""
