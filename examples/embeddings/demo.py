"""Run lockkit's main job on this example: compile -> wheelhouse -> verify, for linux-cpu.

    python examples/embeddings/demo.py [--direct]

By default the PyTorch CPU index is reached through a loopback mirror: pip fetches the
one torch wheel the example pins (from the PyTorch CPU index, or wherever this machine's
pip is configured to find it), the script serves it on 127.0.0.1 as a PEP 503 index, and
lockkit is told ``--mirror https://download.pytorch.org/whl=<loopback>`` — exactly how
an air-gapped site points lockkit at its own mirror. Everything else comes from the
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
OFFICIAL = "https://download.pytorch.org/whl"
TORCH = "torch==2.13.0+cpu"


def lockkit(*args: str) -> None:
    argv = [sys.executable, "-m", "lockkit", *args]
    print("$ lockkit " + " ".join(args), flush=True)
    code = subprocess.run(argv).returncode
    if code != 0:
        sys.exit(code)


def mirror(root: Path) -> Path:
    """A static PEP 503 tree, ``<root>/whl/cpu/torch/``, holding the pinned torch wheel."""
    folder = root / "whl" / "cpu" / "torch"
    folder.mkdir(parents=True)
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
         ":all:", "--retries", "1", "--timeout", "15", "--extra-index-url", f"{OFFICIAL}/cpu",
         TORCH, "-d", str(folder)])
    wheels = sorted(folder.glob("torch-*.whl"))
    if fetched.returncode != 0 or not wheels:
        sys.exit(f"demo: pip could not fetch {TORCH}; use --direct where the PyTorch index "
                 "is reachable, or configure pip to find the wheel")
    links = "".join(f'<a href="{w.name}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">'
                    f"{w.name}</a>\n" for w in wheels)
    (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
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
            extra = ["--mirror", f"{OFFICIAL}=http://127.0.0.1:{server.server_address[1]}/whl"]
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
