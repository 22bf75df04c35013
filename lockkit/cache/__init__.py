"""What lockkit keeps between runs, all re-checked when read: the one layout of the cache
folder (:mod:`~lockkit.cache.layout`), the content-addressed blob store
(:mod:`~lockkit.cache.store`) and the identities that spare re-reading an unchanged blob
(:mod:`~lockkit.cache.identity`), ``cache info`` and ``cache prune``
(:mod:`~lockkit.cache.housekeeping`), the locks that keep prune off what a running
command uses (:mod:`~lockkit.cache.inuse`), and the memo store (:mod:`~lockkit.cache.memo`).

May import: lockkit.errors, lockkit._internal
"""
