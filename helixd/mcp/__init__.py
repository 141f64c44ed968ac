"""The MCP face: ``helixctl mcp`` serves the memory to agents over stdio (``server.py``)."""
