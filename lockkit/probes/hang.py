"""A hang named by its layer: read the stacks a timed-out command printed, say where it
stalled.

The rebuild procedure asks that when a check stalls — reading data, in a transfer, or in
one operation — the step and the first error are kept and the diagnosis is aimed at that
layer. When an application, resume or extension command passes its timeout, verify sends
its process group SIGABRT before killing it (:func:`lockkit._internal.proc.call` with
``stacks_on_timeout``); with ``PYTHONFAULTHANDLER=1`` in its environment, every Python
process of the group — DataLoader workers included, they inherit it — prints the stack of
each of its threads to stderr (CPython's ``faulthandler``: "Current thread 0x... (most
recent call first):" then ``File "...", line N in func`` lines). Nothing of the user's code
changes. This module parses those dumps and names:

- the phase: ``data loading`` (a ``torch/utils/data`` frame on any stack, e.g. a worker in
  ``_worker_loop`` or the main thread waiting for a batch), ``host-device transfer`` (the
  innermost project line calls ``.to(``, ``.cuda(``, ``.cpu(`` or ``copy_(``), or ``torch
  operation`` (the innermost frame inside torch), else ``unknown``;
- the innermost frame of the project's own code, as ``file:line in function``;
- the stacks themselves, kept for the dossier.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, cast

from lockkit.report.shapes import HangDoc, HangPhase

__all__ = ["Frame", "HangReport", "explain", "parse"]

_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+)(?: \[[^\]]*\])? \(most recent call "
                     r"first\):\s*$")
_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>\S+)\s*$')
_TRANSFER = re.compile(r"\.(to|cuda|cpu|pin_memory)\(|\bcopy_\(|non_blocking\s*=")
_MAX_STACKS = 20000  # characters of stacks kept in the dossier


@dataclass(frozen=True, kw_only=True)
class Frame:
    file: str
    line: int
    function: str

    def shown(self, root: Path | None = None) -> str:
        path = self.file
        if root is not None:
            try:
                path = PurePath(self.file).relative_to(root).as_posix()
            except ValueError:
                pass
        return f"{path}:{self.line} in {self.function}"

    @property
    def posix(self) -> str:
        return self.file.replace("\\", "/")


@dataclass(frozen=True, kw_only=True)
class _Thread:
    current: bool  # the thread that was running when the signal came
    frames: tuple[Frame, ...]  # innermost first, as faulthandler prints them


@dataclass(frozen=True, kw_only=True)
class HangReport:
    """Where a timed-out command stalled."""

    phase: HangPhase
    frame: str | None  # the project's innermost frame, "file:line in function"
    detail: str  # what the phase was read from
    stacks: str

    @property
    def summary(self) -> str:
        where = f" at {self.frame}" if self.frame else ""
        return f"stalled in {self.phase}{where}"

    def to_dict(self) -> HangDoc:
        return {"phase": self.phase, "frame": self.frame, "detail": self.detail,
                "stacks": self.stacks}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HangReport:
        # as the dossier wrote it, unchecked (as before the type)
        return cls(phase=cast(HangPhase, str(d.get("phase", "unknown"))), frame=d.get("frame"),
                   detail=str(d.get("detail", "")), stacks=str(d.get("stacks", "")))


def parse(text: str) -> list[list[_Thread]]:
    """Each faulthandler dump in *text* (one per process), as its threads."""
    dumps: list[list[_Thread]] = []
    threads: list[_Thread] | None = None
    frames: list[Frame] = []
    current = False

    def close() -> None:
        if threads is not None and frames:
            threads.append(_Thread(current=current, frames=tuple(frames)))

    for raw in text.splitlines():
        if raw.startswith("Fatal Python error"):
            close()
            frames = []
            threads = []
            dumps.append(threads)
            continue
        head = _THREAD.match(raw)
        if head:
            close()
            if threads is None:  # a dump without its header line
                threads = []
                dumps.append(threads)
            frames, current = [], head.group(1) == "Current thread"
            continue
        frame = _FRAME.match(raw)
        if frame and threads is not None:
            frames.append(Frame(file=frame["file"], line=int(frame["line"]),
                                function=frame["func"]))
    close()
    return [d for d in dumps if d]


def _in_project(frame: Frame, root: Path | None) -> bool:
    if root is None or frame.file.startswith("<"):
        return False
    try:
        PurePath(frame.file).relative_to(root)
    except ValueError:
        return False
    return True


def _is_data(frame: Frame) -> bool:
    return "/torch/utils/data/" in frame.posix


def _in_torch(frame: Frame) -> bool:
    return "/torch/" in frame.posix and "site-packages" in frame.posix


def explain(text: str, project_root: Path | None = None) -> HangReport | None:
    """The hang report for the stacks in *text*, or None when it holds no stack."""
    dumps = parse(text)
    if not dumps:
        return None
    root = project_root.resolve() if project_root is not None else None
    threads = [t for dump in dumps for t in dump]
    stacks = text[-_MAX_STACKS:]

    def innermost_project(ts: list[_Thread]) -> Frame | None:
        for thread in ts:
            for frame in thread.frames:
                if _in_project(frame, root):
                    return frame
        return None

    data = [t for t in threads if any(_is_data(f) for f in t.frames)]
    if data:
        workers = [t for t in data if any(f.function == "_worker_loop" for f in t.frames)]
        frame = innermost_project(workers) or innermost_project(data)
        where = "a DataLoader worker" if workers else "the process reading batches"
        return HangReport(phase="data loading", frame=frame.shown(root) if frame else None,
                          detail=f"{where} was inside torch.utils.data", stacks=stacks)
    main = [t for t in threads if t.current] or threads
    frame = innermost_project(main)
    source = linecache.getline(frame.file, frame.line).strip() if frame else ""
    if frame is not None:
        if _TRANSFER.search(source):
            return HangReport(phase="host-device transfer", frame=frame.shown(root),
                              detail=f"the line calls a transfer: {source[:160]}",
                              stacks=stacks)
    op = next((f for t in main for f in t.frames if _in_torch(f)), None)
    if op is not None:
        return HangReport(phase="torch operation", frame=frame.shown(root) if frame else None,
                          detail=f"innermost torch frame: {op.shown()}", stacks=stacks)
    if frame is not None and "torch" in source:  # a C operation: no Python frame of its own
        return HangReport(phase="torch operation", frame=frame.shown(root),
                          detail=f"the line calls torch: {source[:160]}", stacks=stacks)
    return HangReport(phase="unknown" if frame is None else "the project's code",
                      frame=frame.shown(root) if frame else None,
                      detail="no torch frame on the stacks", stacks=stacks)
