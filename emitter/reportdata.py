"""The memory plan and the code-size estimate as report.json states them (render.report() calls these).

  "memory": {"arena_bytes", "liveness_lower_bound_bytes", "steps",
             "buffers": [{"name", "offset", "bytes", "first", "last", "kind"}, ...]}
      one entry per planned arena buffer, in the planner's order (by offset); `first`..`last` is its
      live range in steps (= layers), inclusive; kind "tensor" (an activation) or "scratch" (a
      kernel's scratch, named "<node>#scratch"). Other planners may add kinds and optional keys.
  "code_estimate": {"about", "toolchain", "kernels": {kernel: bytes}, "support": bytes}
      flash code of each portable kernel the bundle calls, from boards/kernel_code_sizes.json (made
      by scripts/kernel_code_sizes.py for the board's exact cflags); absent when the table has no
      entry for them. An estimate per kernel object, not a measurement of this bundle.
"""
from __future__ import annotations

import functools
import json
from typing import Any

from emitter.planner import Plan
from emitter.resources import data_dir

CODE_TABLE = "kernel_code_sizes.json"


def memory(plan: Plan, steps: int) -> dict[str, Any]:
    return {
        "arena_bytes": plan.arena_size, "liveness_lower_bound_bytes": plan.lower_bound, "steps": steps,
        "buffers": [{"name": b.name, "offset": b.offset, "bytes": b.size, "first": b.first, "last": b.last,
                     "kind": "scratch" if b.name.endswith("#scratch") else "tensor"} for b in plan.buffers],
    }


@functools.lru_cache(maxsize=1)
def code_table() -> dict[str, Any]:
    path = data_dir("boards") / CODE_TABLE
    return json.loads(path.read_text()) if path.is_file() else {}


def code_estimate(cpu_flags: str, kernels: list[str]) -> dict[str, Any]:
    """{"code_estimate": ...} for `kernels` (the portable ones; others are not in the table) built
    with `cpu_flags`, or {} when the table has no entry for these flags."""
    table = code_table()
    entry = table.get("cflags", {}).get(cpu_flags)
    if entry is None:
        return {}
    return {"code_estimate": {"about": table["about"], "toolchain": table["toolchain"], "support": entry["support"],
                              "kernels": {k: entry["kernels"][k] for k in kernels if k in entry["kernels"]}}}
