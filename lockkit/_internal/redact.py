"""Keep credentials out of locks, messages and logs.

Two kinds of secret reach a URL: ``user:token@`` (replaced by ``***@``), and the value of
a ``${VAR}`` placeholder, wherever it sits (host, path, query).

- ``user:token@`` is visible in the text itself: :func:`masked` replaces it, with no
  state, wherever a message is made.
- A ``${VAR}`` value is not: only the project that filled it in knows it. Loading the
  project builds its :class:`Secrets` (``lockkit.index.urls.secrets_of``: every placeholder
  of the index URLs and mirrors, with the value the environment holds), and the project
  hands them to whatever prints or writes text: :meth:`Secrets.redact` and
  :meth:`Secrets.conceal` put the literal ``${VAR}`` back in its place, so a message, a
  log line, a dossier or a lock shows the config's own text, never what the environment
  held.

There is no registry: two projects read in one process (tests, a library caller) each
conceal their own values, and a value one of them filled in never turns up as the other's
placeholder. Where output leaves lockkit the secrets are a required argument: the stderr
handler of the command (:func:`lockkit._internal.log.hide`, set by the command line as it
loads the project), :func:`lockkit._internal.tables.print_table`, and each dossier renderer
(``report.json``, ``report.markdown``, ``report.junit``, ``report.write_folder``'s
attachments).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["NO_SECRETS", "Secrets", "masked", "strip_credentials"]

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
# Values shorter than this are not taken for secrets: replacing every "80" or "cpu" in a
# message would garble it, and a three-character token protects nothing.
_MIN_SECRET = 4


def _forms(value: str) -> set[str]:
    """The forms a message may hold *value* in: as is, percent-encoded in a URL, quoted by
    repr() (a refused line is shown as {line!r}) or inside a JSON string."""
    return {value, urllib.parse.quote(value), urllib.parse.quote(value, safe=""),
            repr(value)[1:-1], json.dumps(value)[1:-1]}


@dataclass(frozen=True)
class Secrets:
    """The ``${VAR}`` values one project filled in, each form with its placeholder,
    longest form first (a value that holds another is put back whole)."""

    forms: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, values: Mapping[str, str]) -> Secrets:
        """The secrets of *values*: ``${VAR}`` -> the value it was filled with."""
        return cls().plus(values)

    def plus(self, values: Mapping[str, str]) -> Secrets:
        """These secrets and those of *values* (``${VAR}`` -> value)."""
        found = dict(self.forms)
        for placeholder, value in values.items():
            if len(value) >= _MIN_SECRET:
                found.update(dict.fromkeys(_forms(value), placeholder))
        return Secrets(tuple(sorted(found.items(), key=lambda kv: len(kv[0]), reverse=True)))

    def conceal(self, text: str) -> str:
        """*text* with every value of these secrets put back as its placeholder."""
        for value, placeholder in self.forms:
            if value in text:
                text = text.replace(value, placeholder)
        return text

    def redact(self, text: str) -> str:
        """*text* fit to print: these values concealed, ``user:token@`` made ``***@``."""
        return masked(self.conceal(text))

    def __repr__(self) -> str:  # the values themselves never reach a repr or a traceback
        return f"Secrets(<{len({p for _, p in self.forms})} placeholders>)"


NO_SECRETS = Secrets()  # for output that no project's ${VAR} can reach (two dossiers' diff)


def masked(text: str) -> str:
    """*text* with the user info of every URL in it made ``***@`` (stateless: the
    credentials are in the text itself)."""
    return _USERINFO.sub(r"\g<scheme>***@", text)


def strip_credentials(url: str) -> str:
    """Return *url* with its user info removed entirely (for what gets written)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=host))
