"""The environment a lock is proven in, as steps of a run: rebuilt, with the host, venv,
pip-check and inventory steps (:mod:`~lockkit.env.rebuild`), the interpreter
(:mod:`~lockkit.env.interpreter`) and the install (:mod:`~lockkit.env.install`); or taken
as it is (``verify --existing``, ``sync``): who owns each file Python loads from it
(:mod:`~lockkit.env.ownership`), what the caller's import variables add to it
(:mod:`~lockkit.env.importenv`) and what its interpreter runs at start-up
(:mod:`~lockkit.env.startup`); and the clean copy of the committed project the checks run
in (:mod:`~lockkit.env.workspace`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.index,
lockkit.lock, lockkit.cache, lockkit.wheelhouse, lockkit.report, lockkit.steps
"""
