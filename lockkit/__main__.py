"""The console script's and ``python -m lockkit``'s entry: nothing but :func:`main`.

The installer's console-script wrapper imports its entry module outside any ``try``: a
Ctrl-C while that module loads prints a traceback through it. So the entry is this
module, which imports nothing at its top, and the command line (``lockkit.cli``, with
what it imports) loads and runs inside :func:`main`, where a Ctrl-C ends as exit 130.

A Ctrl-C that CPython drops is not lost either (:func:`_no_dropped_interrupt`): one
dropped inside the import system leaves Python's import lock held, and the run then
hangs at its first import in another thread."""


def main() -> None:
    try:
        _no_dropped_interrupt()
        from lockkit.cli import run

        run()
    except KeyboardInterrupt as exc:
        # Ctrl-C while Python loads lockkit (nothing is made yet), or at the first or
        # last line of cli.main, outside its own try (its cleanup has run); SIGTERM's and
        # SIGHUP's Terminated (lockkit._internal.endings) end as 128 + their signal
        raise SystemExit(128 + getattr(exc, "signum", 2)) from None


def _no_dropped_interrupt() -> None:
    """A KeyboardInterrupt that CPython drops ends the run all the same.

    After every import, CPython forgets the module's lock in a weakref callback of its
    own (``_get_module_lock.<locals>.cb``), where an exception cannot propagate: a Ctrl-C
    handled there is printed as "Exception ignored" and dropped. When it lands just
    after the callback took the global import lock and before the ``try`` that releases
    it (an interrupt between an acquire and its ``try``: gh-74174, gh-148874), the main
    thread keeps that lock for good. The main thread may take it again and goes on; the
    first other thread that imports a module waits forever: compile's routing index
    fetching a page, uv waiting for that page, lockkit waiting for uv.

    So a dropped KeyboardInterrupt is delivered again (``interrupt_main``: SIGINT, as if
    it came once more), from a thread of its own: raised from the hook, it would be
    raised inside the hook and dropped too; the new thread runs once the main thread has
    left the hook. One dropped before this runs (while the console script's wrapper
    imported this module) shows as the import lock held where no import runs (one
    thread, no import in progress): the run ends there as interrupted."""
    import _imp  # importlib's own lock; lock_held() is imp.lock_held(), gone in 3.12
    import _thread
    import sys

    if _imp.lock_held():
        raise KeyboardInterrupt
    dropped_elsewhere = sys.unraisablehook

    def deliver(unraisable: "sys.UnraisableHookArgs") -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            dropped_elsewhere(unraisable)
            return
        try:
            _thread.start_new_thread(_thread.interrupt_main, ())
        except RuntimeError:  # the interpreter is shutting down: the run is ending anyway
            pass

    sys.unraisablehook = deliver


if __name__ == "__main__":
    main()
