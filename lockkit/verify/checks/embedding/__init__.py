"""verify.checks.embedding."""
