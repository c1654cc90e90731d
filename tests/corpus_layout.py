"""Lay corpus files out as an agent would on disk, without copying them."""

import os
from pathlib import Path


def lay_out(root: Path, corpus_root: Path, layout: dict, files) -> Path:
    """Symlink each of ``files`` (paths below ``corpus_root``) to ``root / layout[file]``."""
    for relative in files:
        path = root / layout[relative]
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(corpus_root / relative, path)
    return root
