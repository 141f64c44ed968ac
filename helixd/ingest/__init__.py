"""The use cases that write the store: ingest, digests, re-normalization, eviction."""
