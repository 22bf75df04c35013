try:
    from lockkit.cli import run
except KeyboardInterrupt:  # Ctrl-C while Python loads lockkit: nothing is made yet
    raise SystemExit(130) from None

run()
