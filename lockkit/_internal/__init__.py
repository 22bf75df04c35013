"""What every stage does the same way, and nothing stage-specific: file modes, temp folders and
atomic writes (:mod:`~lockkit._internal.fs`), the private-file rule for what is read back
(:mod:`~lockkit._internal.private`), the output-folder rule and its one swap
(:mod:`~lockkit._internal.outdir`), the same rule for output files, ``-`` and devices
(:mod:`~lockkit._internal.outfile`), SIGTERM and SIGHUP ended as Ctrl-C is, and all three
held over a step that must not be cut in two (:mod:`~lockkit._internal.endings`), the maker's
mark on every temp and partial name and the sweep of what a killed run left
(:mod:`~lockkit._internal.leftovers`), every subprocess
(:mod:`~lockkit._internal.proc`, with the one ``isolated_env``), the uv binary
(:mod:`~lockkit._internal.uv`), the one key-path reader of every config table and platform
file (:mod:`~lockkit._internal.keys`), every TOML and JSON parsed with nesting too deep as
one line (:mod:`~lockkit._internal.parse`), credentials kept out of output
(:mod:`~lockkit._internal.redact`), terminal output (:mod:`~lockkit._internal.ui`), ``-v`` and
``-q`` through the ``lockkit`` logger (:mod:`~lockkit._internal.log`) and
Python 3.10's ``tomllib`` (:mod:`~lockkit._internal.compat`).

May import: lockkit.errors
"""
