"""Downloads by hash, for ``wheelhouse build`` and lockkit's own ``tools/``: the fetcher
(:mod:`~lockkit.download.fetch`) that takes each file from the places it is looked for, a
failing PyTorch host's twin last (:mod:`~lockkit.download.sources`), each file's bytes from
one URL, resumed when cut short, in ranged parts when large, kept for the next build when
interrupted (:mod:`~lockkit.download.transfer`), within a few connections per host
(:mod:`~lockkit.download.line`), written and hashed on a second thread
(:mod:`~lockkit.download.sink`), on a few threads (:mod:`~lockkit.download.pool`). What
lands is a verified file in the cache under its hash; what a wheelhouse makes of it is
wheelhouse's.

May import: lockkit.errors, lockkit._internal, lockkit.index, lockkit.cache
"""
