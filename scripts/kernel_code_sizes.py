#!/usr/bin/env python3
"""Regenerates boards/kernel_code_sizes.json: an estimate of the flash code of each portable kernel.

For every distinct set of board cflags in boards/*.toml, each mcu_runtime kernel's files (the ones
a bundle ships for it: kernels/<k>.c and its _generic/_dsp/_mve path files; see
emitter.render.runtime_files) and the shared support/ files are compiled alone with

    arm-none-eabi-gcc <board cflags> -O2 -std=c99 -Imcu_runtime/include -c FILE.c

(the bundle Makefile's default flags), and `arm-none-eabi-size` gives text + data of each object.
A kernel's figure is the sum over its objects. It is an estimate per kernel object: the linker
drops nothing within an object (no -ffunction-sections), but a firmware built with other flags,
LTO or --gc-sections, or another compiler version, differs. report.html shows these figures as
"code per kernel"; mcugen cannot measure them at emit time, where no toolchain is required.

    python scripts/kernel_code_sizes.py            # rewrite the table
    python scripts/kernel_code_sizes.py --check    # exit 1 if the table is out of date
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emitter.boards import list_boards  # noqa: E402
from emitter.render import runtime_files  # noqa: E402

TABLE = ROOT / "boards" / "kernel_code_sizes.json"
CC, SIZE = "arm-none-eabi-gcc", "arm-none-eabi-size"
OPT = ["-O2", "-std=c99"]
PATH_SUFFIXES = ("_ref", "_generic", "_dsp", "_mve")


def kernels() -> list[str]:
    """Every portable kernel: mcu_runtime/kernels/mcu_*.c that is not a path file or a reference."""
    src = ROOT / "mcu_runtime" / "kernels"
    return sorted(p.stem for p in src.glob("mcu_*.c") if not p.stem.endswith(PATH_SUFFIXES))


def object_bytes(cflags: list[str], source: Path, work: Path) -> int:
    """text + data of one compiled file."""
    obj = work / (source.stem + ".o")
    subprocess.run([CC, *cflags, *OPT, f"-I{ROOT / 'mcu_runtime' / 'include'}", "-c", str(source),
                    "-o", str(obj)], check=True)
    out = subprocess.run([SIZE, str(obj)], check=True, capture_output=True, text=True).stdout
    text, data = out.splitlines()[1].split()[:2]
    return int(text) + int(data)


def toolchain() -> str:
    return subprocess.run([CC, "--version"], check=True, capture_output=True, text=True).stdout.splitlines()[0]


def table(only: set[str] | None = None) -> dict:
    """The whole table, one entry per distinct cflags string (keyed by it, as the bundle states it);
    `only`: just these cflags strings (the test re-measures a few)."""
    rt = ROOT / "mcu_runtime"
    shared = set(runtime_files([]))
    entries: dict[str, dict] = {}
    for board in list_boards():
        key = " ".join(board.cflags)
        if only is not None and key not in only:
            continue
        if key in entries:
            entries[key]["boards"].append(board.name)
            continue
        with tempfile.TemporaryDirectory(prefix="mcugen-codesize-") as tmp:
            sizes = {k: sum(object_bytes(list(board.cflags), rt / f, Path(tmp))
                            for f in runtime_files([k]) if f.endswith(".c") and f not in shared)
                     for k in kernels()}
            support = sum(object_bytes(list(board.cflags), rt / f, Path(tmp))
                          for f in sorted(shared) if f.endswith(".c"))
        entries[key] = {"boards": [board.name], "kernels": sizes, "support": support}
    return {
        "about": "estimated flash code per portable kernel (text + data of its objects compiled alone "
                 "at " + " ".join(OPT) + " with the board cflags; `support` is shared by all kernels); "
                 "regenerate with scripts/kernel_code_sizes.py",
        "toolchain": toolchain(),
        "cflags": entries,
    }


def text(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed table; exit 1 if it differs")
    ap.add_argument("-o", "--output", type=Path, default=TABLE, help=f"where to write (default {TABLE})")
    args = ap.parse_args()
    new = text(table())
    if args.check:
        if TABLE.read_text() != new:
            print(f"{TABLE} is out of date: run python scripts/kernel_code_sizes.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(new)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
