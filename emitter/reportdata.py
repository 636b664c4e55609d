"""The memory plan and the code-size estimate as report.json states them (render.report() calls these).

  "memory": {"arena_bytes", "liveness_lower_bound_bytes", "steps",
             "buffers": [{"name", "offset", "bytes", "first", "last", "kind"}, ...]}
      one entry per planned arena buffer, in the planner's order (by offset); `first`..`last` is its
      live range in steps (= layers), inclusive; kind "tensor" (an activation) or "scratch" (a
      kernel's scratch, named "<node>#scratch"), "ring" (the last rows of a streamed layer's output,
      "<tensor>#ring") or "input" (a graph input the plan keeps in the arena).
  "code_estimate": {"about", "toolchain", "optimize", "kernels": {kernel: bytes}, "support": bytes,
                    "bytes"}
      flash code of each portable kernel the bundle calls, from mcu_runtime/code_sizes.json (made by
      scripts/code_sizes.py per core and --optimize mode; emitter/codesize.py reads it for the flash
      budget too), and `bytes`, the whole estimate (+ the schedule) the summary and the flash budget
      state; absent for a board it does not know. An estimate, not a measurement of this bundle:
      `--verify` adds the linked firmware's "code_bytes" under "measured".
"""
from __future__ import annotations

from typing import Any

from emitter.planner import Buffer, Plan


def kind(b: Buffer, inputs: tuple[str, ...]) -> str:
    """scratch, ring (the rows a streamed layer keeps), input (a graph input in the arena) or tensor."""
    return "input" if b.kind == "tensor" and b.name in inputs else b.kind


def memory(plan: Plan, steps: int, inputs: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "arena_bytes": plan.arena_size, "liveness_lower_bound_bytes": plan.lower_bound, "steps": steps,
        "buffers": [{"name": b.name, "offset": b.offset, "bytes": b.size, "first": b.first, "last": b.last,
                     "kind": kind(b, inputs)} for b in plan.buffers],
    }


def code_estimate(board: str, kernels: list[str], optimize: str = "speed", sources: tuple[str, ...] = (),
                  calls: int = 0) -> dict[str, Any]:
    """{"code_estimate": ...}: the code bytes of each portable kernel the bundle calls (its shipped
    mcu_runtime/ files) and of the shared support code on the board's core, from the one code-size
    table (emitter/codesize.py, mcu_runtime/code_sizes.json), and the estimate of the bundle's
    code (its mcu_runtime/ `sources` and `calls` kernel calls); {} for a board it does not know."""
    from emitter.boards import load_board
    from emitter.codesize import code_bytes, table
    from emitter.errors import McugenError

    try:
        core = load_board(board).core
    except McugenError:
        return {}
    cores = table()["cores"]
    if core not in cores:
        return {}
    sizes = cores[core]["size"] if optimize == "size" else cores[core]
    files = sizes["files"]
    per_kernel = {}
    for k in kernels:
        own = [f for f in files
               if f == f"kernels/{k}.c" or (f.startswith(f"kernels/{k}_") and not f.endswith("_ref.c"))]
        if own:
            per_kernel[k] = sum(files[f] for f in own)
    support = sum(v for f, v in files.items() if f.startswith("support/"))
    about = ("text + data of each shipped mcu_runtime/ file compiled alone with the core's flags"
             if optimize == "speed" else "each shipped mcu_runtime/ file's share of a --gc-sections link at -Os "
             "with MCU_OPTIMIZE_SIZE")
    return {"code_estimate": {"about": about + " (mcu_runtime/code_sizes.json, scripts/code_sizes.py)",
                              "toolchain": table()["compiler"], "support": support, "kernels": per_kernel}
            | {"optimize": optimize, "bytes": code_bytes(sources, calls, core, optimize)[0]}}
