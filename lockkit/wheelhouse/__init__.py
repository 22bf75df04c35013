"""``lockkit wheelhouse``: a lock's files in one folder that installs with no network, and
that folder carried as one checked tar. The plan, the sdists built and the folder written
whole (:mod:`~lockkit.wheelhouse.build`), the download loop
(:mod:`~lockkit.wheelhouse.download`) and one file by hash: cache, ``--find-links``,
mirror, lock URL (:mod:`~lockkit.wheelhouse.fetch`); what the folder holds besides its
wheels (:mod:`~lockkit.wheelhouse.meta`), the CycloneDX SBOM
(:mod:`~lockkit.wheelhouse.sbom`) and reproducible wheels from sdists
(:mod:`~lockkit.wheelhouse.wheelzip`); ``tools/``, lockkit for the offline machine
(:mod:`~lockkit.wheelhouse.tools`), with lockkit's own wheel
(:mod:`~lockkit.wheelhouse.ownwheel`) and the pins kept in the folder
(:mod:`~lockkit.wheelhouse.toolpins`); ``pack`` and ``unpack``
(:mod:`~lockkit.wheelhouse.archive`), the manifest read as untrusted data
(:mod:`~lockkit.wheelhouse.manifest`) and an archive's members as hostile input
(:mod:`~lockkit.wheelhouse.members`); a folder's wheels checked against the committed lock
(:mod:`~lockkit.wheelhouse.trust`), and how to install with no network
(:mod:`~lockkit.wheelhouse.offline`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache, lockkit.compile
"""
