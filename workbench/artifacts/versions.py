"""The versions every artifact records (a .hlox file, the report, a reproducer, a notebook's bundle): one
reading of the installed distributions, so that the four agree on what made them."""
from __future__ import annotations

import platform
import sys
from importlib import metadata

__all__ = ["DISTRIBUTIONS", "versions", "versions_line"]

# the distributions that decide what a compile produces; enzyme-ad is optional (absent on Python 3.12)
DISTRIBUTIONS = ("hlo-workbench", "jax", "jaxlib", "enzyme-ad")


def versions() -> dict[str, str | None]:
    """{"workbench", "jax", "jaxlib", "enzyme-ad": version or None when not installed, "python", "platform"}."""
    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    found = {("workbench" if d == "hlo-workbench" else d): version(d) for d in DISTRIBUTIONS}
    return {**found, "python": platform.python_version(), "platform": sys.platform}


def versions_line(found: dict[str, str | None] | None = None) -> str:
    """One line for a page: "jax 0.10.2 · jaxlib 0.10.2 · enzyme-ad not installed · ... · Python 3.11.7"."""
    found = versions() if found is None else found
    bits = [f"{name} {found.get(name) or 'not installed'}" for name in ("jax", "jaxlib", "enzyme-ad", "workbench")]
    return " \u00b7 ".join(bits + [f"Python {found['python']}"])
