"""Where the non-Python parts of mcugen live (templates/, mcu_runtime/, boards/, SConstruct).

In a checkout (editable install) they are the repository's top-level folders; a wheel carries
copies under emitter/_data (see setup.py), so a non-editable install finds them too.
"""
from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Path of a top-level data folder or file: 'templates', 'mcu_runtime', 'boards', 'SConstruct'."""
    packaged = _PKG / "_data" / name
    if packaged.exists():
        return packaged
    return _PKG.parent / name
