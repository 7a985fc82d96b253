"""The SQL of application records: their declared tables, texts, keyword and vector
ranking, and the vectors of ``model_embeddings`` with their per-model HNSW indexes."""
