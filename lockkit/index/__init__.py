"""Talking to package indexes: the official, effective and printable forms of a URL and a
platform's indexes (:mod:`~lockkit.index.urls`), credentials by host
(:mod:`~lockkit.index.auth`), the one HTTP client policy every request lockkit makes goes
by (:mod:`~lockkit.index.http`) and its one retry rule, the client's transport
(:mod:`~lockkit.index.transport`), through the one retry loop a cut download body is
resumed through too (:mod:`~lockkit.index.retry`), the wire under downloads, read 1 MiB
at a time (:mod:`~lockkit.index.bulk`), the PyTorch index pages compile fetches and PEP 503 link
parsing (:mod:`~lockkit.index.pages`), and the loopback routing index that gives uv a
platform's torch-family names from its PyTorch index only (:mod:`~lockkit.index.routing`,
served by :mod:`~lockkit.index.loopback`), and uv's resolution through it, for compile's
locks and wheelhouse's ``tools/`` alike (:mod:`~lockkit.index.resolve`), and the variant
folders a PyTorch index serves, read from its root listing and compared with the platforms
(:mod:`~lockkit.index.variants`, ``platforms --check-index``).

May import: lockkit.errors, lockkit._internal, lockkit.platforms
"""
