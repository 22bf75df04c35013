"""Keep credentials out of locks, messages and logs."""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["redact", "strip_credentials"]

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")


def redact(text: str) -> str:
    """Replace ``user:token@`` in any URL inside *text* with ``***@``."""
    return _USERINFO.sub(r"\g<scheme>***@", text)


def strip_credentials(url: str) -> str:
    """Return *url* with its user info removed entirely (for what gets written)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=host))
