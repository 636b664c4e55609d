"""Writing a bundle: atomically, only inside -o, never over a folder that is not an mcugen bundle."""
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
        return "mcugen_version" in json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False


def write_bundle(files: dict[str, bytes], out_dir: Path, force: bool = False) -> None:
    """Write every file under out_dir: first into a temporary sibling folder, then one rename.

    A folder that exists and is neither empty nor an mcugen bundle is left alone unless force."""
    out_dir = Path(out_dir)
    for rel in files:
        p = Path(rel)
        if p.is_absolute() or ".." in p.parts:
            raise OutputError(f"refusing to write '{rel}' outside the output folder")
    if out_dir.exists():
        if not out_dir.is_dir():
            raise OutputError(f"'{out_dir}' exists and is not a folder; choose another -o")
        if any(out_dir.iterdir()) and not is_bundle(out_dir) and not force:
            raise OutputError(f"'{out_dir}' exists and is not an mcugen bundle; choose another -o "
                              "or pass --force to replace it")
    parent = out_dir.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=parent))
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder next to '{out_dir}': {exc.strerror}") from None
    try:
        for rel, data in sorted(files.items()):
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        old = None
        if out_dir.exists():
            old = parent / f".{out_dir.name}.old-{os.getpid()}"
            os.rename(out_dir, old)
        os.rename(tmp, out_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"cannot write the bundle to '{out_dir}': {exc.strerror}") from None
