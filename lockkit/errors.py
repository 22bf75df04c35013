"""The LockkitError tree: every error class of lockkit, with its exit code and a hint.

Only ``cli.main`` turns these into a printed line and an exit status. Each class says,
like cibuildwheel's ``errors.py``, what kind of failure it is (``exit_code``) and what to
try next (``default_hint``, shown when the raise site gives no more specific ``hint``).

The exit codes are few on purpose, and scripts rely on them: **2** bad input, found before
any work starts (flags, lockkit.toml, platform files, requirement files, locks, diff
inputs); **1** a failure while working; **3** ``platforms --check-index`` could not read
the index (its 1 says "behind"); **130** interrupted (Ctrl-C, not a class here).
The exit-2 classes are also ``ValueError``s, as packaging's bad-input errors are: a
library caller that catches ``ValueError`` for bad input keeps working.
The docs' table of exit codes (docs/reference/exit-codes.md) is :func:`exit_code_table`;
a test keeps them equal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import ClassVar


__all__ = [
    "INTERRUPTED",
    "ArchiveError",
    "BuildError",
    "CommandError",
    "ConfigError",
    "DiffError",
    "FetchError",
    "GuardError",
    "HashMismatch",
    "IndexError_",
    "IndexUnreadable",
    "LockkitError",
    "OutputError",
    "PlatformError",
    "ResolutionError",
    "StaleLockError",
    "TrustError",
    "UsageError",
    "VerifyError",
    "WriteError",
    "exit_code_table",
]

INTERRUPTED = 130  # Ctrl-C: the shell's 128 + SIGINT; nothing is left half-written


class LockkitError(Exception):
    """Any other failure while working; ``str(err)`` is the one line shown to the user."""

    exit_code: ClassVar[int] = 1
    default_hint: ClassVar[str | None] = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint  # what the raise site knows to suggest; None: the class's default

    @property
    def advice(self) -> str | None:
        """The hint line shown under the error: the raise site's, else the class's."""
        return self.advice_for("lockkit")

    def advice_for(self, command: str) -> str | None:
        """:attr:`advice` with the command that failed (``lockkit wheelhouse build``) in
        place of ``{command}``: a hint names the real command, never a placeholder."""
        advice = self.hint or self.default_hint
        return advice.replace("{command}", command) if advice else None


class UsageError(LockkitError, ValueError):
    """Bad flags or arguments."""

    exit_code = 2
    default_hint: ClassVar[str | None] = ("run '{command} --help' for the flags and the "
                                          "values they take")


class ConfigError(LockkitError, ValueError):
    """A malformed lockkit.toml, constraint file or requirement line."""

    exit_code = 2
    # None: the message itself says what to fix (the file, the key path or line, what was
    # expected), and a bad requirement or pyproject line is reported as that one line.
    default_hint: ClassVar[str | None] = None


class PlatformError(ConfigError):
    """A malformed or unknown platform definition."""

    default_hint = "'lockkit platforms' lists the known platforms; a shipped one is a template"


class DiffError(LockkitError, ValueError):
    """An input of ``lockkit diff`` that cannot be read as a dossier, a lock or a manifest."""

    exit_code = 2
    default_hint = "give two dossier.json, pylock.*.toml or wheelhouse manifest.json files"


class OutputError(UsageError):
    """An output file (``-o``, ``--junit``) that lockkit does not write over: a file it did
    not write (``--force`` overwrites it), one of the command's inputs, or not a file."""

    default_hint: ClassVar[str | None] = None  # the message says what the file is and what to do


class ResolutionError(LockkitError):
    """uv found no resolution, or failed to run."""

    default_hint = "read uv's reason above: loosen the requirement it names, or drop the platform"


class IndexError_(LockkitError):
    """An index could not be reached or refused access (named in the message)."""

    default_hint = "check the index URL, the --mirror flags, the network and its credentials"


class IndexUnreadable(IndexError_):
    """``platforms --check-index`` could not read the index (unreachable, a page past
    max-page-size, not a PyTorch index's page): nothing was compared, so not exit 1, which
    says the platforms are behind it."""

    exit_code = 3
    default_hint = ("check --index-url (or the platform files' index and [mirrors]), the "
                    "network and its credentials")


class GuardError(LockkitError):
    """A resolution that resolved but cannot work on the platform."""

    default_hint = "pin or constrain the package named above for this platform and compile again"


class StaleLockError(LockkitError):
    """``compile --check`` found missing or stale locks."""

    default_hint = "run 'lockkit compile' and commit the locks it writes"


class WriteError(LockkitError):
    """A file lockkit writes could not be written: a read-only folder, a full disk."""

    default_hint = "check that the folder exists, is writable and has free space"


class CommandError(LockkitError):
    """A command lockkit ran failed or passed its timeout; it carries the command's stderr."""

    default_hint = "run the command shown by hand to see its whole output"

    def __init__(self, message: str, *, argv: tuple[str, ...] = (),
                 returncode: int | None = None, stderr: str = "", timed_out: bool = False,
                 hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.argv, self.returncode = argv, returncode
        self.stderr, self.timed_out = stderr, timed_out


class FetchError(LockkitError):
    """A file could not be obtained from any source."""

    default_hint = "check --mirror / --find-links, or the network"


class HashMismatch(FetchError):
    """Bytes did not match the lock: never retried into success, never kept."""

    default_hint = ("the file changed at its source or the lock is wrong: compile again if "
                    "the change is expected, never skip the hash check")


class TrustError(LockkitError):
    """A folder's files are not the ones the committed lock selects."""

    default_hint = "rebuild it with 'lockkit wheelhouse build' from the committed lock"


class ArchiveError(LockkitError):
    """A wheelhouse folder or archive that cannot be packed or unpacked safely."""

    default_hint = "pack a folder that 'lockkit wheelhouse build' wrote, and unpack what it packed"


class VerifyError(LockkitError):
    """``verify`` ran, and a step failed or the result is incomplete (the dossier says
    which)."""

    default_hint = "the dossier (dossier.md) holds every step's result and output"


class BuildError(LockkitError):
    """The lock cannot be turned into a wheelhouse for its platform."""

    default_hint = "compile the platform's lock again, then build the wheelhouse"


def _classes() -> list[type[LockkitError]]:
    """Every error class of this module, in the order declared."""
    return [cls for cls in globals().values()
            if isinstance(cls, type) and issubclass(cls, LockkitError)]


def exit_code_table() -> str:
    """The docs' table of exit codes, one row per class (and one for an interrupt)."""
    rows = [("exit code", "error", "when", "hint (unless a more specific one is shown)"),
            ("---",) * 4, ("0", "", "done (verify: passed)", "")]
    for cls in sorted(_classes(), key=lambda c: c.exit_code):
        doc = " ".join((cls.__doc__ or "").split()).replace("``", "`")
        hint = (cls.default_hint or "").replace("{command}", "lockkit <command>")
        rows.append((str(cls.exit_code), f"`{cls.__name__}`", doc, hint))
    rows += [("129", "", "ended by SIGHUP (a closed terminal), cleaned up as Ctrl-C is", ""),
             (str(INTERRUPTED), "", "interrupted (Ctrl-C); nothing is left half-written", ""),
             ("143", "", "ended by SIGTERM (`timeout`, `docker stop`, a cancelled CI job), "
                         "cleaned up as Ctrl-C is", "")]
    return "".join(f"| {' | '.join(row)} |\n".replace("|  |", "| |") for row in rows)
