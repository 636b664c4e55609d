"""Where the non-Python parts of mcugen live (templates/, mcu_runtime/, boards/, SConstruct), and
where mcugen keeps what it builds once (host tools, the QEMU plugin, tuning measurements).

In a checkout (editable install) they are the repository's top-level folders; a wheel carries
copies under emitter/_data (see setup.py), so a non-editable install finds them too.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Path of a top-level data folder or file: 'templates', 'mcu_runtime', 'boards', 'SConstruct'."""
    packaged = _PKG / "_data" / name
    if packaged.exists():
        return packaged
    return _PKG.parent / name


def cache_dir(sub: str) -> Path:
    """A folder of mcugen's cache, created: $MCUGEN_CACHE_DIR, else $XDG_CACHE_HOME/mcugen, else
    ~/.cache/mcugen; where that cannot be written (a read-only home), a folder of the user's own in
    the temporary directory."""
    base = os.environ.get("MCUGEN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcugen")
    path = Path(base) / sub
    try:
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError:
        uid = os.getuid() if hasattr(os, "getuid") else 0
        path = Path(tempfile.gettempdir()) / f"mcugen-cache-{uid}" / sub
        path.mkdir(parents=True, exist_ok=True)
        return path
