"""compile's uv, started before lockkit has read anything: a speculation the compile checks.

uv needs ~100 ms to resolve ten packages; lockkit needs ~40 ms of start-up (Python,
argparse, the config, the platform files, the inputs) before it can say how to run uv.
So a compile of one platform remembers how it ran uv (``<cache>/launch/<key>.memo``,
keyed by lockkit's version, the interpreter, the working folder and the argv), and the
next identical command line starts that uv (and the routing index in front of it) at
once, before argparse is imported. The compile then runs as always, and at the point it
would start uv it compares: the argv it built (temp paths aside), the requirement files
it wrote, the uv environment's extra variables, the routing index's platform, mirrors
and family. Only when all of them are equal does it take the running uv's result;
otherwise that uv is killed and the compile starts its own. A stale memo costs a wasted
start, never a different lock.

Never remembered: a command line with flags beyond ``--platform`` and ``--project``, a
run on Windows, and anything holding a credential or a ``${VAR}`` value (an argv, a
requirement line, a mirror or index URL that redaction would change): those compiles
always start uv themselves. The memo holds no secret.

This module imports the standard library only (os, marshal, socket, subprocess, pathlib)
until a memo is found; the routing index and its page fetcher come with the memo's need.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
import time
from pathlib import Path

from lockkit import __version__

try:  # the interpreter's own SHA-256: hashlib loads OpenSSL (~2 ms) before uv can start
    from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # pragma: no cover - an interpreter without the builtin module
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from lockkit.routing import RoutingIndex

__all__ = ["Early", "discard", "keep_result", "known_result", "launch", "remember", "take",
           "wanted"]

_FORMAT = 1
_FLAGS = ("--platform", "--project")
OUT, ROUTING, INPUTS = "<lockkit:out>", "<lockkit:routing>", "<lockkit:inputs>/"
# lockkit._run.isolated_env, repeated (that module imports tempfile): tests hold them equal
_HIDDEN_PREFIXES = ("PIP_", "UV_", "PYTHON", "VIRTUAL_ENV", "CONDA_")
_KEEP = {"UV_CACHE_DIR"}


class Early:
    """A uv started from a memo, waiting to be taken (or discarded)."""

    def __init__(self, *, platform: str, proc: subprocess.Popen[bytes], argv: list[str],
                 folder: Path, files: dict[str, str], extra: dict[str, str],
                 routing: RoutingIndex | None, start: float,
                 preferences: tuple[str | None, bytes | None]) -> None:
        self.platform, self.proc, self.argv, self.folder = platform, proc, argv, folder
        self.files, self.extra, self.routing, self.start = files, extra, routing, start
        self.preferences = preferences  # (the lock's path, the bytes given to uv) or None
        self.fast: dict[str, Any] | None = None  # the memo's record of the last result
        self.collected: tuple[int, bytes, bytes] | None = None  # uv's end, once awaited

    @property
    def out(self) -> Path:
        return self.folder / "pylock.toml"

    def discard(self) -> None:
        """Kill the uv (its whole group), stop the routing index, remove the folder."""
        if self.proc.poll() is None:
            _kill(self.proc)
        else:
            try:
                self.proc.communicate(timeout=30)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        if self.routing is not None:
            self.routing.__exit__(None, None, None)
        _remove(self.folder)


_plan: dict[str, Any] | None = None  # this command's memo: {"path", "platform"}
_launched: Early | None = None


def _key(argv: list[str]) -> str | None:
    """The memo's name for a compile argv of the plain flags only, else None."""
    if os.name != "posix" or len(argv) % 2:
        return None
    seen = set()
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        if flag not in _FLAGS or flag in seen or value.startswith("-"):
            return None
        seen.add(flag)
    if "--platform" not in seen:
        return None

    blob = repr([_FORMAT, __version__, sys.executable, os.getcwd(), argv])
    return sha256(blob.encode()).hexdigest()


def launch(argv: list[str]) -> None:
    """Start the remembered uv for the compile argv *argv* (after ``compile``), if any."""
    global _plan, _launched
    _plan = _launched = None
    key = _key(argv)
    if key is None:
        return
    from lockkit.cachelayout import default_cache_dir

    path = default_cache_dir() / "launch" / f"{key}.memo"
    _plan = {"path": path, "platform": argv[argv.index("--platform") + 1]}
    try:
        if not _private(path):
            return
        memo = marshal.loads(path.read_bytes())  # private to this user, as a .pyc is
        if not isinstance(memo, dict) or memo.get("format") != _FORMAT \
                or memo.get("platform") != _plan["platform"] \
                or not _is_uv_compile(memo.get("argv")) \
                or memo.get("watch") != _watched(list(memo.get("watch", {}))):
            return  # a changed config or platform file may point uv elsewhere: not started
        _launched = _start(memo)
        _launched.fast = memo.get("fast") if isinstance(memo.get("fast"), dict) else None
    except Exception:  # noqa: BLE001 - a bad memo means the compile starts its own uv
        _launched = None


def _watched(paths: list[str]) -> dict[str, Any]:
    """What decides where uv connects, by content: each config file's sha256 (None when
    absent) and each platform folder's ``{file: sha256}``."""
    found: dict[str, Any] = {}
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found[name] = {p.name: sha256(p.read_bytes()).hexdigest()
                           for p in sorted(path.glob("*.toml"))}
        else:
            try:
                found[name] = sha256(path.read_bytes()).hexdigest()
            except FileNotFoundError:
                found[name] = None
    return found


def _private(path: Path) -> bool:
    """The memo runs a command before lockkit checks anything, as ssh's StrictModes reads
    its files: only a memo that this user owns and no one else can write, in folders
    alike (the memo's folder and the cache's root)."""
    try:
        for item in (path, path.parent, path.parent.parent):
            st = item.lstat()
            if st.st_uid != os.getuid() or st.st_mode & 0o022 or (
                    item is not path and not os.path.isdir(item)):
                return False
    except OSError:
        return False
    return True


def _is_uv_compile(argv: Any) -> bool:
    """An argv as ``lockkit.resolve.uv_command`` makes them: uv's ``pip compile``, the
    build interpreter this one."""
    if not isinstance(argv, list) or len(argv) < 4 or \
            not all(isinstance(a, str) for a in argv):
        return False
    python = argv.index("--python") + 1 if "--python" in argv else 0
    return (os.path.basename(argv[0]) == "uv" and argv[1:3] == ["pip", "compile"]
            and 0 < python < len(argv) and argv[python] == sys.executable)


def _start(memo: dict[str, Any]) -> Early:
    start = time.perf_counter()
    folder = Path(os.environ.get("TMPDIR") or "/tmp") / \
        f"lockkit-early-{os.getpid()}-{os.urandom(6).hex()}"
    folder.mkdir(mode=0o700)
    routing = None
    port: int | None = None
    listening: Any = None
    try:
        files = {str(k): str(v) for k, v in memo["files"].items()}
        for name, text in files.items():
            if "/" in name or name in ("", ".", "..", "pylock.toml"):
                raise ValueError(f"memo file name {name!r}")
            (folder / name).write_text(text, encoding="utf-8")
        preferences = memo.get("preferences")
        given = None
        if preferences:
            try:
                given = Path(preferences).read_bytes()
            except FileNotFoundError:
                pass
            else:
                (folder / "pylock.toml").write_bytes(given)
        if memo.get("routing"):  # listen now; the index itself is made once uv runs
            import socket

            listening = socket.create_server(("127.0.0.1", 0), backlog=128)
            port = listening.getsockname()[1]
        argv = [_fill(str(a), folder, port) for a in memo["argv"]]
        extra = {str(k): str(v) for k, v in memo.get("extra", {}).items()}
        env = {k: v for k, v in os.environ.items()
               if k in _KEEP or not k.startswith(_HIDDEN_PREFIXES)}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", PYTHONNOUSERSITE="1", **extra)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
    except BaseException:
        if listening is not None:
            listening.close()
        _remove(folder)
        raise
    if port is not None:
        try:
            routing = _routing(memo["routing"], listening)
        except BaseException:
            listening.close()
            raise
        finally:
            if routing is None:  # uv asks a closed port: it fails, and is discarded
                _kill(proc)
                _remove(folder)
    if routing is not None:  # uv asks for the first page in ~20 ms: nothing is more urgent
        routing.prefetch(memo["routing"].get("prefetch", []), wait=True)
        # then uv asks the routing index for every name at once: the compile's own start
        # (argparse, the config: ~40 ms of Python) waits for that burst to end, or the
        # answers would wait for the interpreter lock (measured: uv 30% slower)
        routing.quiet(idle=0.008, limit=0.08)
    return Early(platform=memo["platform"], proc=proc, argv=argv, folder=folder, files=files,
                 extra=extra, routing=routing, start=start, preferences=(preferences, given))


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        pass
    try:
        proc.communicate(timeout=30)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass


def _routing(spec: dict[str, Any], listening: Any) -> RoutingIndex:
    from lockkit.auth import Credentials
    from lockkit.pages import Http
    from lockkit.routing import RoutingIndex
    from lockkit.urls import Mirrors

    mirrors = {str(k): str(v) for k, v in spec["mirrors"].items()}
    http = Http(credentials=Credentials.from_urls([spec.get("index_url") or "",
                                                   *mirrors.values()]))
    routing = RoutingIndex(family=tuple(spec["family"]), official_index=spec["official"],
                           mirrors=Mirrors(mirrors), file_hosts=tuple(spec["file_hosts"]),
                           fetch=http.page, listening=listening)
    if routing.url != f"http://127.0.0.1:{listening.getsockname()[1]}/simple":
        raise ValueError("the routing index's URL is not the one uv was given")
    return routing.__enter__()


def _fill(arg: str, folder: Path, port: int | None) -> str:
    if arg == OUT:
        return str(folder / "pylock.toml")
    if arg == ROUTING:  # RoutingIndex.url's form
        if port is None:
            raise ValueError("the memo's argv names a routing index it has not")
        return f"http://127.0.0.1:{port}/simple"
    if arg.startswith(INPUTS):
        return str(folder / arg[len(INPUTS):])
    return arg


def finished_unchanged(timeout: float = 900) -> tuple[str, int, str] | None:
    """The whole compile, when it is the last one again: every input file was byte for
    byte what the memo names (checked before uv started), uv's output is the one that
    made the lock on disk, the routing index listed the same files, and the lock is
    still what compile wrote. Returns ``(platform, packages, lock as shown)`` with the
    early uv cleaned up; None (the uv, awaited, stays for the compile to take) otherwise."""
    early, fast = _launched, (_launched.fast if _launched is not None else None)
    if early is None or fast is None or early.preferences[1] is None:
        return None  # no lock was given to uv as preferences: the compile would give one
    try:
        st = os.stat(early.argv[0])
        if [st.st_size, st.st_mtime_ns] != fast.get("uv"):
            return None
        out, err = early.proc.communicate(timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    early.collected = (early.proc.returncode, out, err)
    try:
        if early.proc.returncode != 0 or \
                sha256(early.out.read_bytes()).hexdigest() != fast.get("output") or \
                _listed(early.routing) != fast.get("listed") or \
                sha256(Path(fast["lock"]).read_bytes()).hexdigest() != fast.get("lock_sha256"):
            return None
    except (OSError, KeyError, TypeError):
        return None
    result = (early.platform, int(fast["packages"]), str(fast["shown"]))
    discard()
    return result


def _listed(routing: RoutingIndex | None) -> dict[str, list[list[str]]]:
    """Each family page's files as the lock writer uses them (name, URL, official URL)."""
    if routing is None:
        return {}
    return {name: sorted([f.filename, f.url, f.official] for f in page.files.values())
            for name, page in sorted(routing.pages.items())}


def remember_result(platform: str, output: str, routing: RoutingIndex | None,
                    lock: Path, lock_text: str, packages: int, shown: str) -> None:
    """Add to this command's memo what the compile made, for :func:`finished_unchanged`."""
    if not wanted(platform):
        return
    assert _plan is not None
    try:
        if not _private(_plan["path"]):
            return
        memo = marshal.loads(_plan["path"].read_bytes())
        if not isinstance(memo, dict) or memo.get("platform") != platform \
                or not _is_uv_compile(memo.get("argv")):
            return
        st = os.stat(memo["argv"][0])
        memo["fast"] = {"uv": [st.st_size, st.st_mtime_ns],
                        "output": sha256(output.encode()).hexdigest(),
                        "listed": _listed(routing), "lock": str(lock),
                        "lock_sha256": sha256(lock_text.encode()).hexdigest(),
                        "packages": packages, "shown": shown}
        _write(_plan["path"], marshal.dumps(memo))
    except (OSError, ValueError, TypeError, KeyError, EOFError):
        return


def take(platform: str) -> Early | None:
    """The uv started for *platform*, handed over once (the compile now owns it)."""
    global _launched
    early, _launched = _launched, None
    if early is not None and early.platform != platform:
        early.discard()
        return None
    return early


def discard() -> None:
    """The end of the command: a uv nobody took is killed, its folder removed."""
    global _launched, _plan
    early, _launched, _plan = _launched, None, None
    if early is not None:
        early.discard()


def wanted(platform: str) -> bool:
    """Whether this command remembers how it runs uv for *platform*."""
    return _plan is not None and _plan["platform"] == platform


def remember(platform: str, argv: list[str], out: Path, inputs: Path,
             extra: dict[str, str], preferences: Path | None,
             routing: dict[str, Any] | None, watch: tuple[Path, ...] = ()) -> None:
    """Keep how uv was run for *platform* (argv with its temp paths as placeholders, the
    files of the *inputs* folder) for the next identical command line, unless any part
    of it holds a secret; a memo that cannot be written is no error. *watch*: the config
    files and platform folders whose change means uv is not started early at all."""
    from lockkit.redact import redact

    if not wanted(platform):
        return
    assert _plan is not None
    try:
        files = {p.name: p.read_text(encoding="utf-8") for p in sorted(inputs.iterdir())}
        routing_url = routing.pop("url") if routing else None
        shown = []
        for arg in argv:
            if arg == str(out):
                shown.append(OUT)
            elif routing_url is not None and arg == routing_url:
                shown.append(ROUTING)
            elif Path(arg).parent == inputs and Path(arg).name in files:
                shown.append(INPUTS + Path(arg).name)
            else:
                shown.append(arg)
        memo = {"format": _FORMAT, "platform": platform, "argv": shown, "files": files,
                "extra": extra, "preferences": str(preferences) if preferences else None,
                "routing": routing, "watch": _watched([str(w) for w in watch])}
        text = repr(memo)
        if str(inputs) in text or _secret(text, redact):
            return
        _write(_plan["path"], marshal.dumps(memo))
    except (OSError, ValueError, TypeError):
        return


def _result_path(key: str) -> Path:
    from lockkit.cachelayout import default_cache_dir

    return default_cache_dir() / "launch" / f"{key}.done"


def known_result(key: str) -> tuple[str, int] | None:
    """What compile made last time of exactly these inputs (:func:`keep_result`): the
    lock text's sha256 and its package count; None when unknown or not private."""
    path = _result_path(key)
    try:
        if not _private(path):
            return None
        sha, count = path.read_text(encoding="ascii").split()
        return sha, int(count)
    except (OSError, ValueError):
        return None


def keep_result(key: str, lock_sha256: str, packages: int) -> None:
    """Remember that the inputs *key* names made the lock text of *lock_sha256*."""
    try:  # a cache that cannot be written costs the next compile its shortcut, no more
        _write(_result_path(key), f"{lock_sha256} {packages}\n".encode("ascii"))
    except (OSError, ValueError):
        pass


def _write(path: Path, data: bytes) -> None:
    """*data* to *path* through a temp file and a rename, with the user's umask modes."""
    from lockkit.common import temp_file

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file(path.parent, f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _secret(text: str, redact: Any) -> bool:
    """Whether redaction would change *text*: user info in a URL, a ``${VAR}``'s value."""
    return "${" in text or redact(text) != text


def _remove(folder: Path) -> None:
    for path in sorted(folder.glob("*"), reverse=True):
        try:
            path.unlink()
        except OSError:
            pass
    try:
        folder.rmdir()
    except OSError:
        pass
