"""Run a compiled model's bundle in QEMU on int8 samples: the memory tests' target check."""
from __future__ import annotations

import statistics
from pathlib import Path

from emitter.boards import Board
from emitter.compiler import Compiled
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.firmware import build_firmware
from emitter.target.qemu import run_qemu
from emitter.verify.harness import Samples, pack, unpack


def qemu_outputs(c: Compiled, board: Board, samples: Samples, glue: Path, work: Path,
                 cmsis_nn: Path | None = None) -> Samples:
    """The bundle of `c` for `board` (written to work/bundle), cross-compiled with a host run's
    test glue (`glue`: run_host's work/glue) and run in QEMU on `samples`: its outputs."""
    return qemu_counted(c, board, samples, glue, work, cmsis_nn)[0]


def qemu_counted(c: Compiled, board: Board, samples: Samples, glue: Path, work: Path,
                 cmsis_nn: Path | None = None) -> tuple[Samples, int]:
    """qemu_outputs(), and the median instructions per inference."""
    bundle = work / "bundle"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle)
    fw = build_firmware(bundle, glue, board, work / "fw", cmsis_nn=cmsis_nn)
    run = work / "run"
    run.mkdir()
    (run / "input.bin").write_bytes(pack(samples))
    got = run_qemu(fw.elf, fw.board, run)
    return unpack(c, (run / "output.bin").read_bytes(), len(samples)), int(statistics.median(got.instructions))
