"""A download's body written and hashed on a second thread (:class:`Sink`) while the
next bytes are read, in lists of about ``CHUNK`` bytes (:func:`batches`): used by
:class:`~lockkit.download.fetch.Fetcher`."""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["QUEUED", "Sink", "batches"]

QUEUED = 8  # lists of about CHUNK bytes waiting for the sink, per download


class Sink:
    """Writes and hashes a body's lists of pieces on a thread of its own, in order.
    hashlib and ``write`` release the GIL on large buffers, so the reading thread (httpx,
    h11: Python holding the GIL) goes on with the next pieces meanwhile. Each list is
    joined here and hashed and written at once: on loopback against ``curl -Z``
    (``benchmarks/download.py``) the join cost less wall time than 16 updates and writes
    of 64 KiB. At most ``QUEUED`` lists wait. A failed write (a full disk) is raised to
    the reader at its next list, or on leaving the ``with`` block."""

    def __init__(self, out: Any, digest: Any = None) -> None:
        """*digest*: a sha256 to go on with (the bytes before these); a new one if None.
        ``queued`` counts the bytes put, ``written`` those written and hashed."""
        self._out = out
        self._digest = digest if digest is not None else hashlib.sha256()
        self.queued = self.written = 0
        self._queue: queue.Queue[list[bytes] | None] = queue.Queue(maxsize=QUEUED)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="lockkit-hash", daemon=True)
        self._thread.start()

    def put(self, batch: list[bytes]) -> None:
        if self._error is not None:
            raise self._error
        self.queued += sum(map(len, batch))
        self._queue.put(batch)

    def hexdigest(self) -> str:
        return self._digest.hexdigest()

    def _run(self) -> None:
        while (batch := self._queue.get()) is not None:
            if self._error is None:  # after a failed write: drained, never written
                try:
                    data = b"".join(batch)  # one write and one update (one GIL release each)
                    self._out.write(data)
                    self._digest.update(data)
                    self.written += len(data)
                except BaseException as exc:  # noqa: BLE001 - handed to the reader
                    self._error = exc

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self._queue.put(None)
        self._thread.join()
        if kind is None and self._error is not None:
            raise self._error



def batches(pieces: Iterable[bytes], size: int) -> Iterator[list[bytes]]:
    """*pieces* in lists of at least *size* bytes (the last may hold fewer), not copied.
    When *pieces* fails (a body cut short), the pieces held are given first, then the
    failure: a resumed download asks only for what never came."""
    batch: list[bytes] = []
    held = 0
    try:
        for piece in pieces:
            batch.append(piece)
            held += len(piece)
            if held >= size:
                yield batch
                batch, held = [], 0
    except Exception:
        if batch:
            yield batch
        raise
    if batch:
        yield batch
