"""The extensions check: the compiled modules ``[verify.extensions]`` declares
(``config.py``), imported (and smoke-tested) in the rebuilt venv (``step.py``).
"""
