"""Prefect flows: they only sequence tasks.

Loaded in a flow run's process that ``ragplate worker`` started, the package watches that
worker, so that the run ends when it is killed (:mod:`ragplate.infra.worker_watch`).
"""

from ragplate.infra.worker_watch import watch_worker

watch_worker()
