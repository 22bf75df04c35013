"""A dossier as its JSON document: every string redacted with the project's secrets, keys in
the schema's order."""

from __future__ import annotations

import json
from typing import Any

from lockkit._internal.redact import Secrets
from lockkit.report.model import Dossier

__all__ = ["render", "scrub"]


def scrub(value: Any, secrets: Secrets) -> Any:
    """Credentials (*secrets*' values, ``user:token@``) out of every string in a
    JSON-shaped value."""
    if isinstance(value, str):
        return secrets.redact(value)
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, secrets) for v in value]
    return value


def render(dossier: Dossier, secrets: Secrets) -> str:
    """``dossier.json``'s text, *secrets* (the project's) concealed."""
    return json.dumps(scrub(dossier.to_dict(), secrets), indent=2, sort_keys=False) + "\n"
