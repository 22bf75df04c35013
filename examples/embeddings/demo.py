"""Run lockkit's main job on this example: compile -> wheelhouse -> verify, for linux-cpu.

    python examples/embeddings/demo.py [--direct]

By default the PyTorch CPU index is reached through a loopback mirror: pip fetches the
one torch wheel the example pins (from the PyTorch CPU index, or wherever this machine's
pip is configured to find it), the script serves it on 127.0.0.1 as a PEP 503 index, and
lockkit is told ``--mirror`` for each of the index's two hosts — exactly how an air-gapped
site points lockkit at its own mirror. The mirror is laid out as the official index is:
the page ``/whl/cpu/torch/`` on download.pytorch.org links the wheel on
download-r2.pytorch.org as ``https://download-r2.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-...``,
so the lock records the URLs that exist on the real index. Everything else comes from the
default index. ``--direct`` skips the mirror and uses the PyTorch index itself.

The steps are lockkit's own commands, printed before they run; verify installs from the
wheelhouse with no network and writes its dossier under ``.lockkit/reports/``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import http.server
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
OFFICIAL = "https://download.pytorch.org"
R2 = "https://download-r2.pytorch.org"  # where the official index links torch wheels
TORCH = "torch==2.13.0+cpu"


def lockkit(*args: str) -> None:
    argv = [sys.executable, "-m", "lockkit", *args]
    print("$ lockkit " + " ".join(args), flush=True)
    code = subprocess.run(argv).returncode
    if code != 0:
        sys.exit(code)


def mirror(root: Path) -> Path:
    """A static copy of the two hosts under ``<root>/main`` and ``<root>/r2``, as the real
    index's page generator (pytorch/test-infra ``s3_management/manage_v2.py``) lays them out."""
    files = root / "r2" / "whl" / "cpu"
    page = root / "main" / "whl" / "cpu" / "torch"
    files.mkdir(parents=True)
    page.mkdir(parents=True)
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
         ":all:", "--retries", "1", "--timeout", "15", "--extra-index-url", f"{OFFICIAL}/whl/cpu",
         TORCH, "-d", str(files)])
    wheels = sorted(files.glob("torch-*.whl"))
    if fetched.returncode != 0 or not wheels:
        sys.exit(f"demo: pip could not fetch {TORCH}; use --direct where the PyTorch index "
                 "is reachable, or configure pip to find the wheel")
    links = []
    for w in wheels:
        key = "whl/cpu/" + w.name.replace("+", "%2B")
        sha = hashlib.sha256(w.read_bytes()).hexdigest()
        links.append(f'    <a href="{R2}/{key}#sha256={sha}">{w.name}</a><br/>')
    (page / "index.html").write_text("\n".join(
        ["<!DOCTYPE html>", "<html>", "  <body>", "    <h1>Links for torch</h1>", *links,
         "  </body>", "</html>", "<!--TIMESTAMP 1764000000-->"]))
    return root


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # lockkit's own output is the demo
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--direct", action="store_true",
                        help="use the PyTorch index itself instead of a loopback mirror")
    args = parser.parse_args()
    project = ["--project", str(HERE)]
    with tempfile.TemporaryDirectory(prefix="lockkit-demo-") as tmp:
        extra: list[str] = []
        server = None
        if not args.direct:
            root = mirror(Path(tmp))
            handler = functools.partial(_Quiet, directory=str(root))
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            here = f"http://127.0.0.1:{server.server_address[1]}"
            extra = ["--mirror", f"{OFFICIAL}={here}/main", "--mirror", f"{R2}={here}/r2"]
        try:
            lockkit("compile", *project, "--platform", "linux-cpu", *extra)
            lockkit("wheelhouse", "build", *project, "--platform", "linux-cpu", *extra)
        finally:
            if server:
                server.shutdown()
    lockkit("verify", *project, "--platform", "linux-cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
