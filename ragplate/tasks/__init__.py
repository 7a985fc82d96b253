"""What ragplate does, one wing per capability: ``indexing``, ``retrieval``, ``records``,
``evaluation``, ``tuning`` and ``switch``. Each wing holds plain functions (no Prefect) and
one ``steps`` module of thin Prefect ``@task`` wrappers over them; :mod:`.retries` is the
retry policy those share and :mod:`.progress` what a terminal shows of a flow's work
(progress, and the log records a command prints itself)."""
