"""Where platform files live: the ones lockkit ships, and a project's own."""

from __future__ import annotations

from pathlib import Path

__all__ = ["own_folder", "shipped_dir"]


def shipped_dir() -> Path:
    """The platform files lockkit ships."""
    package = Path(__file__).resolve().parents[1]  # lockkit/
    packaged = package / "_platforms"  # in a wheel (pyproject's force-include)
    return packaged if packaged.is_dir() else package.parent / "platforms"  # a source tree


def own_folder(project_dir: Path) -> Path:
    """The folder of a project's own platform files."""
    return project_dir / "platforms"
