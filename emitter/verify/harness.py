"""The target harness shared by `mcugen verify`, `mcugen debug` and the per-layer profile.

A bundle runs under mcu_runtime/harness/harness_main.c, presented to it by a generated
model_glue.h (templates/model_glue.h.j2), in a run folder:

    input.bin   every sample's inputs, int8, in the caller's layout (pack)
    output.bin  every sample's outputs, written by the harness (unpack)
    layers.bin  per-layer dump records, when built with the layer hook (emitter/verify/debug/)

built with the host gcc and run (run_on_host), or built for a board and run in QEMU (run_in_qemu).
"""
from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from emitter.errors import UsageError

if TYPE_CHECKING:
    from emitter.boards import Board
    from emitter.compiler import Compiled
    from emitter.target.firmware import Firmware
    from emitter.target.qemu import QemuRun

Samples = list[list[np.ndarray]]  # per sample, one int8 array per graph input (or output)

INPUT_FILE = "input.bin"
OUTPUT_FILE = "output.bin"
LAYERS_FILE = "layers.bin"


def write_glue(c: Compiled, folder: Path, *, layer_dump: bool = False, layer_profile: bool = False) -> None:
    """folder/model_glue.h for the harness; layer_dump adds the per-layer dump hook (debug),
    layer_profile the per-layer lap marker (profile)."""
    from emitter.render.bundle import BundleBuilder, environment

    ctx = BundleBuilder(c).context()
    if layer_dump:
        ctx["layer_dump"] = True
    if layer_profile:
        ctx["layer_profile"] = True
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model_glue.h").write_text(environment().get_template("model_glue.h.j2").render(ctx))


def pack(samples: Samples) -> bytes:
    """input.bin: every sample's inputs in turn, as int8 (int16 arrays as little-endian int16)."""
    return b"".join(np.asarray(x).astype("<i2" if np.asarray(x).dtype == np.int16 else np.int8).tobytes()
                    for s in samples for x in s)


def unpack(c: Compiled, raw: bytes, count: int) -> Samples:
    """output.bin of `count` samples -> per sample, the model's outputs in their shapes."""
    shapes = c.output_shapes
    dtypes = [np.dtype(c.graph.t(o).dtype).newbyteorder("<") for o in c.graph.outputs]  # int8, or int16
    per = sum(int(np.prod(s)) * d.itemsize for s, d in zip(shapes, dtypes, strict=True))
    if len(raw) != per * count:
        raise UsageError(f"output.bin has {len(raw)} bytes, expected {per * count}")
    out = []
    for k in range(count):
        row, off = [], k * per
        for s, d in zip(shapes, dtypes, strict=True):
            size = int(np.prod(s)) * d.itemsize
            row.append(np.frombuffer(raw[off:off + size], dtype=d).astype(d.newbyteorder("=")).reshape(s))
            off += size
        out.append(row)
    return out


def run_folder(folder: Path, samples: Samples, stale: Sequence[str] = ()) -> Path:
    """A run folder holding input.bin for `samples`, with the `stale` files of an earlier run removed."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (folder / name).unlink(missing_ok=True)
    (folder / INPUT_FILE).write_bytes(pack(samples))
    return folder


def run_on_host(bundle: Path, glue: Path, work: Path, samples: Samples, cflags: Sequence[str] = (), *,
             werror: bool = False, cmsis_nn: Path | None = None,
             stale: Sequence[str] = (), opt: str = "-O2") -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Build bundle + harness with the host gcc under work/host and run it on `samples` in
    work/host_run; returns (run folder, the finished process: check its returncode)."""
    from emitter.target.firmware import build_host

    exe = build_host(bundle, glue, work / "host", cflags, opt=opt, werror=werror, cmsis_nn=cmsis_nn)
    run_dir = run_folder(work / "host_run", samples, stale)
    res = subprocess.run([str(exe)], cwd=run_dir, capture_output=True, text=True, check=False)
    return run_dir, res


def run_in_qemu(bundle: Path, glue: Path, board: Board, work: Path, samples: Samples,
               cflags: Sequence[str] = (), *, cmsis_nn: Path | None = None, cmsis_opt: str = "-Ofast",
               count_instructions: bool = True, check: bool = True, stale: Sequence[str] = (),
               run_name: str = "qemu_run", opt: str = "-O2", cc: str = "gcc",
               arena_prefix: str | None = None, pool_accesses: bool | None = None) -> tuple[Firmware, QemuRun]:
    """Cross-build bundle + harness for `board` under work/fw and run it on `samples` in QEMU in
    work/<run_name> (see emitter.target.qemu.run_qemu for count_instructions and check); opt: the
    bundle's optimisation (compiler.OPT_FLAGS); cc: the compiler (gcc or a clang).

    arena_prefix: the bundle's C prefix; its arena arrays (one per pool, see
    emitter.target.placement.arena_ranges) are then the plugin's ranges, their bytes loaded and
    stored counted in QemuRun.accesses, when pool_accesses is True, or None and the ELF has two
    arrays or more (memory callbacks on every access: VWW, 2 inferences, 0.27 -> 0.38 s)."""
    from emitter.target.firmware import build_firmware
    from emitter.target.placement import arena_ranges
    from emitter.target.qemu import run_qemu

    fw = build_firmware(bundle, glue, board, work / "fw", opt, cflags=cflags, cmsis_nn=cmsis_nn, cmsis_opt=cmsis_opt,
                        cc=cc)
    ranges = arena_ranges(fw.elf, board, arena_prefix) if arena_prefix and count_instructions \
        and pool_accesses is not False else {}
    if pool_accesses is None and len(ranges) < 2:
        ranges = {}
    run_dir = run_folder(work / run_name, samples, stale)
    return fw, run_qemu(fw.elf, board, run_dir, count_instructions=count_instructions, check=check,
                        ranges=ranges or None)
