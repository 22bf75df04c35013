"""lockkit: rebuildable PyTorch environments, per-platform locks, proven rebuilds."""

__version__ = "0.1.0"
