"""The step engine every run is made of (:mod:`~lockkit.steps.engine`: what ran, in
order, with the first error), what one run knows: its project, lock, platform, venv and
the commands it ran (:mod:`~lockkit.steps.context`), and what its steps found, one typed
field each (:mod:`~lockkit.steps.findings`). The environment's steps, verify's, the
checks' and ``diagnose``'s all run on it; none of them lives here.

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.lock, lockkit.wheelhouse, lockkit.report, lockkit.probes
"""
