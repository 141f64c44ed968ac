"""Helix: a durable, searchable, bounded local memory of AI coding-agent sessions."""

__version__ = "0.1.0"
