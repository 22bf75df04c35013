"""The lock: uv's resolution turned into ``locks/pylock.<platform>.toml`` with its guards and
stable bytes, read back and validated, and the lock's own Python
(:mod:`~lockkit.lock.lockfile`); whether a committed lock is still what compile would write
(:mod:`~lockkit.lock.freshness`), and whether its files sit on the hosts compile takes
them from (:mod:`~lockkit.lock.origins`); the lock in other installers' formats
(:mod:`~lockkit.lock.export`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index
"""
