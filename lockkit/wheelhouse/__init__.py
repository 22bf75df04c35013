"""``lockkit wheelhouse``: every wheel of a lock in one folder that installs offline
(:mod:`~lockkit.wheelhouse.build`, its files downloaded by hash in ``lockkit.download``),
or found up to date by its files' identities when nothing is new
(:mod:`~lockkit.wheelhouse.current`), the files beside the wheels: lock,
requirements, ``simple/``, manifest (:mod:`~lockkit.wheelhouse.meta`), the folder checked
against the committed lock (:mod:`~lockkit.wheelhouse.trust`), every file a printed install
command reads held to what that lock implies, for pack, unpack and verify alike
(:mod:`~lockkit.wheelhouse.implied`), packed and unpacked as one
reproducible archive (:mod:`~lockkit.wheelhouse.archive`) whose manifest is read as
untrusted data (:mod:`~lockkit.wheelhouse.manifest`) and whose members as hostile input
(:mod:`~lockkit.wheelhouse.members`), its SBOM (:mod:`~lockkit.wheelhouse.sbom`), lockkit
itself for the offline machine (:mod:`~lockkit.wheelhouse.tools`): its own wheel
(:mod:`~lockkit.wheelhouse.ownwheel`) and the pins kept in the folder
(:mod:`~lockkit.wheelhouse.toolpins`), reproducible wheels from sdists
(:mod:`~lockkit.wheelhouse.wheelzip`) and the offline install text
(:mod:`~lockkit.wheelhouse.offline`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache, lockkit.download
"""
