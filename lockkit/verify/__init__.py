"""``lockkit verify``: rebuild a lock into a fresh venv and prove that it works.

- :mod:`~lockkit.verify.run`: the steps in order, and the dossier;
- :mod:`~lockkit.verify.rebuild`: host, venv, install, pip-check, inventory;
- :mod:`~lockkit.verify.checks.application.step`: the project's own check in a clean copy;
- the system and GPU steps are :mod:`lockkit.verify.chain`'s, shared with ``diagnose``.
"""

from lockkit.verify.context import Options
from lockkit.verify.run import PLAN, Outcome, verify

__all__ = ["Options", "Outcome", "PLAN", "verify"]
