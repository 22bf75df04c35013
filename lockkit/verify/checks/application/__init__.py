"""verify.checks.application."""
