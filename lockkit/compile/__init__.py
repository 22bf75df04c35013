"""``lockkit compile``: constraints and a platform in, one lock out, per platform, with
``--check`` and the "same inputs, same lock" memo (:mod:`~lockkit.compile.compiler`), through
the uv call behind the routing index (:mod:`lockkit.index.resolve`); ``--locked``, a fresh
resolution compared with the committed lock, writing nothing (:mod:`~lockkit.compile.locked`);
the warnings about inputs that slip past the lock (:mod:`~lockkit.compile.slips`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache
"""
