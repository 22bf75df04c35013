"""``lockkit compile``: constraints and a platform in, one lock out, per platform, with
``--check`` and the "same inputs, same lock" memo (:mod:`~lockkit.compile.compiler`); the uv
call behind the routing index (:mod:`~lockkit.compile.resolve`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache
"""
