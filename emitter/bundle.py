"""Writing a bundle: atomically, only inside -o, never over a folder that is not an mcugen bundle.

  1. Every relative path is checked to stay inside the output folder.
  2. An existing -o that is not a folder, or a folder that is neither empty nor an mcugen bundle
     (a report.json naming mcugen_version), is refused unless force; so is the current folder or
     one of its ancestors, always.
  3. The files go into a fresh temporary sibling folder `.NAME.tmp-*`; then an existing -o is
     renamed aside to `.NAME.old-*`, the temporary folder renamed to -o, and the old one removed.
  4. Any failure (including Ctrl-C) removes the temporary folder and puts the old -o back, so -o
     holds either the complete old bundle or the complete new one.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from emitter.errors import OutputError

MARKER = "report.json"


def is_bundle(folder: Path) -> bool:
    try:
        data = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "mcugen_version" in data


def _check_target(out_dir: Path, force: bool) -> None:
    where = out_dir.absolute()
    if not out_dir.name or out_dir.name in (".", ".."):
        raise OutputError(f"'{out_dir}' cannot be an output folder; name a new folder with -o")
    if where.resolve() == Path.cwd().resolve() or where.resolve() in Path.cwd().resolve().parents:
        raise OutputError(f"'{out_dir}' is the current folder or one of its parents; name a new "
                          "folder with -o")
    if out_dir.is_symlink():
        raise OutputError(f"'{out_dir}' is a symbolic link; mcugen replaces the -o folder as a "
                          "whole, so give the real folder's path")
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"'{out_dir}' exists and is not a folder; choose another -o")
    if out_dir.exists() and any(out_dir.iterdir()) and not is_bundle(out_dir) and not force:
        raise OutputError(f"'{out_dir}' exists and is not an mcugen bundle; choose another -o "
                          "or pass --force to replace it")


def write_bundle(files: dict[str, bytes], out_dir: Path, force: bool = False) -> None:
    """Write every file under out_dir: first into a temporary sibling folder, then one rename."""
    out_dir = Path(out_dir)
    for rel in files:
        p = Path(rel)
        if not rel or p.is_absolute() or ".." in p.parts or p.parts[:1] == (".",):
            raise OutputError(f"refusing to write '{rel}' outside the output folder")
    _check_target(out_dir, force)
    parent = out_dir.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=parent))
    except OSError as exc:
        raise OutputError(f"cannot create the output folder next to '{out_dir}': {exc.strerror}") from None
    old: Path | None = None
    try:
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        for rel, data in sorted(files.items()):
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=parent))
            os.rename(out_dir, old / out_dir.name)
        os.rename(tmp, out_dir)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            if (old / out_dir.name).exists() and not out_dir.exists():
                os.rename(old / out_dir.name, out_dir)  # put the previous bundle back
            shutil.rmtree(old, ignore_errors=True)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write the bundle to '{out_dir}': {exc.strerror or exc}") from None
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
