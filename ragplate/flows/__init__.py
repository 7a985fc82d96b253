"""Prefect flows: they only sequence tasks."""
