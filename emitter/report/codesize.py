"""Estimated code bytes of a bundle on its core, for the flash budget and the summary.

The mcu_runtime/ files a bundle ships are measured once per core and --optimize mode by
scripts/code_sizes.py into mcu_runtime/code_sizes.json, which tests/test_code_size_estimate.py checks
against a fresh measurement: speed, arm-none-eabi-gcc -O2 with the board's CPU flags, .text + .data
of each object (every path of a kernel is reachable, so a bundle links each whole); size, -Os with
MCU_OPTIMIZE_SIZE, each file's share of one --gc-sections link (the DSP/MVE paths drop out). The
schedule (NAME.c, NAME_f32.c) is counted as the measured bytes per kernel call of a small model.
CMSIS-NN's own functions (the cmsis-nn backend) are not in it. `mcugen --verify` measures the real
figure from the linked firmware (emitter.target.firmware.Firmware.model_code).

The bundle's code figure is defined here once (breakdown(), code_figure()): the estimate is the sum
of its parts -- each kernel's shipped files, the shared support files, any other shipped runtime
file, and the schedule -- and the summary, report.json ("code_estimate", "code") and report.html
all state that one sum; where `--verify` measured the linked firmware, the measured figure
replaces it (report.json's "code" says which it is)."""
from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from emitter.resources import data_dir

TABLE = "code_sizes.json"


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((data_dir("mcu_runtime") / TABLE).read_text())
    return data


def code_bytes(files: Iterable[str], kernel_calls: int, core: str,
               optimize: str = "speed") -> tuple[int, dict[str, int]]:
    """(estimated code bytes, bytes per shipped mcu_runtime/ .c file) of a bundle holding `files`
    (bundle-relative paths) with `kernel_calls` kernel calls, on `core` (cortex-m4's figures for a
    core the table does not hold), emitted with --optimize `optimize`."""
    cores = table()["cores"]
    sizes = cores.get(core, cores["cortex-m4"])
    sizes = sizes["size"] if optimize == "size" else sizes
    per_file = {f: sizes["files"][f.removeprefix("mcu_runtime/")] for f in sorted(files)
                if f.startswith("mcu_runtime/") and f.endswith(".c")
                and f.removeprefix("mcu_runtime/") in sizes["files"]}
    return sum(per_file.values()) + kernel_calls * sizes["per_kernel_call"], per_file


def breakdown(files: Iterable[str], kernels: Iterable[str], kernel_calls: int, core: str,
              optimize: str = "speed") -> dict[str, Any]:
    """The estimate of code_bytes() in parts: {"kernels": {kernel: bytes of its shipped files},
    "support": shared support/ files, "other": any other shipped runtime file, "schedule": the
    kernel calls, "bytes": their sum (= code_bytes()'s)}."""
    total, per_file = code_bytes(files, kernel_calls, core, optimize)
    names = sorted(kernels, key=len, reverse=True)  # the longest name first: mcu_conv2d_s8 vs mcu_conv2d_s8_x
    per_kernel: dict[str, int] = {}
    support = other = 0
    for f, v in per_file.items():
        stem = f.removeprefix("mcu_runtime/").removesuffix(".c")
        owner = next((k for k in names if stem.startswith("kernels/") and
                      (stem == f"kernels/{k}" or stem.startswith(f"kernels/{k}_"))), None)
        if owner is not None:
            per_kernel[owner] = per_kernel.get(owner, 0) + v
        elif stem.startswith("support/"):
            support += v
        else:
            other += v
    cores = table()["cores"]
    sizes = cores.get(core, cores["cortex-m4"])
    sizes = sizes["size"] if optimize == "size" else sizes
    schedule = kernel_calls * sizes["per_kernel_call"]
    assert sum(per_kernel.values()) + support + other + schedule == total
    return {"kernels": dict(sorted(per_kernel.items())), "support": support, "other": other,
            "schedule": schedule, "bytes": total}


def code_figure(data: dict[str, Any], board: str | None = None) -> dict[str, Any] | None:
    """The one code figure of a bundle's report.json `data`: {"bytes", "source": "measured" or
    "estimate", "board", "estimate_bytes"}: the bytes `--verify` measured in the linked firmware
    on `board` (the bundle's own when None) when it did, else the estimate; None without either."""
    board = board or data.get("board")
    est = data.get("code_estimate", {}).get("bytes")
    measured = data.get("measured", {}).get(board, {}).get("code_bytes")
    if measured is not None:
        return {"bytes": measured, "source": "measured", "board": board, "estimate_bytes": est,
                "about": f"measured by --verify: the linked firmware's flash beyond the weights on {board} "
                         f"({data.get('measured', {}).get(board, {}).get('opt', '')})".replace(" ()", "")}
    if est is None:
        return None
    return {"bytes": est, "source": "estimate", "board": board, "estimate_bytes": est,
            "about": "estimate from mcu_runtime/code_sizes.json; --verify measures it"}
