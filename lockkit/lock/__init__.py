"""The lock: one typed value, read, parsed and validated once per command, every
``pylock.toml`` lockkit reads (a committed lock, a wheelhouse's, ``diff``'s) read there
(:mod:`~lockkit.lock.model`); its ``[tool.lockkit]`` table typed as
:class:`~lockkit.lock.meta.LockMeta` and the lock's own Python (:mod:`~lockkit.lock.meta`);
uv's resolution turned into
``locks/pylock.<platform>.toml`` with its guards and stable bytes
(:mod:`~lockkit.lock.lockfile`); the Python a lock is resolved for, one rule
(:mod:`~lockkit.lock.python`); whether a committed lock is still what compile would write
(:mod:`~lockkit.lock.freshness`), and whether its files sit on the hosts compile takes
them from (:mod:`~lockkit.lock.origins`); the lock in other installers' formats
(:mod:`~lockkit.lock.export`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index
"""
