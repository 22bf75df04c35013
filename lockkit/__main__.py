"""The console script's and ``python -m lockkit``'s entry: nothing but :func:`main`.

The installer's console-script wrapper imports its entry module outside any ``try``: a
Ctrl-C while that module loads prints a traceback through it. So the entry is this
module, which imports nothing at its top, and the command line (``lockkit.cli``, with
what it imports) loads inside :func:`main`, where a Ctrl-C ends as exit 130."""


def main() -> None:
    try:
        from lockkit.cli import run
    except KeyboardInterrupt:  # Ctrl-C while Python loads lockkit: nothing is made yet
        raise SystemExit(130) from None
    run()


if __name__ == "__main__":
    main()
