"""The project checks' tables, one module each, read when the project loads so a mistake
ends the command before any install: ``[verify.application]`` and the ``[verify]``
waiver (:mod:`~lockkit.config.checks.application`), ``[verify.embedding]``
(:mod:`~lockkit.config.checks.embedding`), ``[verify.extensions]``
(:mod:`~lockkit.config.checks.extensions`) and ``[verify.resume]``
(:mod:`~lockkit.config.checks.resume`), with the rules their tables share
(:mod:`~lockkit.config.checks.rules`). Each module holds its table's frozen dataclass, its
validation and its hint; the step that runs the check and its verdict live in
``lockkit.verify.checks.<check>``, which imports the dataclass from here (config sits
below verify, never the other way round).
"""
