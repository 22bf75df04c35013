"""The download loop of ``wheelhouse build``: every file of the plan fetched by hash
(:class:`~lockkit.download.fetch.Fetcher`) on a few daemon threads, the results in the
plan's order. A file a mirror failed to give, whose official host was not tried, says so
and how to allow it (``--fallback-to-official``).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, wait

from lockkit._internal.redact import masked
from lockkit.download.fetch import Fetcher, Got, Item
from lockkit.download.line import Stopped
from lockkit.errors import FetchError, HashMismatch

__all__ = ["fetch_items"]

_GRACE = 0.5  # seconds an interrupted build waits for its cut-off downloads to unwind
_FALLBACK_HINT = ("the official host is tried after a failed mirror only with "
                  "--fallback-to-official")


def fetch_items(fetcher: Fetcher, items: list[Item], jobs: int,
                on_file: Callable[[Got], None] | None = None,
                meanwhile: Callable[[], object] | None = None) -> list[Got]:
    """Every item's file, in the order of *items*, on *jobs* threads; *on_file* hears of
    each as it lands; *meanwhile* runs on the calling thread once the threads have
    started (work the caller needs next, done while the bytes come)."""

    def one(item: Item) -> Got:
        got = _fetch_one(fetcher, item)
        if on_file:
            on_file(got)
        return got

    # Every file on the threads, the largest first (the last to finish is then a small
    # one, not a torch wheel started late): a cache hit is hashed again there (hashlib
    # releases the GIL), a miss fetched; the HTTP client is built by the first miss.
    order = sorted(range(len(items)), key=lambda i: -(items[i].want.size or 0))
    fetched = _fetch_all(fetcher, one, [items[i] for i in order], jobs, meanwhile) \
        if items else []
    got_of = dict(zip(order, fetched, strict=True))
    return [got_of[i] for i in range(len(items))]


def _fetch_one(fetcher: Fetcher, item: Item) -> Got:
    try:
        return fetcher.fetch(item.want)
    except FetchError as exc:
        if not item.official_skipped or isinstance(exc, HashMismatch):
            raise
        raise FetchError(f"{exc}; the mirror failed and the official host "
                         f"({masked(item.want.source)}) was not tried",
                         hint=f"{exc.hint}; {_FALLBACK_HINT}" if exc.hint
                         else _FALLBACK_HINT) from None


def _fetch_all(fetcher: Fetcher, one: Callable[[Item], Got], items: list[Item],
               jobs: int, meanwhile: Callable[[], object] | None = None) -> list[Got]:
    """Run *one* over *items* on *jobs* threads, results in order; *meanwhile* on this
    thread while they run (its failure stops them as a failed file does).

    On Ctrl-C or a failed file nothing is waited for beyond a short grace: queued items
    are dropped, the fetcher cuts open downloads off and removes their partial files, and
    the exception propagates. The workers are daemon threads (a ThreadPoolExecutor's are joined
    at exit, which made Ctrl-C wait for a stalled server's timeout); a worker still
    blocked finds the stop flag when it wakes and lands nothing. One still connecting,
    or waiting for headers or an index page, has no response to cut off: the grace
    bounds the wait for it, and nothing at exit waits for it (tests/cli/test_hygiene.py).
    """
    todo: queue.SimpleQueue[tuple[Item, Future[Got]] | None] = queue.SimpleQueue()
    futures: list[Future[Got]] = []
    for item in items:
        futures.append(Future())
        todo.put((item, futures[-1]))
    failed = threading.Event()  # a file failed: no worker starts another
    workers = [threading.Thread(target=_worker, args=(todo, one, fetcher, failed),
                                daemon=True, name=f"lockkit-fetch-{i}")
               for i in range(max(1, jobs))]
    try:  # a Ctrl-C while the workers start stops the ones started, too
        for worker in workers:
            todo.put(None)
            worker.start()
        if meanwhile is not None:
            meanwhile()
        wait(futures, return_when=FIRST_EXCEPTION)
        _raise_first_failure(futures)
        return [f.result() for f in futures]
    except BaseException:
        fetcher.stop()
        for f in futures:
            f.cancel()
        deadline = time.monotonic() + _GRACE  # cut-off downloads end in milliseconds
        for worker in workers:
            if worker.is_alive():  # not one that never started
                worker.join(max(0.0, deadline - time.monotonic()))
        fetcher.reap()  # what is still blocked keeps nothing
        raise


def _raise_first_failure(futures: list[Future[Got]]) -> None:
    """The failure of the first file, in the plan's order, that failed on its own (not
    one stopped because another failed), else of any; nothing when none failed."""
    failures = [exc for f in futures if f.done() and not f.cancelled()
                and (exc := f.exception()) is not None]
    if failures:
        raise next((e for e in failures if not isinstance(e, Stopped)), failures[0])


def _worker(todo: queue.SimpleQueue[tuple[Item, Future[Got]] | None],
            one: Callable[[Item], Got], fetcher: Fetcher, failed: threading.Event) -> None:
    """Fetch jobs until the end mark; after a failure (this worker's or another's) the
    jobs left are cancelled, not started: a file failed is the build failed, and a
    worker that took the next job would connect again (one more try at a silent host)."""
    while (job := todo.get()) is not None:
        item, future = job
        if fetcher.stopped.is_set() or failed.is_set():
            future.cancel()
            continue
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(one(item))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            failed.set()
            future.set_exception(exc)

