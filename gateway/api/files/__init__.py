"""The Files, Vector Stores and Embeddings APIs: their bodies validated, their records
shaped as OpenAI's objects."""
