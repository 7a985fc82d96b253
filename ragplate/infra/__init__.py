"""The outside world: embedded PostgreSQL, the Prefect server, stores and model clients."""
