"""Per-layer instruction profiles in QEMU (`mcugen verify --profile`, benchmarks/cmsis_nn.py).

The bundle is built unchanged except for its <PREFIX>_AFTER_LAYER hook, which the profile glue
(templates/model_glue.h.j2, layer_profile=True) turns into the lap marker of mcu_markers.h; the
QEMU plugin then reports, per inference, the instructions between consecutive markers. The hook
is one extra instruction per layer and may change the compiler's register allocation around the
calls, so a profile's total is within a fraction of a percent of the plain build's count, which
stays the figure of record.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from emitter.compiler import Compiled
from emitter.kernels import kernel_path
from emitter.optimize import CMSIS_OPT_FLAGS, OPT_FLAGS
from emitter.report.names import NAME_WIDTH, short_name

if TYPE_CHECKING:
    from emitter.boards import Board

# -include finds model_glue.h through the glue folder on the include path (SConstruct's CPPPATH).
PROFILE_CFLAGS = ("-include", "model_glue.h")


@dataclass(frozen=True)
class LayerCost:
    index: int
    name: str
    op: str
    kernel: str
    macs: int
    instructions: int  # median over the samples
    path: str | None = None  # the kernel's code path (its twin's path(), as the C dispatcher takes it)


@dataclass(frozen=True)
class Profile:
    board: str
    layers: tuple[LayerCost, ...]
    total: int  # median instructions per inference of the profile build
    tail: int  # after the last layer's hook (return to the caller)

    def table(self, name_width: int = NAME_WIDTH) -> str:
        rows = [f"{'#':>3}  {'layer':<{name_width}} {'kernel':<36} {'MACs':>11} {'instructions':>13} {'share':>6} "
                f"{'instr/MAC':>9}"]
        for lay in self.layers:
            name = short_name(lay.name, name_width)
            per_mac = f"{lay.instructions / lay.macs:.2f}" if lay.macs else ""
            kernel = lay.kernel + (f" ({lay.path})" if lay.path else "")
            rows.append(f"{lay.index:>3}  {name:<{name_width}} {kernel:<36} {lay.macs:>11,} "
                        f"{lay.instructions:>13,} {100.0 * lay.instructions / max(self.total, 1):>5.1f}% {per_mac:>9}")
        rows.append(f"     {'(return to the caller)':<{name_width}} {'':<36} {'':>11} {self.tail:>13,}")
        rows.append(f"     {'total (profile build)':<{name_width}} {'':<36} {'':>11} {self.total:>13,}")
        return "\n".join(rows)


def profile_title(c: Compiled, board: str) -> str:
    """The heading of the per-layer table: the board and the compiler flags it was measured with."""
    return (f"instructions per layer ({board}, bundle {OPT_FLAGS[c.optimize]}"
            + (f", CMSIS-NN {CMSIS_OPT_FLAGS[c.optimize]}" if c.cmsis_path else "") + "; median of the samples):")


def profile_layers(c: Compiled, bundle: Path, board: Board, samples: list[list[np.ndarray]], work: Path,
                   cmsis_opt: str | None = None) -> Profile:
    """Build the profile firmware for `board` (the bundle at its --optimize's flags; CMSIS-NN, if
    any, at cmsis_opt, default those of --optimize), run `samples` in
    QEMU, and split the count per layer."""
    from emitter.errors import VerifyError
    from emitter.render.bundle import BundleBuilder
    from emitter.verify.harness import run_in_qemu, write_glue

    # a streamed segment's layers run inside one loop: its hook (and cost) is its last layer's
    layers = [lay for lay in BundleBuilder(c).context()["layers"] if not lay.inside]
    write_glue(c, work / "glue", layer_profile=True)
    _, run = run_in_qemu(bundle, work / "glue", board, work, samples, PROFILE_CFLAGS, cmsis_nn=c.cmsis_path,
                         cmsis_opt=cmsis_opt or CMSIS_OPT_FLAGS[c.optimize], run_name="run", opt=OPT_FLAGS[c.optimize])
    laps = np.array(run.laps, dtype=np.int64)
    if laps.ndim != 2 or laps.shape != (len(samples), len(layers)):
        raise VerifyError(f"the profile build reported {laps.shape} laps for {len(samples)} samples x "
                          f"{len(layers)} layers")
    totals = np.array(run.instructions, dtype=np.int64)
    per_layer = np.median(laps, axis=0)
    costs = []
    for lay, v in zip(layers, per_layer, strict=True):
        seg = c.plan.schedule.segment_at(lay.index)
        if seg is not None and c.plan.modes.get(seg.first) == "rows":  # the whole segment's cost
            costs.append(LayerCost(lay.index, lay.name, lay.op, f"layers {seg.first}-{seg.last} streamed",
                                   sum(c.prepared[s.step].macs for s in seg.stages), int(round(v))))
        else:
            p = c.prepared[lay.index]
            costs.append(LayerCost(lay.index, lay.name, lay.op, lay.kernel, lay.macs, int(round(v)),
                                   kernel_path(p.kernel, p.params, p.operands, c.plan_isa)))
    total = int(round(float(np.median(totals))))
    tail = int(round(float(np.median(totals - laps.sum(axis=1)))))
    return Profile(board.name, tuple(costs), total, tail)
