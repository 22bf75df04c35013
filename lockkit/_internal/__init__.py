"""_internal."""
