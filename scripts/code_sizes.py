#!/usr/bin/env python3
"""Measures the code bytes of every mcu_runtime/ file a bundle may ship, on every core of boards/,
into mcu_runtime/code_sizes.json (read by emitter/report/codesize.py for the flash budget):

    python scripts/code_sizes.py            # rewrite the table (after changing a kernel)
    python scripts/code_sizes.py --check    # exit 1 if the table is stale (tests do this per core)

--optimize speed (the top-level "files" and "per_kernel_call" of each core): each file compiled
alone, arm-none-eabi-gcc -O2 -std=c99 <board CPU flags> -ffunction-sections -c, then .text +
.data of the object (arm-none-eabi-size): every path of a kernel is reachable, so the whole object.
--optimize size (each core's "size"): every file at -Os with MCU_OPTIMIZE_SIZE, linked together
with --gc-sections from the kernels' entry points (mcu_<kernel>() and mcu_band.c's functions), and
each file's share of the linked .text/.rodata/.data from the linker map: the DSP/MVE path
functions the generic paths do not call are dropped, as in a firmware's link.
The schedule: hello_fc's NAME.c and NAME_f32.c (three fully connected calls, tests/models/tiny.py)
compiled the same way, per kernel call."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emitter.boards import list_boards  # noqa: E402
from emitter.render.runtime_files import PATH_FILES  # noqa: E402
from emitter.resources import data_dir  # noqa: E402
from emitter.target.firmware import input_sections  # noqa: E402

RT = data_dir("mcu_runtime")
OUT = RT / "code_sizes.json"


def sources() -> list[str]:
    """Every .c a bundle can ship (kernels without their _ref.c tests-only twins, support/)."""
    files = [p for p in sorted((RT / "kernels").glob("*.c")) if not p.stem.endswith("_ref")]
    files += sorted((RT / "support").glob("*.c"))
    return [p.relative_to(RT).as_posix() for p in files]


ARM, RISCV = "arm-none-eabi-", "riscv64-unknown-elf-"


def tools(flags: list[str]) -> str:
    """The cross tools' prefix for a core's flags (RISC-V boards: -march=rv...)."""
    return RISCV if any(f.startswith("-march=rv") for f in flags) else ARM


def compile_one(src: Path, flags: list[str], includes: list[Path], work: Path, opt: str = "-O2") -> Path:
    obj = work / (src.stem + ".o")
    libc = ["--specs=picolibc.specs"] if tools(flags) == RISCV else []  # Debian's riscv gcc has no libc headers
    subprocess.run([tools(flags) + "gcc", *flags, *libc, opt, "-std=c99", "-ffunction-sections", "-fdata-sections",
                    *(f"-I{i}" for i in includes), "-c", str(src), "-o", str(obj)], check=True)
    return obj


def size_of(src: Path, flags: list[str], includes: list[Path], work: Path, opt: str = "-O2") -> int:
    obj = compile_one(src, flags, includes, work, opt)
    out = subprocess.run([tools(flags) + "size", str(obj)], capture_output=True, text=True, check=True).stdout
    text, data = out.splitlines()[1].split()[:2]
    return int(text) + int(data)


def linked_sizes(objects: dict[str, Path], flags: list[str], work: Path) -> dict[str, int]:
    """Flash bytes of each object (by source name) in one --gc-sections link of all of them, rooted
    at every kernel's entry point and mcu_band.c's functions (undefined library calls ignored)."""
    roots = [Path(f).stem for f in objects if f.startswith("kernels/") and
             not Path(f).stem.endswith(tuple(f"_{s}" for s in PATH_FILES))]
    band = [f for f in objects if f == "support/mcu_band.c"]
    for f in band:
        nm = subprocess.run([tools(flags) + "nm", "--defined-only", "-g", str(objects[f])], capture_output=True,
                            text=True, check=True).stdout
        roots += [line.split()[2] for line in nm.splitlines() if line.split()[1] == "T"]
    elf, map_file = work / "linked.elf", work / "linked.map"
    subprocess.run([tools(flags) + "gcc", *flags, "-nostdlib", "-nostartfiles", "-Wl,--gc-sections",
                    "-Wl,--unresolved-symbols=ignore-all", f"-Wl,-Map={map_file}", f"-Wl,--entry={roots[0]}",
                    *(f"-Wl,-u,{r}" for r in roots), *map(str, objects.values()), "-o", str(elf)], check=True)
    by_object = {obj.name: name for name, obj in objects.items()}
    out = dict.fromkeys(objects, 0)
    for output, size, origin in input_sections(map_file):
        name = by_object.get(Path(origin).name)
        if name is not None and output.startswith((".text", ".rodata", ".data")):
            out[name] += size
    return out


def cores() -> dict[str, tuple[list[str], str]]:
    """One board's CPU flags and instruction set per core (the generic board of that core where
    there is one)."""
    out: dict[str, tuple[list[str], str]] = {}
    for b in sorted(list_boards(), key=lambda b: (not b.is_generic, b.name)):
        out.setdefault(b.core, (list(b.cflags), b.isa))
    return out


def measure(core: str, flags: list[str], isa: str, optimize: str = "speed") -> dict[str, object]:
    from emitter.compiler import compile_model
    from emitter.optimize import OPT_FLAGS
    from emitter.render.bundle import render_bundle
    from tests.models.tiny import HELLO

    includes = [RT / "include", RT / "kernels", RT / "support"]
    opt = OPT_FLAGS[optimize]
    with tempfile.TemporaryDirectory(prefix="mcugen-codesize-") as tmp:
        work = Path(tmp)
        # as the bundle's mcu_config.h defines them (emitter/optimize.py: config_header)
        planned_c = ["-DMCU_PLANNED_FOR_C"] if optimize == "size" or isa == "c" else []
        if optimize == "size":
            cflags = [*flags, "-DMCU_OPTIMIZE_SIZE", *planned_c]
            objects = {f: compile_one(RT / f, cflags, includes, work, opt) for f in sources()}
            files = linked_sizes(objects, flags, work)
        else:
            files = {f: size_of(RT / f, [*flags, *planned_c], includes, work, opt) for f in sources()}
        c = compile_model(HELLO, name="hello_fc", optimize=optimize)
        bundle = work / "b"
        # board "host": no code estimate in its report.json (this table does not exist yet)
        for rel, data in render_bundle(c, " ".join(flags), "host").items():
            (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
            (bundle / rel).write_bytes(data)
        schedule = sum(size_of(bundle / f, flags, [bundle, bundle / "mcu_runtime" / "include"], work, opt)
                       for f in ("hello_fc.c", "hello_fc_f32.c"))
        calls = sum(1 for p in c.prepared if p.kernel)
    out: dict[str, object] = {"files": files, "per_kernel_call": -(-schedule // calls)}
    if optimize == "speed":
        out = {"flags": " ".join(flags), **out, "size": measure(core, flags, isa, "size")}
    return out


def table(only: str | None = None) -> dict[str, object]:
    version = subprocess.run(["arm-none-eabi-gcc", "-dumpversion"], capture_output=True, text=True,
                             check=True).stdout.strip()
    return {"compiler": f"arm-none-eabi-gcc {version} -O2",
            "cores": {core: measure(core, flags, isa) for core, (flags, isa) in cores().items()
                      if only in (None, core)}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare with the committed table instead of writing it")
    args = p.parse_args()
    new = json.dumps(table(), indent=1, sort_keys=True) + "\n"
    if args.check:
        if OUT.read_text() != new:
            print(f"{OUT} is stale: run python scripts/code_sizes.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(new)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
