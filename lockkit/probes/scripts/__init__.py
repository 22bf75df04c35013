"""Standalone probe scripts, run by path inside the interpreter under test.

Nothing here imports lockkit: ``lockkit.probes.probe`` runs each file with the target venv's
``python -I`` and reads the one JSON object it prints.
"""
