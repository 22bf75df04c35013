"""What runs inside the interpreter under test, and what its output and its stalls say:
the standalone probe scripts (``scripts/``: the system chain, the GPU checks, the
extensions' imports, what an interpreter runs at start-up), run by path in isolated mode
with an allow-listed environment and read as one JSON object each
(:mod:`~lockkit.probes.probe`), and a command that passed its timeout named by the layer
it stalled in, from the stacks it printed (:mod:`~lockkit.probes.hang`). Nothing here
runs a step or judges a lock: verify, ``diagnose`` and the checks do, with what this
returns.

May import: lockkit.errors, lockkit._internal, lockkit.report
"""
