"""The project: ``lockkit.toml`` or ``[tool.lockkit]`` found from any sub-folder and read
into one frozen :class:`~lockkit.config.project.Project` (:mod:`~lockkit.config.project`,
with the one project discovery, :func:`~lockkit.config.project.project_root`), every table
read by the one key-path reader, each problem named by its key path (it lives in
:mod:`lockkit._internal.keys`, as the platform files use it too), the ``[ci]`` values
(:mod:`~lockkit.config.keys`), the ``[verify.*]`` tables, one reader per check with the
rules their tables share (``checks/``: the step that runs each check is verify's), and the
inputs: requirement files as pip and uv read them (:mod:`~lockkit.config.reqfile`),
pyproject inputs (:mod:`~lockkit.config.inputs`), each platform's own lines that replace
the inputs' requirements of their names (``[platform-requirements]``,
:mod:`~lockkit.config.platformreqs`), and the rule that an input is a regular file whose
lines outside the project are never quoted (:mod:`~lockkit.config.inputfile`).

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.index.urls
"""
