"""The README's quick start, run line for line as a user types it, over 127.0.0.1."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parents[2] / "README.md"
BLOCK = re.compile(r"<!-- quickstart:begin -->\n```console\n(.*?)```\n<!-- quickstart:end -->",
                   re.S)


def quickstart() -> list[str]:
    (block,) = BLOCK.findall(README.read_text(encoding="utf-8"))
    return block.splitlines()


def test_the_quick_start_is_short_and_starts_from_an_empty_folder():
    lines = quickstart()
    assert len(lines) < 20 and lines[0].startswith("mkdir ")
    assert [ln.split()[1] for ln in lines if ln.startswith("lockkit ")] == \
        ["compile", "wheelhouse", "verify"]


def test_the_quick_start_runs_as_written(tmp_path, torch_index):
    """Each line as written; the only addition is the loopback indexes' flags on each
    lockkit command (what a user's own index or mirror would need)."""
    flags = f" --index-url {torch_index.url}/simple" + "".join(
        f" --mirror {k}={v}" for k, v in torch_index.pt.mirrors().items())
    script = "\n".join(ln + flags if ln.startswith("lockkit ") else ln for ln in quickstart())
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "LOCKKIT_NO_TOOLS")}
    env["LOCKKIT_NO_TOOLS"] = "1"  # lockkit's own dependencies are not on the loopback index
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    try:
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=1200)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        app = tmp_path / "my-app"
        assert (app / "locks" / "pylock.linux-cpu.toml").is_file()
        assert (app / "wheelhouse" / "linux-cpu" / "manifest.json").is_file()
        assert "verify linux-cpu: passed" in run.stdout
    finally:
        shutil.rmtree(tmp_path / "my-app", ignore_errors=True)
