"""helixctl: commands and what a person sees."""
