"""verify.checks.resume."""
