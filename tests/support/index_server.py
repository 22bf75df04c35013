"""Tiny real wheels and a PEP 503 index served on 127.0.0.1 for the tests.

The wheels are built with zipfile (a valid RECORD, METADATA and WHEEL), so uv and
pip treat them as the real thing; the server is the standard library's, so every
request is real HTTP over loopback.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import re
import shutil
import socket
import threading
import time
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from pathlib import Path


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def build_wheel(
    dest: Path,
    name: str,
    version: str,
    requires: list[str] | None = None,
    tag: str = "py3-none-any",
    files: dict[str, str] | None = None,
    extras: tuple[str, ...] = (),
) -> Path:
    """Write ``name-version-tag.whl`` into *dest* and return its path."""
    dest.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Provides-Extra: {e}" for e in extras]
    meta += [f"Requires-Dist: {r}" for r in requires or []]
    contents = {
        f"{dist}/__init__.py": f"__version__ = {version!r}\n",
        **(files or {}),
        f"{info}/METADATA": "\n".join(meta) + "\n",
        f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: lockkit-tests\n"
                          f"Root-Is-Purelib: true\nTag: {tag}\n"),
    }
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    contents[f"{info}/RECORD"] = "\n".join(record) + "\n"
    wheel = dest / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for arc, text in contents.items():
            zi = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            zf.writestr(zi, text)
    return wheel


_BACKEND = """
import base64, hashlib, os, zipfile

NAME, VERSION, TAG = {name!r}, {version!r}, {tag!r}


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist = NAME.replace("-", "_")
    info = f"{{dist}}-{{VERSION}}.dist-info"
    files = {{f"{{dist}}/__init__.py": f"__version__ = {{VERSION!r}}\\n",
             f"{{info}}/METADATA":
                 f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\n",
             f"{{info}}/WHEEL":
                 f"Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: {{TAG}}\\n"}}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{{path}},sha256={{digest.decode()}},{{len(text.encode())}}")
    files[f"{{info}}/RECORD"] = "\\n".join(record + [f"{{info}}/RECORD,,"]) + "\\n"
    name = f"{{dist}}-{{VERSION}}-{{TAG}}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for arc, text in files.items():
            zf.writestr(zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0)), text)
    return name
"""


def build_sdist(dest: Path, name: str, version: str, tag: str = "py3-none-any") -> Path:
    """An sdist whose in-tree backend needs nothing from an index and builds a *tag* wheel."""
    import io
    import tarfile

    dest.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")
    base = f"{dist}-{version}"
    members = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                          'backend-path = ["."]\n',
        "backend.py": _BACKEND.format(name=name, version=version, tag=tag),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    path = dest / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for arc, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{arc}")
            info.size, info.mtime = len(data), 1577836800
            tf.addfile(info, io.BytesIO(data))
    return path


def reply(handler: http.server.BaseHTTPRequestHandler, code: int, body: bytes, ctype: str,
          faults: dict[str, list[str]], stall: float, head: bool = False) -> None:
    """Send an answer, or the next fault queued for the requested file name.

    Faults, one per request in order, then the real file: "500", "404", "reset" (close
    with no answer), "truncate" (half the promised body), "wrong" (right length, wrong
    bytes), "slow" (stall *stall* seconds first).
    """
    queue = faults.get(urllib.parse.unquote(handler.path.split("?", 1)[0]).rsplit("/", 1)[-1])
    fault = queue.pop(0) if queue and code == 200 else None
    if fault == "reset":
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_RDWR)
        return
    if fault in ("500", "404"):
        code, body, ctype = int(fault), b"injected fault", "text/plain"
    if fault == "slow":
        time.sleep(stall)
    handler.send_response(code)
    handler.send_header("Content-Type", ctype)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if head:
        return
    if fault == "truncate":
        handler.wfile.write(body[: len(body) // 2])
        handler.wfile.flush()
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_RDWR)
        return
    if fault == "wrong":
        body = bytes([body[0] ^ 0xFF]) + body[1:]
    handler.wfile.write(body)


@dataclass
class Index:
    """One PEP 503 index: a folder of files per project, served under ``prefix``."""

    root: Path
    prefix: str  # e.g. "/whl/cu126" or "/simple"
    hashes: bool = True
    status: dict[str, int] = field(default_factory=dict)  # project -> forced HTTP status

    def add(self, name: str, version: str, **kw) -> Path:
        return build_wheel(self.root / _norm(name), name, version, **kw)

    def add_sdist(self, name: str, version: str, **kw) -> Path:
        return build_sdist(self.root / _norm(name), name, version, **kw)

    def put(self, wheel: Path) -> Path:
        """Serve an existing file (hard-linked when possible, so big wheels cost nothing)."""
        project = _norm(wheel.name.split("-", 1)[0])
        dest = self.root / project / wheel.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(wheel, dest)
        except OSError:
            shutil.copyfile(wheel, dest)
        return dest


class IndexServer:
    """Serves several :class:`Index` objects from one loopback HTTP server.

    With ``auth=(user, password)`` it is a private index: a request without that Basic
    Authorization header gets 401 and ``WWW-Authenticate: Basic`` (it is still recorded).
    """

    def __init__(self, base: Path, auth: tuple[str, str] | None = None) -> None:
        self.base = base
        self.auth = auth
        self.indexes: list[Index] = []
        self.requests: list[tuple[str, str]] = []  # (path, Authorization header)
        # File name -> faults served one per request, in order, then the real file:
        # "500", "404", "reset" (close with no answer), "truncate" (half the promised
        # body), "wrong" (right length, wrong bytes), "slow" (stall self.stall seconds).
        self.faults: dict[str, list[str]] = {}
        self.stall = 5.0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output quiet
                pass

            def do_GET(self, head: bool = False):
                header = self.headers.get("Authorization", "")
                server.requests.append((self.path, header))
                if not server.authorized(header):
                    server.refuse(self, head)
                    return
                code, body, ctype = server.answer(urllib.parse.unquote(self.path))
                reply(self, code, body, ctype, server.faults, server.stall, head)

            def do_HEAD(self):
                self.do_GET(head=True)

        class Quiet(http.server.ThreadingHTTPServer):
            # uv opens many connections at once; the default backlog of 5 overflowed
            # (the kernel dropped SYNs) and stalled resolutions by 0.2 to 1.6 s
            request_queue_size = 128

            def handle_error(self, request, client_address):  # a client that hung up
                pass

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def expected_header(self) -> str | None:
        """The Authorization header a request must carry (None: a public index)."""
        if self.auth is None:
            return None
        return "Basic " + base64.b64encode(":".join(self.auth).encode()).decode()

    def authorized(self, header: str) -> bool:
        return self.auth is None or header == self.expected_header()

    def refuse(self, handler: http.server.BaseHTTPRequestHandler, head: bool) -> None:
        body = b"authentication required"
        handler.send_response(401)
        handler.send_header("WWW-Authenticate", 'Basic realm="lockkit-tests"')
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head:
            handler.wfile.write(body)

    def index(self, prefix: str, hashes: bool = True) -> Index:
        idx = Index(self.base / prefix.strip("/").replace("/", "_"), prefix.rstrip("/"), hashes)
        idx.root.mkdir(parents=True, exist_ok=True)
        self.indexes.append(idx)
        return idx

    def answer(self, path: str) -> tuple[int, bytes, str]:
        path = path.split("?")[0]
        for idx in self.indexes:
            if not path.startswith(idx.prefix + "/"):
                continue
            rest = path[len(idx.prefix) + 1 :].strip("/").split("/")
            project = _norm(rest[0]) if rest[0] else ""
            if project in idx.status:
                return idx.status[project], b"denied", "text/plain"
            folder = idx.root / project
            if len(rest) == 1 and project and folder.is_dir():
                return 200, self._page(idx, folder), "text/html"
            if len(rest) == 2 and (folder / rest[1]).is_file():
                return 200, (folder / rest[1]).read_bytes(), "application/octet-stream"
        return 404, b"not found", "text/plain"

    def _page(self, idx: Index, folder: Path) -> bytes:
        links = []
        for f in sorted(folder.iterdir()):
            frag = f"#sha256={hashlib.sha256(f.read_bytes()).hexdigest()}" if idx.hashes else ""
            links.append(f'<a href="{idx.prefix}/{folder.name}/{f.name}{frag}">{f.name}</a><br/>')
        return ("<!DOCTYPE html><html><body>" + "\n".join(links) + "</body></html>").encode()

    def __enter__(self) -> IndexServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
