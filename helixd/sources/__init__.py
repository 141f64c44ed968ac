"""Edges that read the agents' files: finding them under the roots, and tailing them."""
