"""The project's own checks, one folder each: its step (``step.py``) and its verdict
(``verdict.py``). Each check's ``[verify.<check>]`` table is read with the project, by
:mod:`lockkit.config.checks` (so a mistake ends the command before any install), and
reaches the step as the :class:`~lockkit.config.project.Project`'s validated dataclass.
``application`` runs any command and compares its JSON outputs; ``embedding`` is its
specialised form; ``extensions`` imports the declared compiled modules; ``resume`` proves a
training resumed from its checkpoint continues as if it never stopped.

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache, lockkit.wheelhouse, lockkit.report
"""
