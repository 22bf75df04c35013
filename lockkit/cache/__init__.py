"""cache."""
