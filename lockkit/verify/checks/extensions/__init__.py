"""verify.checks.extensions."""
