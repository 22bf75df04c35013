"""The report side of the project's checks: one
:class:`~lockkit.report.checks.interface.Recorded` per check (its key under the dossier's
``checks``, its record type, its Markdown section), listed in
:data:`~lockkit.report.checks.registry.RECORDS`, the list the dossier
(:mod:`~lockkit.report.model`), its JSON document and ``dossier.md``
(:mod:`~lockkit.report.markdown`) loop over, as pip-audit's formats loop over
``_format/interface.py``'s implementations.

Why the registry is declared in three parts. A check has a half in each of three stages,
and imports run one way: verify imports report and config; report imports neither
(``lockkit.lock`` is the highest it reaches); config imports neither. A single list in
any one stage would have to reach up into a stage it may not import (or name the other
halves as strings, as the two halves of a check used to be joined). So each stage declares
the half it can see, in its own list, and the top one joins them by object:

- ``lockkit.config.checks.CHECKS``: the table's reader, the fields it fills and their types
  (read when the project loads, so a mistake ends the command before any install);
  ``VerifyConfig`` and the ``[verify]`` keys loop over it;
- :data:`~lockkit.report.checks.registry.RECORDS`: the record a check leaves and how it
  reads; ``Findings.checks``, ``Dossier.checks``, the JSON ``checks`` and ``dossier.md``
  loop over it;
- ``lockkit.verify.checks.CHECKS``: one ``StepCheck`` per check, its step, what it runs
  after, and its ``Recorded`` (an object, not a string); both plans and the step bodies
  loop over it, and ``tests/config/test_checks.py`` holds each line to the other two lists.

A new check is its folders (``config/checks/<key>.py``, ``report/checks/<key>.py``,
``verify/checks/<key>/``) and its line in each list; ``Findings``, ``Dossier``, the JSON
shapes, ``dossier.md``, ``VerifyConfig``, the plans and the step bodies do not change
(``tests/verify/test_check_registry.py`` adds a dummy check that way). Each list is read
at each use, never copied at import, so a temporary copy of it is seen everywhere.
"""

from __future__ import annotations
