"""Keep credentials out of locks, messages and logs.

Two kinds of secret reach a URL: ``user:token@`` (replaced by ``***@``), and the value of
a ``${VAR}`` placeholder, wherever it sits (host, path, query). ``lockkit.index.urls.expand``
reports every value it fills in through :func:`remember`; from then on :func:`redact` and
:func:`conceal` put the literal ``${VAR}`` back in its place, so a message, a log line, a
dossier or a lock shows the config's own text, never what the environment held. Loading
the project fills in the index URLs' variables at once, so the values are known before the
first message. The choke points: ``ui.say`` and ``ui.print_table`` (every status line,
warning, error and table), and each dossier renderer's output (``report.json``,
``report.markdown``, ``report.junit``, ``report.write_folder``'s attachments).
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse

__all__ = ["conceal", "redact", "remember", "strip_credentials"]

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
# Values shorter than this are not taken for secrets: replacing every "80" or "cpu" in a
# message would garble it, and a three-character token protects nothing.
_MIN_SECRET = 4
_expanded: dict[str, str] = {}  # an expanded value (and its percent-encoded forms) -> "${VAR}"
_lock = threading.Lock()


def remember(placeholder: str, value: str) -> None:
    """Record that *placeholder* (``${VAR}``) was filled with *value* in this process."""
    if len(value) < _MIN_SECRET:
        return
    # the forms a message may hold it in: as is, percent-encoded in a URL, quoted by
    # repr() (a refused line is shown as {line!r}) or inside a JSON string
    forms = {value, urllib.parse.quote(value), urllib.parse.quote(value, safe=""),
             repr(value)[1:-1], json.dumps(value)[1:-1]}
    with _lock:
        for form in forms:
            _expanded[form] = placeholder


def conceal(text: str) -> str:
    """*text* with every expanded ``${VAR}`` value put back as its placeholder."""
    with _lock:
        known = sorted(_expanded.items(), key=lambda kv: len(kv[0]), reverse=True)
    for value, placeholder in known:
        if value in text:
            text = text.replace(value, placeholder)
    return text


def redact(text: str) -> str:
    """*text* fit to print: ``${VAR}`` values concealed, ``user:token@`` made ``***@``."""
    return _USERINFO.sub(r"\g<scheme>***@", conceal(text))


def strip_credentials(url: str) -> str:
    """Return *url* with its user info removed entirely (for what gets written)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=host))
