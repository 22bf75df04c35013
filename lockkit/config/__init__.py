"""The project: ``lockkit.toml`` or ``[tool.lockkit]`` found from any sub-folder and read
into one frozen :class:`~lockkit.config.project.Project` (:mod:`~lockkit.config.project`),
the one key-path reader every table uses, each problem named by its key path
(:mod:`~lockkit.config.keys`), the ``[verify]`` tables (:mod:`~lockkit.config.verify`; each
project check's own table is read by its ``checks/<check>/config.py``), and the inputs:
requirement files as pip and uv read them (:mod:`~lockkit.config.reqfile`) and pyproject
inputs (:mod:`~lockkit.config.inputs`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.index.urls,
lockkit.verify.checks
"""
