"""compile."""
