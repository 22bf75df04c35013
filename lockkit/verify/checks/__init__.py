"""verify.checks."""
