"""The application check: the project's own command run in a clean copy of its committed
files (``step.py``), its ``[verify.application]`` table (``config.py``), and JSON outputs
compared with their references within a tolerance (``compare.py``).
"""
