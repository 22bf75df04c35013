"""Regenerate reference/ with the interpreter that runs this script, then print
the [verify.embedding.fingerprints] table to paste into lockkit.toml.

    /path/to/venv/bin/python make_reference.py

Run it only on purpose, in the environment that defines "right" (the committed
reference was made with torch 2.13.0+cpu, see reference/run.json): a new
reference is a new identity, and every later rebuild is judged against it.
Standard library only here; embed.py itself needs torch and numpy.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FINGERPRINTED = ("embed.py", "model/weights.npz", "data/sample.jsonl",
                 "reference/embeddings.npy", "reference/ids.json")


def sha256(path: Path) -> str:
    """The same digest lockkit checks before running the application."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    subprocess.run([sys.executable, "embed.py", "--out", "reference"], cwd=HERE, check=True)
    print("[verify.embedding.fingerprints]")
    for name in FINGERPRINTED:
        print(f'"{name}" = "{sha256(HERE / name)}"')


if __name__ == "__main__":
    main()
