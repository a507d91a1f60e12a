"""The README and the guides it links, in the order their examples run (the README test runs
every ```bash block of them, in this order, in one shell): what a guide's example reads, an
earlier example of the README or of a guide before it made."""

from __future__ import annotations

from pathlib import Path

from tiny_models import REPO

README = REPO / "README.md"
GUIDES = tuple(REPO / "docs" / name for name in (
    "command-line.md", "models.md", "guards.md", "plugins.md", "servers-and-clusters.md",
    "store-and-viewer.md", "development.md"))
DOCS: tuple[Path, ...] = (README, *GUIDES)


def docs_text() -> str:
    """The README and every guide, one after the other."""
    return "\n".join(path.read_text(encoding="utf-8") for path in DOCS)


def guide(name: str) -> str:
    return (REPO / "docs" / name).read_text(encoding="utf-8")
