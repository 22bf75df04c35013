"""The project's own checks, one folder each, each holding what it needs whole: its
``[verify.<check>]`` table reader (``config.py``, called by
:func:`~lockkit.config.project.load_project` so a mistake ends the command before any
install), its step (``step.py``) and its verdict (``verdict.py``). ``application`` runs any
command and compares its JSON outputs; ``embedding`` is its specialised form;
``extensions`` imports the declared compiled modules; ``resume`` proves a training resumed
from its checkpoint continues as if it never stopped.

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache, lockkit.wheelhouse, lockkit.report
"""
