#!/usr/bin/env python3
"""README.md's "Expected demo output" block is the demo's printout, from a run:

    python scripts/readme_demo.py            # run the demo, rewrite the block
    python scripts/readme_demo.py --check    # run the demo, exit 1 if the block differs

The demo (examples/run_demo.py, what scripts/demo.sh runs) runs with --out out/digits in a
temporary folder; the block is its stdout without the `wrote ...` line (it holds the time taken).
The line above the block names the compiler, QEMU and onnxruntime it was measured with. With another
compiler or QEMU only the instruction count and firmware sizes may differ; with another onnxruntime
only the lines that quote onnxruntime's own figures; on another CPU the lines about onnxruntime's
optimized session (host_neutral()). So the test compares those lines only where the versions match
and never the host's (version_dependent())."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
INTRO = "Expected demo output ("
TOOL_LINES = ("instructions per inference", "firmware:", "code beyond the weights")  # compiler, QEMU
ORT_WORD = "onnxruntime"  # a line naming onnxruntime quotes its figures, which depend on its version


def tool_versions() -> str:
    gcc = subprocess.run(["arm-none-eabi-gcc", "-dumpversion"], capture_output=True, text=True,
                         check=True).stdout.strip()
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True,
                          check=True).stdout.split()[3]
    return f"arm-none-eabi-gcc {gcc}, QEMU {qemu}"


def ort_version() -> str:
    import onnxruntime

    return f"onnxruntime {onnxruntime.__version__}"


def versions() -> str:
    return f"{tool_versions()}, {ort_version()}"


OPTIMIZED_NOTE = "   (a default, optimized onnxruntime session:"  # examples/run_demo.py's accuracy line


def host_neutral(line: str) -> str | None:
    """The line without what depends on the host CPU, None where all of it does: onnxruntime's
    optimized session runs integer kernels that depend on it (u8s8 pair sums saturate without
    AVX-512 VNNI, emitter/verify/run.py ort_optimized_lines), so its lines, and whether they and the
    accuracy line's note on it are printed at all, differ from machine to machine."""
    text = line.split(OPTIMIZED_NOTE, 1)[0].rstrip()
    stripped = text.strip()
    if (ORT_WORD in stripped and "optimized" in stripped) or stripped.startswith(
            ("cause: its u8s8", "see docs/onnxruntime_optimized_graph.md")):
        return None
    return text


def version_dependent(readme: str, line: str) -> bool:
    """True for a block line whose figure depends on a tool version other than the one the
    README's intro names, or only on the host CPU (host_neutral), so it cannot be compared here."""
    intro = readme.splitlines()[block(readme)[0]]
    if line.strip().startswith(TOOL_LINES) and f"({tool_versions()}" not in intro:
        return True
    return host_neutral(line) is None or (ORT_WORD in line and f", {ort_version()};" not in intro)


def demo_output() -> list[str]:
    """The demo's stdout lines (run from a temporary folder holding a link to examples/)."""
    with tempfile.TemporaryDirectory(prefix="mcugen-demo-") as tmp:
        (Path(tmp) / "examples").symlink_to(ROOT / "examples")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        res = subprocess.run([sys.executable, "examples/run_demo.py", "--out", "out/digits"],
                             cwd=tmp, env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"the demo failed ({res.returncode}):\n{res.stdout}{res.stderr}")
    return [line for line in res.stdout.splitlines() if not line.startswith("wrote ")]


def block(readme: str) -> tuple[int, int, int]:
    """(intro, start, end) line indexes: the intro sentence, and the quoted block after it."""
    lines = readme.splitlines()
    intro = next(k for k, line in enumerate(lines) if line.startswith(INTRO))
    start = next(k for k in range(intro, len(lines)) if not lines[k].strip()) + 1
    end = start
    while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return intro, start, end


def quoted(readme: str) -> list[str]:
    _, start, end = block(readme)
    return [line[4:] for line in readme.splitlines()[start:end]]


def intro_lines(tools: str) -> list[str]:
    return [f"{INTRO}{tools}; written by `python scripts/readme_demo.py`",
            "from a run, without the `wrote` line and its timing):"]


def rewrite(readme: str, out: list[str], tools: str) -> str:
    lines = readme.splitlines()
    intro, start, end = block(readme)
    body = [("    " + line).rstrip() for line in out]
    return "\n".join(lines[:intro] + intro_lines(tools) + [""] + body + lines[end:]) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare instead of rewriting")
    args = p.parse_args()
    text = README.read_text()
    new = rewrite(text, demo_output(), versions())
    if args.check:
        if new != text:
            print("README.md's demo block differs from the demo's printout: python scripts/readme_demo.py",
                  file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    print(f"rewrote the demo block of {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
