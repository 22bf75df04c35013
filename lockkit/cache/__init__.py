"""What lockkit keeps between runs, all re-checked when read: the one layout of the cache
folder (:mod:`~lockkit.cache.layout`), the content-addressed blob store with info and prune
(:mod:`~lockkit.cache.store`), and the memo store (:mod:`~lockkit.cache.memo`).

May import: lockkit.errors, lockkit._internal, lockkit.lock
"""
