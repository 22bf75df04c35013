"""``lockkit ci``: the ``[ci]`` table and a GitHub Actions workflow that gates the locks and
verifies every platform on its runner and signs each dossier (:mod:`~lockkit.ci.workflow`),
installing lockkit's own committed wheel (:mod:`~lockkit.ci.ownwheel`) and its dependencies
from one hash-pinned requirements file (:mod:`~lockkit.ci.pins`); a scheduled
workflow that refreshes the locks in one pull request (:mod:`~lockkit.ci.refresh`), whose
pull-request job takes the artifact's locks and nothing else (:mod:`~lockkit.ci.intake`,
which reads them as PEP 751 locks); the workflows' text, piece by piece: YAML scalars,
runner labels, the install step (:mod:`~lockkit.ci.render`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.lock, lockkit.cache, lockkit.wheelhouse, lockkit.report
"""
