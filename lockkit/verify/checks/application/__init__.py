"""The application check: the project's own command run in a clean copy of its committed
files (``step.py``), and JSON outputs compared with their references within a tolerance
(``compare.py``); its ``[verify.application]`` table is read by
:mod:`lockkit.config.checks.application`.
"""
