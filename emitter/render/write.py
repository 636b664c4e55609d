"""Writing a bundle: atomically, only inside -o, never over a folder that is not an mcugen bundle.

  1. Every relative path is checked to stay inside the output folder.
  2. An existing -o that is not a folder, or a folder that is neither empty nor an mcugen bundle
     (a report.json naming mcugen_version), is refused unless force; so is the current folder or
     one of its ancestors, always.
  3. The files go into a fresh temporary sibling folder `.NAME.tmp-*`; then an existing -o is
     renamed aside to `.NAME.old-*`, the temporary folder renamed to -o, and the old one removed.
  4. Any failure (including Ctrl-C) removes the temporary folder and puts the old -o back, so -o
     holds either the complete old bundle or the complete new one.
  5. Regenerating into an existing bundle keeps what mcugen did not write there (a `build/`, a
     `lib<name>.a`, notes, a file added under mcu_runtime/): they are copied into the new bundle
     and listed (write_bundle's result). mcugen's own files are exactly those the previous
     bundle's MANIFEST lists (render.bundle writes it: every file of the bundle, itself included,
     one path a line), so a front end's files, test/ and whatever a later mcugen adds are
     recognised without a rule of names. A bundle written before the MANIFEST existed falls back
     to the old rule (legacy_ours). A kept file that the new bundle would overwrite is refused,
     naming it, unless force.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from emitter.errors import OutputError

MARKER = "report.json"
MANIFEST = "MANIFEST"
FIXED = ("Makefile", "CMakeLists.txt", "README.md", "report.json", "report.html", "cmsis_dsp_sources.txt")
OWN_TAILS = (".c", ".h", "_weights.c", "_weights.h", "_f32.c", "_frontend.c", "_frontend.h")


def is_bundle(folder: Path) -> bool:
    try:
        data = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "mcugen_version" in data


def manifest(paths: list[str] | set[str] | dict[str, bytes]) -> bytes:
    """The MANIFEST of a bundle holding `paths`: every path, MANIFEST included, sorted, one a line."""
    return "".join(f"{p}\n" for p in sorted({*paths, MANIFEST})).encode()


def legacy_ours(folder: Path) -> set[str]:
    """A bundle without a MANIFEST (written before it existed): its NAME*.c/.h (NAME from its
    report.json, the front end's included), the fixed files, mcu_runtime/, and test/ when it holds
    NAME_test_data.c -- as top-level entries."""
    name = str(json.loads((folder / MARKER).read_text()).get("name", ""))
    ours = {*FIXED, "mcu_runtime", *(f"{name}{tail}" for tail in OWN_TAILS)}
    if (folder / "test" / f"{name}_test_data.c").is_file():  # --verify's regression test
        ours.add("test")
    return ours


def user_entries(folder: Path) -> list[str]:
    """The entries of the bundle `folder` that mcugen did not write (sorted; see 5.): a top-level
    entry that holds none of the MANIFEST's paths whole, else each unlisted file inside it."""
    try:
        listed = {line for line in (folder / MANIFEST).read_text().splitlines() if line}
    except OSError:
        ours = legacy_ours(folder)
        return sorted(p.name for p in folder.iterdir() if p.name not in ours)
    tops = {p.split("/", 1)[0] for p in listed}
    out = []
    for p in sorted(folder.iterdir()):
        if p.name not in tops:
            out.append(p.name)
        elif p.is_dir() and not p.is_symlink():
            out += sorted(rel for f in p.rglob("*") if not f.is_dir() or f.is_symlink()
                          if (rel := f.relative_to(folder).as_posix()) not in listed)
    return out


def _keep(old: Path, names: list[str], new: Path, files: dict[str, bytes], force: bool) -> None:
    clash = sorted(n for n in names if n in files or any(f.startswith(n + "/") for f in files))
    if clash and not force:
        raise OutputError(f"'{old}' holds {', '.join(clash)}, not written by mcugen, and the new bundle "
                          "writes that path; move it away or pass --force to replace it")
    for n in names:
        if n in clash:
            continue
        src = old / n
        (new / n).parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir() and not src.is_symlink():
            shutil.copytree(src, new / n, symlinks=True)
        else:
            shutil.copy2(src, new / n, follow_symlinks=False)


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


def write_bundle(files: dict[str, bytes], out_dir: Path, force: bool = False) -> list[str]:
    """Write every file under out_dir (and the MANIFEST listing them): first into a temporary
    sibling folder, then one rename. Returns the entries of a previous bundle there that mcugen
    did not write, kept (see 5.)."""
    out_dir = Path(out_dir)
    files = {**files, MANIFEST: manifest(files)}
    for rel in files:
        p = Path(rel)
        if not rel or p.is_absolute() or ".." in p.parts or p.parts[:1] == (".",):
            raise OutputError(f"refusing to write '{rel}' outside the output folder")
    _check_target(out_dir, force)
    kept = user_entries(out_dir) if out_dir.is_dir() and is_bundle(out_dir) else []
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
        _keep(out_dir, kept, tmp, files, force)
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
    return kept
