"""The fleet mirror (issue 17): against a real PostgreSQL server these tests start."""
