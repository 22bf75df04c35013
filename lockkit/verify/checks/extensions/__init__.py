"""The extensions check: the compiled modules ``[verify.extensions]`` declares
(read by :mod:`lockkit.config.checks.extensions`), imported (and smoke-tested) in the
rebuilt venv (``step.py``).
"""
