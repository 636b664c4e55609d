"""Estimated code bytes of a bundle on its core, for the flash budget and the summary.

The mcu_runtime/ files a bundle ships are measured once per core and --optimize mode by
scripts/code_sizes.py into mcu_runtime/code_sizes.json, which tests/test_code_size_estimate.py checks
against a fresh measurement: speed, arm-none-eabi-gcc -O2 with the board's CPU flags, .text + .data
of each object (every path of a kernel is reachable, so a bundle links each whole); size, -Os with
MCU_OPTIMIZE_SIZE, each file's share of one --gc-sections link (the DSP/MVE paths drop out). The
schedule (NAME.c, NAME_f32.c) is counted as the measured bytes per kernel call of a small model.
CMSIS-NN's own functions (the cmsis-nn backend) are not in it. `mcugen --verify` measures the real
figure from the linked firmware (emitter.target.firmware.Firmware.model_code)."""
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
