"""A loopback replica of the PyTorch wheel index, rendered as the real generator renders it.

Why: lockkit has to cope with download.pytorch.org as it is, not as a PEP 503 textbook
says. Its pages come from pytorch/test-infra ``s3_management/manage_v2.py``; this module
reproduces that script's output byte for byte (``to_simple_package_html``,
``to_simple_packages_html``) and the bucket's behaviour around it:

* a ``+`` in a file name is ``%2B`` in hrefs (``sanitize_key``), ``+`` in the link text;
* torch-family pages (``PT_R2_PACKAGES_PROD``) link absolutely to download-r2.pytorch.org,
  every other page root-relative (``/whl/...``): a client has to map hosts to mirrors;
* files directly under ``whl/`` are listed on every variant's page (``is_obj_at_root``);
* ``PACKAGE_LINKS_ALLOW_LIST`` pages (numpy, nvidia-*, ...) are copies of the default
  index's page, whose links are absolute URLs on another host (here ``<url>/ext``);
* nightly pages (and some stable ones) carry no ``#sha256=`` fragment;
* the bucket has no public listing: a missing key, a page path without its trailing slash
  or a missing project answers 403 with S3's XML; S3 reads a literal ``+`` as a space.

``<url>/pt`` stands for https://download.pytorch.org, ``<url>/r2`` for the R2 host (same
bucket), and ``<url>/rw/<variant>/simple`` is a link-rewriting proxy (as Artifactory, Nexus
or devpi are) whose hrefs are relative and point at the proxy itself.

The root listing (``whl/``), as of pytorch/test-infra commit 61a77570f454 (2026-08-21):
``upload_pep503_htmls`` renders every dir of the ``whl`` prefix, the prefix itself
included when files sit directly in it (``S3Index.subdirs``; the real bucket has such
files, and :func:`tests.support.project.fill` puts some there). The prefix's
``gen_file_list`` walks every accepted folder, so ``whl/`` lists the *projects* of every
variant (``to_simple_packages_html``: ``<a href="torch/">torch</a>``, no ``cu126/`` links:
the index has no listing of its folders), and ``whl/torch/`` links every variant's torch
wheel under its folder (``https://download-r2.pytorch.org/whl/cu132/torch-...``). The
replica renders both from the same code as the variant pages. How it differs from the
real thing: pages are rendered on request, not uploaded (an ``index.html`` key is served
the way CloudFront serves it), ``<!--TIMESTAMP n-->`` is fixed per run, and the bucket's
allow lists are not applied to what a test stores.

The real bucket answers HTML whatever the ``Accept`` header asks. The rewriting proxy
also speaks PEP 691 (``application/vnd.pypi.simple.v1+json``, API version 1.1 with PEP
700's ``versions`` and ``size``) when the request prefers it, as devpi, Artifactory and
Nexus do; ``<url>/rw/simple/`` is its copy of the ``whl/`` root.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import posixpath
import re
import shutil
import threading
import time
import urllib.parse
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

from tests.support.index_server import build_wheel, reply

OFFICIAL = "https://download.pytorch.org"
R2 = "https://download-r2.pytorch.org"

# manage_v2.py's sets, verbatim (PT_R2_PACKAGES, used for nightly, is the same set).
PT_R2_PACKAGES_PROD = frozenset(
    "torch torchaudio torchvision fbgemm_gpu fbgemm_gpu_genai triton triton_rocm triton_xpu"
    " pytorch_triton pytorch_triton_rocm pytorch_triton_xpu".split())
PACKAGE_LINKS_ALLOW_LIST = frozenset(x.replace("-", "_") for x in (
    "filelock sympy mpmath pillow networkx numpy fsspec typing-extensions spmd-types cuda-bindings"
    " cuda-toolkit cuda-pathfinder cuda-python dpcpp-cpp-rt intel-cmplr-lib-rt intel-cmplr-lib-ur"
    " intel-cmplr-lic-rt intel-opencl-rt intel-sycl-rt intel-openmp tcmlib umf intel-pti tbb"
    " oneccl-devel oneccl impi-rt onemkl-sycl-blas onemkl-sycl-dft onemkl-sycl-lapack"
    " onemkl-sycl-sparse onemkl-sycl-rng onemkl-license mkl pyelftools pyzes rocm rocm-sdk-core"
    " rocm-sdk-libraries").split() + ["nvidia-" + x for x in (
    "ml-py cuda-nvrtc-cu12 cuda-nvrtc cuda-runtime-cu12 cuda-runtime cuda-cupti-cu12 cuda-cupti"
    " cuda-cccl-cu12 cuda-cccl cudnn-cu12 cudnn-cu13 cublas-cu12 cublas cufft-cu12 cufft"
    " curand-cu12 curand cusolver-cu12 cusolver cusparse-cu12 cusparse cusparselt-cu12"
    " cusparselt-cu13 nccl-cu12 nccl-cu13 nvshmem-cu12 nvshmem-cu13 nvtx-cu12 nvtx nvjitlink-cu12"
    " nvjitlink cufile-cu12 cufile").split()] + ["rocm-sdk-device-gfx" + x for x in (
    "1010 1011 1012 1030 1031 1032 1033 1034 1035 1036 1100 1101 1102 1103 1150 1151 1152 1153"
    " 1200 1201 1250 908 90a 942 950").split()])
ACCEPTED_SUBDIR_PATTERNS = (r"cu[0-9]+", r"rocm[0-9]+\.[0-9]+", "cpu", "xpu")
NOT_ACCEPTED_SUBDIR_PATTERNS = ("cpu-cxx11-abi", "cpu_pypi_pkg", "cu[0-9]+_full",
                                "cu[0-9]+_pypi_cudnn")
ACCEPTED_FILE_EXTENSIONS = ("whl", "zip", "tar.gz", "json")
ACCESS_DENIED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                 b"<Message>Access Denied</Message><RequestId>4Q9F1N8WZ2K7XJ3M</RequestId>"
                 b"<HostId>loopback-replica-of-the-pytorch-bucket</HostId></Error>")
NOT_FOUND = (404, b"Not Found", "text/plain")
UPLOADED = "2024-10-29T17:03:22Z"  # _format_last_modified: RFC 3339, "Z"
Answer = tuple[int, bytes, str]


@dataclass(frozen=True)
class _Obj:
    """One stored file, as manage_v2's S3Object sees it."""

    key: str  # the real key, with a literal "+" (S3Object.orig_key)
    path: Path  # its bytes; "<path>.metadata" holds the PEP 658 file when pep658 is set
    checksum: str  # sha256 hex of the file
    pep658: str  # sha256 hex of the .metadata file, "" when there is none
    last_modified: str | None

    @property
    def url_key(self) -> str:  # S3Object.key, from from_S3.sanitize_key
        return self.key.replace("+", "%2B")

    def read(self, suffix: str) -> bytes | None:
        """The file (suffix "") or its .metadata (suffix ".metadata"); None if absent."""
        ok = suffix == "" or (suffix == ".metadata" and bool(self.pep658))
        return Path(f"{self.path}{suffix}").read_bytes() if ok else None

    def meta_attrs(self) -> str:  # pep714 renamed the attribute: the generator writes both
        sha = f'"sha256={self.pep658}"'
        return f" data-dist-info-metadata={sha} data-core-metadata={sha}" if self.pep658 else ""


def basic(user: str, password: str) -> str:
    """The ``Authorization`` header of HTTP Basic for *user* and *password*."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _pkg(name: str) -> str:
    """A project's identity as the generator compares it: the wheel-file spelling."""
    return name.lower().replace("-", "_")


def _obj_pkg(key: str) -> str:  # S3Index.obj_to_package_name
    return posixpath.basename(key).split("-", 1)[0].lower()


def _pep503(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _prefix(subdir: str) -> str:
    """The manage_v2 PREFIX whose S3Index renders *subdir*."""
    nested = ("whl/nightly", "whl/test")
    return next((p for p in nested if subdir == p or subdir.startswith(p + "/")), "whl")


def _accepted(prefix: str, dirname: str) -> bool:  # fetch_object_names' filter (re.match)
    def hit(patterns: tuple[str, ...]) -> bool:
        return any(re.match(f"{prefix}/{p}", dirname) for p in patterns)

    ok = dirname == prefix or hit(ACCEPTED_SUBDIR_PATTERNS)
    return ok and not hit(NOT_ACCEPTED_SUBDIR_PATTERNS)


def _valid(subdir: str) -> bool:
    """A dir the generator indexes: a prefix, or one accepted level below it (whl/cu126)."""
    prefix = _prefix(subdir)
    return ((subdir == "whl" or subdir.startswith("whl/")) and _accepted(prefix, subdir)
            and subdir.count("/") <= prefix.count("/") + 1)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _wheel_metadata(wheel: Path) -> bytes:
    """The wheel's ``<name>-<version>.dist-info/METADATA``: the PEP 658 file's bytes."""
    want = "{}-{}.dist-info/METADATA".format(*wheel.name.split("-")[:2])
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        return zf.read(want if want in names else names[0])


class PyTorchIndex:
    """The bucket behind download.pytorch.org, its R2 twin, another host and a proxy."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.requests: list[str] = []
        self.authorizations: list[tuple[str, str]] = []  # (path, Authorization header)
        # (user, password): every host then answers 401 to a request without that Basic
        # header, as a private mirror does (index_server.IndexServer's auth)
        self.auth: tuple[str, str] | None = None
        # Decoded file name -> faults served one per request, in order, then the real file
        # (as index_server.IndexServer.faults): "500", "404", "reset", "truncate", "wrong", "slow".
        self.faults: dict[str, list[str]] = {}
        self.stall = 5.0
        self.timestamp = int(time.time())  # the <!--TIMESTAMP n--> trailer, fixed per run
        self._objects: dict[str, _Obj] = {}  # bucket key -> object
        self._copied: dict[str, list[_Obj]] = {}  # links-list package -> files on the ext host
        self._nohash: set[tuple[str, str]] = set()  # (subdir, package)
        self._builds = count()
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self, head: bool = False) -> None:
                index.requests.append(self.path)
                header = self.headers.get("Authorization", "")
                index.authorizations.append((self.path, header))
                if index.auth is not None and header != basic(*index.auth):
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="lockkit-tests"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                code, body, ctype = index._answer(self.path, self.headers.get("Accept", ""))
                reply(self, code, body, ctype, index.faults, index.stall, head)

            def do_HEAD(self) -> None:
                self.do_GET(head=True)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # uv's bursts overflow the default backlog of 5

            def handle_error(self, request: Any, client_address: Any) -> None:  # client hung up
                pass

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.main, self.r2, self.ext = self.url + "/pt", self.url + "/r2", self.url + "/ext"

    def __enter__(self) -> PyTorchIndex:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def mirrors(self) -> dict[str, str]:
        """Where each official host is served here: what a client's host mapping needs."""
        return {OFFICIAL: self.main, R2: self.r2}

    def rewriting(self, variant: str) -> str:
        return f"{self.url}/rw/{variant}/simple"

    # -- filling the bucket -----------------------------------------------------------

    def add(self, variant: str | None, name: str, version: str, *,
            requires: list[str] | None = None, tag: str = "py3-none-any", metadata: bool = True,
            upload_time: str | None = UPLOADED) -> Path:
        """Build a tiny real wheel, store it as ``whl/<variant>/<file>`` (None: ``whl/<file>``)."""
        built = self.base / "built" / str(next(self._builds))
        wheel = build_wheel(built, name, version, requires=requires, tag=tag)
        self.put(variant, wheel, metadata=metadata, upload_time=upload_time)
        return wheel

    def put(self, variant: str | None, wheel: Path, *, metadata: bool = True,
            upload_time: str | None = UPLOADED) -> Path:
        """Store an existing wheel (hard-linked when possible); returns the stored file."""
        subdir = "whl" if variant is None else "whl/" + variant.strip("/")
        if not _valid(subdir):
            raise ValueError(f"manage_v2.py does not index {subdir!r}")
        key = f"{subdir}/{wheel.name}"
        obj = self._store(self.base / "bucket" / key, key, wheel, metadata, upload_time)
        self._objects[key] = obj
        return obj.path

    def copy_page(self, name: str, wheel: Path) -> None:
        """List *wheel*, on the ext host, on every variant's copied page for links-list *name*."""
        if _pkg(name) not in PACKAGE_LINKS_ALLOW_LIST:
            raise ValueError(f"{name!r} is not in manage_v2's PACKAGE_LINKS_ALLOW_LIST")
        h = _sha256(wheel)
        key = f"packages/{h[:2]}/{h[2:4]}/{wheel.name}"
        obj = self._store(self.base / "ext" / key, key, wheel, True, None)
        self._copied.setdefault(_pkg(name), []).append(obj)

    def without_hashes(self, variant: str, name: str) -> None:
        """Render that page with no ``#sha256=`` fragments, as nightly and some stable are."""
        self._nohash.add(("whl/" + variant.strip("/"), _pkg(name)))

    def _store(self, dest: Path, key: str, wheel: Path, metadata: bool,
               upload_time: str | None) -> _Obj:
        dest.parent.mkdir(parents=True, exist_ok=True)
        meta = Path(f"{dest}.metadata")
        for stale in (dest, meta):
            stale.unlink(missing_ok=True)
        try:
            os.link(wheel, dest)
        except OSError:
            shutil.copyfile(wheel, dest)
        if metadata:
            meta.write_bytes(_wheel_metadata(wheel))
        return _Obj(key, dest, _sha256(dest), _sha256(meta) if metadata else "", upload_time)

    # -- manage_v2.py's S3Index --------------------------------------------------------

    def _files(self, subdir: str, pkg: str | None = None) -> Iterator[_Obj]:
        """``gen_file_list``: the subdir's files plus every file at its prefix's root."""
        prefix = _prefix(subdir)
        for obj in list(self._objects.values()):
            dirname = posixpath.dirname(obj.key)
            if (obj.key.startswith(prefix + "/") and _accepted(prefix, dirname)
                    and obj.key.endswith(ACCEPTED_FILE_EXTENSIONS)
                    and pkg in (None, _obj_pkg(obj.key))
                    and (dirname == prefix or obj.key.startswith(subdir + "/"))):
                yield obj

    def _own(self, subdir: str) -> bool:
        """Whether files sit in *subdir* itself: the generator only walks such dirs."""
        return any(posixpath.dirname(o.key) == subdir for o in self._files(subdir))

    def _entries(self, subdir: str, pkg: str) -> list[_Obj] | None:
        """The files a project page lists, or None when the bucket has no such page."""
        if pkg in PACKAGE_LINKS_ALLOW_LIST:  # a copied page, never one built from wheels
            return self._copied.get(pkg) if _valid(subdir) else None
        if not self._own(subdir):
            return None
        return sorted(self._files(subdir, pkg), key=lambda o: o.url_key) or None  # S3Object.__lt__

    def _packages(self, subdir: str) -> list[str]:
        """A variant root's names: from wheel files, plus those with only an index.html."""
        return sorted({_obj_pkg(o.key) for o in self._files(subdir)} | set(self._copied))

    def page(self, variant: str, name: str) -> str:
        """The HTML the real index serves at ``/whl/<variant>/<name>/``; KeyError if none."""
        html = self._project_page("whl/" + variant.strip("/"), _pkg(name))
        if html is None:
            raise KeyError(f"no page for {name!r} in {variant!r}")
        return html

    def _project_page(self, subdir: str, pkg: str) -> str | None:
        entries = self._entries(subdir, pkg)
        if entries is None or pkg in PACKAGE_LINKS_ALLOW_LIST:
            return None if entries is None else self._copied_page(pkg, entries)
        # to_simple_package_html(use_cloudfront_for_non_foundation=False), line for line
        out = ["<!DOCTYPE html>", "<html>", "  <body>"]
        out.append(f"    <h1>Links for {pkg.replace('_', '-')}</h1>")
        r2 = subdir.startswith("whl/nightly") or not subdir.startswith("whl/test")
        base_url = R2 if pkg in PT_R2_PACKAGES_PROD and r2 else ""
        nightly = any(o.key.startswith("whl/nightly") for o in entries)
        for obj in entries:
            ok = obj.checksum and not nightly and (subdir, pkg) not in self._nohash
            attributes = obj.meta_attrs()
            if obj.last_modified:
                attributes += f' data-upload-time="{obj.last_modified}"'
            href = f"{base_url}/{obj.url_key}" + (f"#sha256={obj.checksum}" if ok else "")
            text = posixpath.basename(obj.url_key).replace("%2B", "+")
            out.append(f'    <a href="{href}"{attributes}>{text}</a><br/>')
        return "\n".join(out + ["  </body>", "</html>", f"<!--TIMESTAMP {self.timestamp}-->"])

    def _copied_page(self, pkg: str, entries: list[_Obj]) -> str:
        """The default index's own page for *pkg*, as update_dependencies.py copies it in."""
        name = _pep503(pkg)
        out = ["<!DOCTYPE html>", "<html>", "  <head>",
               '    <meta name="pypi:repository-version" content="1.1">',
               f"    <title>Links for {name}</title>", "  </head>", "  <body>",
               f"    <h1>Links for {name}</h1>"]
        for obj in entries:
            href = f"{self.ext}/{urllib.parse.quote(obj.key)}#sha256={obj.checksum}"
            out.append(f'    <a href="{href}"{obj.meta_attrs()}>{obj.path.name}</a><br />')
        return "\n".join(out + ["  </body>", "</html>", f"<!--SERIAL {self.timestamp}-->"])

    def _root_page(self, subdir: str) -> str:  # to_simple_packages_html
        out = ["<!DOCTYPE html>", "<html>", "  <body>"]
        for pkg in self._packages(subdir):
            href, text = pkg.lower().replace("_", "-"), pkg.replace("_", "-")
            out.append(f'    <a href="{href}/">{text}</a><br/>')
        return "\n".join(out + ["  </body>", "</html>", f"<!--TIMESTAMP {self.timestamp}-->"])

    # -- HTTP ---------------------------------------------------------------------------

    def _answer(self, raw: str, accept: str = "") -> Answer:
        path = raw.split("?", 1)[0]
        if path.startswith(("/pt/", "/r2/")):
            # S3 decodes "+" in a path as a space (why sanitize_key exists); R2 does not.
            unquote = urllib.parse.unquote_plus if path[1:3] == "pt" else urllib.parse.unquote
            return self._bucket(unquote(path[4:]))
        if path.startswith("/ext/"):
            body = _lookup(self._ext(), urllib.parse.unquote(path[5:]), lambda o: o.key)
            return NOT_FOUND if body is None else (200, body, "application/octet-stream")
        if path.startswith("/rw/"):
            return self._rewriting(urllib.parse.unquote(path[4:]), _wants_json(accept))
        return NOT_FOUND

    def _ext(self) -> list[_Obj]:
        return [o for objs in self._copied.values() for o in objs]

    def _bucket(self, key: str) -> Answer:
        """S3 behind CloudFront: ``<dir>/`` serves ``<dir>/index.html``, the rest are keys."""
        key = key.removesuffix("index.html") if key.endswith("/index.html") else key
        if key.endswith("/"):
            directory, html = key.rstrip("/"), None
            if _valid(directory):
                html = self._root_page(directory) if self._copied or self._own(directory) else None
            elif "/" in directory:
                subdir, project = directory.rsplit("/", 1)
                if project == project.lower().replace("_", "-"):  # S3 keys are case-sensitive
                    html = self._project_page(subdir, _pkg(project))
            if html is not None:
                return 200, html.encode(), "text/html"
        elif (body := _lookup(self._objects.values(), key, lambda o: o.key)) is not None:
            return 200, body, "binary/octet-stream"
        return 403, ACCESS_DENIED, "application/xml"

    def _rewriting(self, rest: str, as_json: bool = False) -> Answer:
        """A proxy: the same files, every href relative and content-addressed on the proxy;
        PEP 691 JSON instead of HTML when *as_json* (the request preferred it)."""
        m = re.search(r"(?:^|/)packages/[0-9a-f]{2}/[0-9a-f]{2}/([0-9a-f]{64})/([^/]+)$", rest)
        if m:  # found by hash anywhere under /rw: a page read without its slash still works
            objs = [o for o in [*self._objects.values(), *self._ext()] if o.checksum == m[1]]
            body = _lookup(objs, m[2], lambda o: o.path.name)
            return NOT_FOUND if body is None else (200, body, "application/octet-stream")
        m = re.fullmatch(r"(?:(.+?)/)?simple/([^/]*)/?", rest)
        subdir = ("whl/" + m[1] if m[1] else "whl") if m else ""
        if not m or not _valid(subdir) or not (self._copied or self._own(subdir)):
            return NOT_FOUND
        if not (project := _pep503(m[2])):
            names = [_pep503(p) for p in self._packages(subdir)]
            if as_json:
                return _pep691({"projects": [{"name": name} for name in names]})
            out = ["<!DOCTYPE html>", "<html>", "<body>"]
            out += [f'<a href="{name}/">{name}</a><br/>' for name in names]
            return 200, "\n".join(out + ["</body>", "</html>"]).encode(), "text/html"
        found = [self._entries(subdir, p) for p in self._packages(subdir) if _pep503(p) == project]
        entries = next((e for e in found if e), None)
        if entries is None:
            return NOT_FOUND
        hrefs = [f"../../packages/{o.checksum[:2]}/{o.checksum[2:4]}/{o.checksum}/"
                 f"{urllib.parse.quote(o.path.name)}" for o in entries]
        if as_json:
            return _pep691_files(project, entries, hrefs)
        out = ["<!DOCTYPE html>", "<html>", "<head>", f"<title>Links for {project}</title>",
               "</head>", "<body>", f"<h1>Links for {project}</h1>"]
        for o, href in zip(entries, hrefs, strict=True):
            out.append(f'<a href="{href}#sha256={o.checksum}"{o.meta_attrs()}>{o.path.name}'
                       "</a><br/>")
        return 200, "\n".join(out + ["</body>", "</html>"]).encode(), "text/html"


def _lookup(objs: Iterable[_Obj], wanted: str, name: Callable[[_Obj], str]) -> bytes | None:
    """The bytes of the object *wanted* names, or of its ``.metadata``; None if neither."""
    for obj in objs:
        if wanted.startswith(name(obj)) and (body := obj.read(wanted[len(name(obj)):])) is not None:
            return body
    return None


PEP691 = "application/vnd.pypi.simple.v1+json"


def _wants_json(accept: str) -> bool:
    """Whether an ``Accept`` header prefers PEP 691's JSON to HTML (its q values compared;
    a tie goes to JSON, as PEP 691 lets the server choose)."""
    quality: dict[str, float] = {}
    for item in accept.split(","):
        kind, *params = (p.strip() for p in item.split(";"))
        q = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            quality[kind.lower()] = float(q)
        except ValueError:
            quality[kind.lower()] = 0.0
    html = max(quality.get(k, 0.0) for k in ("text/html", "application/vnd.pypi.simple.v1+html",
                                            "*/*"))
    return quality.get(PEP691, 0.0) > 0 and quality[PEP691] >= html


def _pep691(payload: dict[str, Any]) -> Answer:
    import json

    body = {"meta": {"api-version": "1.1"}, **payload}
    return 200, json.dumps(body).encode(), PEP691


def _pep691_files(project: str, entries: list[_Obj], hrefs: list[str]) -> Answer:
    """A PEP 691 project page (1.1: PEP 700's ``versions`` and ``size`` too)."""
    files = [{"filename": o.path.name, "url": href, "hashes": {"sha256": o.checksum},
              "size": o.path.stat().st_size,
              "core-metadata": {"sha256": o.pep658} if o.pep658 else False}
             for o, href in zip(entries, hrefs, strict=True)]
    versions = sorted({o.path.name.split("-")[1] for o in entries})
    return _pep691({"name": project, "versions": versions, "files": files})
