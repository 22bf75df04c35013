"""``lockkit compile``: constraints and a platform in, one lock out, per platform, with
``--check`` and the "same inputs, same lock" memo (:mod:`~lockkit.compile.compiler`); the uv
call behind the routing index (:mod:`~lockkit.compile.resolve`); ``--locked``, the
committed lock against a fresh resolution (:mod:`~lockkit.compile.locked`); what the inputs
seem not to mean (:mod:`~lockkit.compile.slips`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache
"""
