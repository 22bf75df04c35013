"""``lockkit verify``, ``diagnose`` and ``sync``: a lock rebuilt into a fresh venv and proven.
The steps in order and the dossier (:mod:`~lockkit.verify.run`), what one run knows
(:mod:`~lockkit.verify.context`) and what its steps found, one typed field each
(:mod:`~lockkit.verify.findings`), the step engine (:mod:`~lockkit.verify.steps`), the
rebuild: host, venv, pip-check, inventory (:mod:`~lockkit.verify.rebuild`), the
interpreter (:mod:`~lockkit.verify.interpreter`) and the install
(:mod:`~lockkit.verify.install`), an environment checked as it is, not rebuilt
(``--existing``: :mod:`~lockkit.verify.existing`; who owns each file Python loads from it,
:mod:`~lockkit.verify.ownership`; what the caller's import variables add to it,
:mod:`~lockkit.verify.importenv`), the clean copy of the committed
project the checks run in (:mod:`~lockkit.verify.workspace`), the system and GPU chain shared with
``diagnose`` (:mod:`~lockkit.verify.chain`, :mod:`~lockkit.verify.diagnose`), the probe
scripts run inside the target interpreter (:mod:`~lockkit.verify.probe`, ``probes/``),
hangs named by their layer (:mod:`~lockkit.verify.hang`), ``sync``
(:mod:`~lockkit.verify.sync`), and ``checks/``: one folder per project check
(application, embedding, extensions, resume), each with its step and verdict (each
check's table is read with the project, in ``lockkit.config.checks``).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache, lockkit.wheelhouse, lockkit.report
"""
