"""The pure core: value types, value checks, redaction, time, and the analysis that needs no I/O."""
