"""``lockkit verify``, ``diagnose`` and ``sync``: a lock rebuilt into a fresh venv and proven.
The steps in order and the dossier (:mod:`~lockkit.verify.run`), an environment checked
as it is, not rebuilt (``--existing``: :mod:`~lockkit.verify.existing`), the system and
GPU chain shared with ``diagnose`` (:mod:`~lockkit.verify.chain`,
:mod:`~lockkit.verify.diagnose`), ``sync`` (:mod:`~lockkit.verify.sync`), and
``checks/``: one folder per project check (application, embedding, extensions, resume),
each with its step and verdict (each check's table is read with the project, in
``lockkit.config.checks``). The run's steps are ``lockkit.steps``', its environment
``lockkit.env``'s, its probes ``lockkit.probes``'.

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.lock, lockkit.cache, lockkit.wheelhouse, lockkit.report, lockkit.probes,
lockkit.steps, lockkit.env
"""
