#!/usr/bin/env python3
"""Measures the code bytes of every mcu_runtime/ file a bundle may ship, on every core of boards/,
into mcu_runtime/code_sizes.json (read by emitter/codesize.py for the flash budget):

    python scripts/code_sizes.py            # rewrite the table (after changing a kernel)
    python scripts/code_sizes.py --check    # exit 1 if the table is stale (tests do this per core)

Each file: arm-none-eabi-gcc -O2 -std=c99 <board CPU flags> -ffunction-sections -c, then
.text + .data of the object (arm-none-eabi-size). The schedule: hello_fc's NAME.c and NAME_f32.c
(three fully connected calls, tests/models/tiny.py) compiled the same way, per kernel call."""
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
from emitter.resources import data_dir  # noqa: E402

RT = data_dir("mcu_runtime")
OUT = RT / "code_sizes.json"


def sources() -> list[str]:
    """Every .c a bundle can ship (kernels without their _ref.c tests-only twins, support/)."""
    files = [p for p in sorted((RT / "kernels").glob("*.c")) if not p.stem.endswith("_ref")]
    files += sorted((RT / "support").glob("*.c"))
    return [p.relative_to(RT).as_posix() for p in files]


def size_of(src: Path, flags: list[str], includes: list[Path], work: Path) -> int:
    obj = work / (src.stem + ".o")
    subprocess.run(["arm-none-eabi-gcc", *flags, "-O2", "-std=c99", "-ffunction-sections", "-fdata-sections",
                    *(f"-I{i}" for i in includes), "-c", str(src), "-o", str(obj)], check=True)
    out = subprocess.run(["arm-none-eabi-size", str(obj)], capture_output=True, text=True, check=True).stdout
    text, data = out.splitlines()[1].split()[:2]
    return int(text) + int(data)


def cores() -> dict[str, list[str]]:
    """One board's CPU flags per core (the generic board of that core where there is one)."""
    out: dict[str, list[str]] = {}
    for b in sorted(list_boards(), key=lambda b: (not b.is_generic, b.name)):
        out.setdefault(b.core, list(b.cflags))
    return out


def measure(core: str, flags: list[str]) -> dict[str, object]:
    from emitter.compiler import compile_model
    from emitter.render import render_bundle
    from tests.models.tiny import HELLO

    includes = [RT / "include", RT / "kernels", RT / "support"]
    with tempfile.TemporaryDirectory(prefix="mcugen-codesize-") as tmp:
        work = Path(tmp)
        files = {f: size_of(RT / f, flags, includes, work) for f in sources()}
        c = compile_model(HELLO, name="hello_fc")
        bundle = work / "b"
        for rel, data in render_bundle(c, " ".join(flags), core).items():
            (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
            (bundle / rel).write_bytes(data)
        schedule = sum(size_of(bundle / f, flags, [bundle, bundle / "mcu_runtime" / "include"], work)
                       for f in ("hello_fc.c", "hello_fc_f32.c"))
        calls = sum(1 for p in c.prepared if p.kernel)
    return {"flags": " ".join(flags), "files": files, "per_kernel_call": -(-schedule // calls)}


def table(only: str | None = None) -> dict[str, object]:
    version = subprocess.run(["arm-none-eabi-gcc", "-dumpversion"], capture_output=True, text=True,
                             check=True).stdout.strip()
    return {"compiler": f"arm-none-eabi-gcc {version} -O2",
            "cores": {core: measure(core, flags) for core, flags in cores().items() if only in (None, core)}}


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
