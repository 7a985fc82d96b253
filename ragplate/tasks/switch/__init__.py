"""The steps of the embedding-model switch; ``ragplate.flows.embeddings_switch`` sequences
them as Prefect tasks."""
