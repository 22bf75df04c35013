"""Standalone probe scripts, run by path inside the interpreter under test.

Nothing here imports lockkit: ``lockkit.probes.probe`` runs each ``*_probe.py`` file with
the target venv's ``python -I`` and reads the one JSON object it prints. The other files
are parts of a probe, split by what they probe; the probe loads them from this folder by
path (``-I`` keeps the folder off ``sys.path``), and none of them runs as a probe.
"""
