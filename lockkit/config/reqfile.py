"""Requirement files as pip and uv read them, limited to what lockkit can lock.

lockkit locks distributions from indexes, and the indexes are chosen in one place
(lockkit.toml and the platform files). A requirement file written for pip may say more:
where to look (``--index-url``), local folders, editable installs. Every logical line is
sorted into a requirement, an include (``-r``/``-c``), an option that changes nothing in
a hashed lock of wheels (accepted), or something refused with a line saying what to do
instead. All of a file's refusals are reported together.

Only regular files are read, and a refused line of a file outside the project is named by
its number and its problem, never quoted (:mod:`lockkit.config.inputfile`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from lockkit.config.inputfile import NOT_FOUND, OUTSIDE_HINT, is_inside, not_regular, read_text
from lockkit.errors import ConfigError

__all__ = ["MAX_DEPTH", "Include", "RequirementFile", "flatten", "logical_lines",
           "normalize_requirement", "read_file", "read_tree"]

_COMMENT = re.compile(r"(^|\s+)#.*$")  # pip's: '#' at the start or after whitespace
_OPTION = re.compile(r"^(--[A-Za-z][\w-]*|-[A-Za-z])(?:=|\s+)?(.*)$")
_INCLUDES: dict[str, Literal["-r", "-c"]] = {"-r": "-r", "--requirement": "-r", "-c": "-c",
                                             "--constraint": "-c"}
# uv pip compile accepts these and they change nothing in a lock of hashed wheels.
_HARMLESS = {"--prefer-binary", "--require-hashes", "--use-feature"}
_INDEX_HOME = "lockkit.toml (index-url, [mirrors]) or, for a PyTorch index, the platform file"
_REFUSED = {
    **dict.fromkeys(("-i", "--index-url", "--extra-index-url", "--no-index", "-f",
                     "--find-links", "--trusted-host"),
                    f"chooses where packages come from; put that in {_INDEX_HOME}"),
    "--pre": "allows pre-releases of every package; name the pre-release in the "
             "requirement instead (e.g. 'torch>=2.6.0rc1')",
    **dict.fromkeys(("--no-binary", "--only-binary"),
                    "changes which files may be used; lockkit locks wheels (list an "
                    "sdist-only package in lockkit.toml allow-sdist)"),
}
_FROM_INDEXES = ("lockkit locks distributions from indexes: build a wheel and publish it to "
                 "an index the project uses, or depend on a released version")
_LOCAL = re.compile(r"^(\.{1,2}([/\\]|$)|[/\\~]|[A-Za-z]:[/\\]|file:)", re.I)
_VCS = re.compile(r"^(git|hg|svn|bzr)\+", re.I)
_ARCHIVE = (".whl", ".tar.gz", ".zip", ".tgz", ".tar.bz2")
_HASH = re.compile(r"^(sha256|sha384|sha512):([0-9a-fA-F]+)$")


class _Refused(Exception):
    """One line lockkit cannot take; the message says why and what to do, quoting the
    line; *hidden* says what is wrong without quoting anything (for a file outside the
    project)."""

    def __init__(self, message: str, hidden: str = "not a requirement lockkit can lock") -> None:
        super().__init__(message)
        self.hidden = hidden


@dataclass(frozen=True, kw_only=True)
class Include:
    """A ``-r`` (requirements) or ``-c`` (constraints only) line, its path resolved."""

    kind: Literal["-r", "-c"]
    path: Path


@dataclass(frozen=True, kw_only=True)
class RequirementFile:
    """One file as read: its text (what it was parsed from) and its entries, normalised
    and in file order: requirement strings (with any ``--hash=``), accepted options, and
    includes."""

    path: Path
    text: str
    entries: tuple[str | Include, ...]

    @property
    def includes(self) -> list[Include]:
        return [e for e in self.entries if isinstance(e, Include)]


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """pip's reading: lines joined at a trailing backslash (a comment line ends the join),
    comments and blanks dropped; each numbered by its first physical line."""
    parts: list[str] = []
    first = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not parts:
            first = number
        if raw.endswith("\\") and not _COMMENT.match(raw):
            parts.append(raw.strip("\\"))
            continue
        parts.append(" " + raw if _COMMENT.match(raw) else raw)
        line = _COMMENT.sub("", "".join(parts)).strip()
        parts = []
        if line:
            yield first, line
    line = _COMMENT.sub("", "".join(parts)).strip()
    if line:  # the file ended inside a continuation
        yield first, line


def normalize_requirement(spec: str) -> str:
    """``spec`` as packaging prints it, names canonical; raises ``ValueError`` (one line)
    for what lockkit cannot lock or parse."""
    kind = _bare_kind(spec)
    if kind:
        raise ValueError(f"{spec!r} is {kind}; {_FROM_INDEXES}")
    try:
        req = Requirement(spec)
    except InvalidRequirement as exc:
        if "@" not in spec and ("/" in spec or "\\" in spec or spec.endswith(_ARCHIVE)):
            raise ValueError(f"{spec!r} is a local path; {_FROM_INDEXES}") from None
        raise ValueError(f"{spec!r}: {_in_words(spec, str(exc).splitlines()[0])}") from None
    if req.url:
        raise ValueError(f"{spec!r} is {_url_kind(req.url)}; {_FROM_INDEXES}")
    req.name = canonicalize_name(req.name)
    req.extras = {canonicalize_name(e) for e in req.extras}
    return str(req)


# A requirement's parts as a user writes them: a name, extras, version clauses, a marker.
_PARTS = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([^;@]*?)\s*(;.*)?")
_OPERATOR = re.compile(r"===|==|!=|>=|<=|~=|>|<|=")


def _in_words(spec: str, parser_says: str) -> str:
    """Why packaging refused *spec*, in lockkit's words for the usual mistakes (a version
    missing or not a version, a lone '=', no operator); else packaging's own words."""
    if "[" in spec and "]" not in spec.split("[", 1)[1]:
        return "'[' opens a list of extras that no ']' closes"
    parts = _PARTS.fullmatch(spec)
    if parts is None:
        return f"not a valid requirement ({parser_says})"
    name, clauses, marker = parts[1], parts[3], parts[4]
    for clause in (c.strip() for c in clauses.split(",")) if clauses else ():
        problem = _clause_problem(clause)
        if problem:
            return problem
        if not _OPERATOR.match(clause):
            return (f"{clause!r} after {name!r} is not a version clause (a name has no "
                    "spaces; a version follows an operator such as '>=')")
    if marker is not None:
        if not marker[1:].strip():
            return "nothing follows ';', where an environment marker was expected"
        return f"the environment marker {marker[1:].strip()!r} is not valid ({parser_says})"
    return f"not a valid requirement ({parser_says})"


def _clause_problem(clause: str) -> str | None:
    """What is wrong with one version clause (``>=2.1``), or None if packaging takes it."""
    if not clause:
        return "a version clause is missing between commas"
    op = _OPERATOR.match(clause)
    if op is None:
        return (f"{clause!r} has no operator; write e.g. '=={clause}'" if clause[0].isdigit()
                else None)
    version = clause[op.end():].strip()
    if op[0] == "=":
        return f"'=' is not an operator; write '=={version}'"
    if not version:
        return f"a version is missing after {op[0]!r}"
    if re.search(r"\s|[=<>!~]", version):
        return f"{clause!r}: separate version clauses with ','"
    try:
        Specifier(clause)
        return None
    except InvalidSpecifier:
        pass
    try:
        Version(version.removesuffix(".*"))
    except InvalidVersion:
        return f"{version!r} is not a version"
    for tail, what in ((".*", "'.*'"), ("+", "a local version ('+label')")):
        if tail in version:
            return f"{what} is allowed after '==' and '!=' only, not after {op[0]!r}"
    if op[0] == "~=":
        return f"'~=' needs a version of two parts or more, e.g. '~={version}.0'"
    return f"{op[0]!r} does not take {version!r}"


def _bare_kind(spec: str) -> str | None:
    """What a line without a package name points at (pip takes paths and URLs bare)."""
    if _LOCAL.match(spec):
        return "a local path"
    if _VCS.match(spec):
        return "a VCS URL"
    if "://" in spec.split("@")[0]:
        return "a URL"
    return None


def _url_kind(url: str) -> str:
    if _LOCAL.match(url) or not re.match(r"^[A-Za-z][\w+.-]*://", url):
        return "a local path"
    return "a VCS URL" if _VCS.match(url) else "a direct URL"


def _requirement(line: str) -> str:
    """A requirement and its per-requirement options (pip's rule: options start at the
    first token beginning with '-'); only ``--hash`` is taken, and kept normalised."""
    tokens = line.split()
    cut = next((i for i, t in enumerate(tokens) if t.startswith("-")), len(tokens))
    hashes = _hashes(tokens[cut:])
    try:
        return " ".join([normalize_requirement(" ".join(tokens[:cut])), *sorted(hashes)])
    except ValueError as exc:
        raise _Refused(str(exc)) from None


def _hashes(options: list[str]) -> set[str]:
    found: set[str] = set()
    it = iter(options)
    for token in it:
        name, _, value = token.partition("=")
        if name != "--hash":
            raise _Refused(f"option {name!r} after a requirement is not allowed (only --hash "
                           "is: build settings never apply to a lock of wheels)",
                           "an option other than --hash after a requirement")
        value = value or next(it, "")
        match = _HASH.match(value)
        if not match:
            raise _Refused(f"malformed --hash {value!r}: expected sha256:<hex digest>",
                           "a malformed --hash: expected sha256:<hex digest>")
        found.add(f"--hash={match[1]}:{match[2].lower()}")
    return found


def _option(line: str, folder: Path) -> str | Include:
    """An accepted option line, normalised, or an include."""
    match = _OPTION.match(line)
    name, value = (match[1], match[2].strip()) if match else (line.split()[0], "")
    if name in _INCLUDES:
        target = (folder / value).resolve()
        problem = not_regular(folder / value) if value else NOT_FOUND
        if problem == NOT_FOUND:
            raise _Refused(f"{name} {value}: file not found",
                           f"{name}: the file it includes is not found")
        if problem:
            raise _Refused(f"{name} {value}: {problem}", f"{name}: what it includes is not a "
                                                         "regular file")
        return Include(kind=_INCLUDES[name], path=target)
    if name in ("-e", "--editable"):
        raise _Refused(f"{line!r} is an editable install; {_FROM_INDEXES}",
                       f"an editable install; {_FROM_INDEXES}")
    if name in _REFUSED:  # the option's name is one of lockkit's own: nothing is quoted
        raise _Refused(f"option {name!r} {_REFUSED[name]}", f"option {name!r} {_REFUSED[name]}")
    if name in _HARMLESS:
        return f"{name}={value}" if value else name
    import difflib

    close = difflib.get_close_matches(name, [*_INCLUDES, *_HARMLESS, *_REFUSED], n=1)
    raise _Refused(f"unknown option {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                   "an unknown option")


def read_file(path: Path, root: Path | None = None) -> RequirementFile:
    """Read and check one file, every refused line reported at once; a line of a file
    outside the project at *root* (default: the file's own folder) is never quoted. A
    file already read with the same text (compile reads its inputs twice: the record and
    uv's flat file) is not parsed again."""
    text = read_text(path, "requirement file")
    known = _parsed.get((path, text))
    if known is not None:
        return known
    inside = is_inside(path, root or path.parent)
    entries: list[str | Include] = []
    errors: list[str] = []
    for number, line in logical_lines(text):
        try:
            entries.append(_option(line, path.parent) if line.startswith("-")
                           else _requirement(line))
        except _Refused as exc:
            errors.append(f"{path}:{number}: {exc if inside else exc.hidden}")
    if errors and not inside:
        raise ConfigError("; ".join(errors) + f" (line{'s' if len(errors) > 1 else ''} not "
                          f"shown: the file is outside the project {root})", hint=OUTSIDE_HINT)
    if errors:
        raise ConfigError("; ".join(errors))
    found = RequirementFile(path=path, text=text, entries=tuple(entries))
    if len(_parsed) > 256:  # a long-running process (the tests) reads many files
        _parsed.clear()
    _parsed[(path, text)] = found
    return found


_parsed: dict[tuple[Path, str], RequirementFile] = {}  # (path, text) -> the file as parsed


# How deep ``-r``/``-c`` includes may nest: far beyond any real project, and far below
# anything that could exhaust memory or a parser's stack.
MAX_DEPTH = 100


class _Walk:
    """A depth-first walk of include chains, without recursion: the files open along the
    current chain (each with its entries still to read), each file entered once (by
    *seen*'s key), and at most :data:`MAX_DEPTH` deep."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.chain: list[tuple[RequirementFile, Iterator[str | Include], bool]] = []
        self.seen: set[tuple[Path, bool]] = set()

    def enter(self, path: Path, constraint: bool = False) -> RequirementFile | None:
        """Read *path* and open it on the chain; None when already entered."""
        if (path, constraint) in self.seen:
            return None
        if len(self.chain) >= MAX_DEPTH:
            raise ConfigError(
                f"{self.chain[-1][0].path}: includes {path.name}, which is more than "
                f"{MAX_DEPTH} files deep in a chain of -r/-c includes starting at "
                f"{self.chain[0][0].path}", hint="include the files from fewer levels")
        self.seen.add((path, constraint))
        found = read_file(path, self.root)
        self.chain.append((found, iter(found.entries), constraint))
        return found

    def entries(self) -> Iterator[tuple[str | Include, bool]]:
        """The open files' entries in reading order (an include before the entries after
        it), each with whether it only constrains; the caller enters includes it follows."""
        while self.chain:
            _, pending, constraint = self.chain[-1]
            entry = next(pending, None)
            if entry is None:
                self.chain.pop()
            else:
                yield entry, constraint


def read_tree(path: Path, root: Path | None = None) -> list[RequirementFile]:
    """A file and, depth first, every file it includes (each once); *root* is the
    project's (default: the file's folder), outside which no line is quoted."""
    walk = _Walk(root or path.resolve().parent)
    first = walk.enter(path.resolve())
    found = [first] if first is not None else []
    for entry, _ in walk.entries():
        if isinstance(entry, Include):
            included = walk.enter(entry.path.resolve())
            if included is not None:
                found.append(included)
    return found


def flatten(paths: list[Path], root: Path | None = None) -> tuple[list[str], list[str]]:
    """The requirements and the constraints of files and their includes, in reading order.

    What uv is given instead of the user's files: uv does not join a continuation inside
    a requirement (pip does), and this way uv resolves exactly what lockkit checked. As
    in pip, whatever a ``-c`` reaches, at any depth, only constrains. *root* is as in
    :func:`read_tree` (default: the first file's folder).
    """
    out: tuple[list[str], list[str]] = ([], [])
    # one walk for all the paths: a file reached twice is read once
    walk = _Walk(root or (paths[0].resolve().parent if paths else None))
    for path in paths:
        walk.enter(path.resolve())
        for entry, constraint in walk.entries():
            if isinstance(entry, Include):
                walk.enter(entry.path, constraint or entry.kind == "-c")
            elif not entry.startswith("-"):  # the other options change nothing in the resolution
                out[constraint].append(entry.split(" --hash=")[0])
    return out
