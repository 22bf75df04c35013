"""A hang named by its layer: real torch, a DataLoader whose dataset never returns, the
stacks faulthandler prints when the group gets SIGABRT at the timeout."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from lockkit._internal import proc
from lockkit.probes import hang

posix_only = pytest.mark.skipif(os.name == "nt", reason="process groups and SIGABRT")

STUCK = '''\
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Stuck(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        time.sleep(3600)  # a network filesystem that never answers


for batch in DataLoader(Stuck(), num_workers={workers}):
    torch.ones(2) @ torch.ones(2)
'''

TRANSFER = '''\
import time


class Batch:
    pass


batch = Batch()
batch.to = time.sleep  # a C function, as torch's Tensor.to is: no Python frame of its own
batch.to(3600)
'''


def _alive(marker: str) -> list[int]:
    """Processes whose command line holds *marker* (this test's unique folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@posix_only
@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataset_that_never_returns_is_a_data_loading_hang(torch_venv, tmp_path, workers):
    script = tmp_path / "train.py"
    script.write_text(STUCK.format(workers=workers))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONFAULTHANDLER": "1"}
    timeout = 20.0  # import torch and starting two workers take a few seconds here
    start = time.monotonic()
    result = proc.call([str(torch_venv), str(script)], timeout=timeout, env=env,
                       cwd=tmp_path, stacks_on_timeout=True)
    elapsed = time.monotonic() - start
    assert result.timed_out and elapsed < timeout + 5
    report = hang.explain(result.stderr, tmp_path)
    assert report is not None and report.phase == "data loading", result.stderr[-2000:]
    assert report.frame == "train.py:12 in __getitem__"
    assert ("DataLoader worker" in report.detail) == (workers > 0)
    assert "most recent call first" in report.stacks
    time.sleep(0.5)
    assert _alive(str(tmp_path)) == []  # the workers went with the group


@posix_only
def test_a_transfer_that_never_completes_is_named(tmp_path):
    script = tmp_path / "move.py"
    script.write_text(TRANSFER)
    result = proc.call([sys.executable, str(script)], timeout=2, cwd=tmp_path,
                       env={"PATH": os.environ.get("PATH", ""), "PYTHONFAULTHANDLER": "1"},
                       stacks_on_timeout=True)
    report = hang.explain(result.stderr, tmp_path)
    assert report is not None, result.stderr
    assert (report.phase, report.frame) == ("host-device transfer", "move.py:10 in <module>")
    assert "batch.to(3600)" in report.detail


def test_parse_reads_every_process_and_thread():
    text = (
        "Fatal Python error: Aborted\n\n"
        "Thread 0x00007f01 (most recent call first):\n"
        '  File "/p/a.py", line 3 in worker\n'
        '  File "/usr/lib/python3.11/threading.py", line 982 in run\n\n'
        "Current thread 0x00007f02 (most recent call first):\n"
        '  File "/p/a.py", line 9 in <module>\n'
        "Fatal Python error: Aborted\n\n"
        "Current thread 0x00007f03 (most recent call first):\n"
        '  File "/site-packages/torch/utils/data/_utils/worker.py", line 309 in _worker_loop\n')
    dumps = hang.parse(text)
    assert [len(d) for d in dumps] == [2, 1]
    assert dumps[0][1].current and dumps[0][0].frames[0].function == "worker"
    report = hang.explain(text, Path("/p"))
    assert report is not None and report.phase == "data loading"
    assert hang.explain("Traceback (most recent call last):\n  ValueError\n") is None
    assert hang.HangReport.from_dict(report.to_dict()) == report


@posix_only
def test_verify_names_a_data_loading_hang_in_the_application(copy_of):
    """End to end on the real CPU torch: an application whose dataset never returns fails
    the application step within its timeout plus a few seconds, the dossier names the
    layer and the frame, dossier.md leads with it, and no process is left behind."""
    import json

    from tests.support.project import lockkit

    project = copy_of()
    (project / "stuck.py").write_text(STUCK.format(workers=2))
    text = (project / "lockkit.toml").read_text()
    head, mirrors = text[:text.index("[verify.embedding]")], text[text.index("\n[mirrors]"):]
    (project / "lockkit.toml").write_text(
        head + '[verify.application]\ncommand = ["{python}", "stuck.py"]\ntimeout = 20\n'
        '[verify.resume]\nnone = "this check trains nothing"\n' + mirrors)
    reports = project / "report"
    run = lockkit("verify", "--project", str(project), "--platform", "linux-cpu",
                  "--report-dir", str(reports), network=False)
    doc = json.loads((reports / "dossier.json").read_text())
    app = next(s for s in doc["steps"] if s["name"] == "application")
    assert run.returncode == 1 and app["status"] == "failed", doc["first_error"]
    assert app["duration_s"] < 20 + 8
    assert "timed out after 20s: stalled in data loading at stuck.py:12 in __getitem__" \
        in app["error"]
    assert doc["hang"]["step"] == "application" and doc["hang"]["phase"] == "data loading"
    assert "_worker_loop" in doc["hang"]["stacks"]
    md = (reports / "dossier.md").read_text()
    assert md.splitlines()[4].startswith("> **Stalled:** application: data loading at "
                                         "`stuck.py:12 in __getitem__`")
    time.sleep(0.5)
    assert _alive(str(project)) == []
