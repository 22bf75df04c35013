"""The platforms: their data files, validated strictly on load
(:mod:`~lockkit.platforms.definitions`) from the shipped folder and the project's own
(:mod:`~lockkit.platforms.folders`), OS and architecture names
(:mod:`~lockkit.platforms.arch`), what this machine can run (:mod:`~lockkit.platforms.host`),
a platform's marker environment and wheel tags for a Python
(:mod:`~lockkit.platforms.targets`), and the file a new PyTorch index variant needs
(:mod:`~lockkit.platforms.draft`).

May import: lockkit.errors, lockkit._internal
"""
