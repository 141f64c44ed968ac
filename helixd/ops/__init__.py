"""The user's machine: agent hook installers, the service unit, health checks."""
