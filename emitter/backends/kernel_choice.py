"""Per layer and core, mcugen's kernel or CMSIS-NN's: the one with fewer executed instructions.

The figures are measured, never rules fitted to a few models (docs/kernel_choice.md):
- by default from the committed cost table of the board's core (cost_tables/<core>.json, written
  by `python scripts/cost_tables.py`: ~300 single-layer cases per core, both candidates counted in
  QEMU), interpolated by the rule below;
- with `--tune`, measured on the model's own layers (emitter/verify/tuning.py, cached).
The tables' planner rows ("planner": 1: band calls, lean calls, small layers; `python
scripts/cost_tables.py --planner`) are the memory planner's (emitter/plan/propose.py), not read here.

The rule, for a layer the table does not hold:
1. Only the table's cases of the same *group* count: kernel kind (conv, depthwise, FC, batch matmul), the code
   path mcugen's kernel takes on this layer (the twin's path(): "dsp", "mve" or "generic"), and the
   function CMSIS-NN's wrapper dispatches to (cmsis_fn: 1x1 fast, 1xN, generic, depthwise 3x3 /
   opt / generic, FC per tensor / per channel). No case of that group: CMSIS-NN.
2. Among them, the K=3 nearest in log2 space of (kh, kw, C_in, C_out, output rows, output columns,
   batches) plus strides, dilations and the depth multiplier, weighted (WEIGHTS: window, output
   channels, dilations, multiplier x2; input channels x1.5; output map (depthwise: x2) and strides
   x1; batches x0.5).
3. The predicted ratio ours/CMSIS-NN is their ratios' geometric mean, weighted by 1/(distance+0.1)^2;
   each candidate's predicted count is the neighbours' weighted instructions per MAC x the layer's
   MACs. mcugen's kernel runs where the predicted ratio is below 1.
Cores without a table use the table of a core with the same instruction set (DSP: cortex-m4, MVE:
cortex-m55); plain-C cores (no DSP, no MVE) keep CMSIS-NN, whose C mcugen's C does not beat.

4-bit weights (Shape.bits 4: mcugen's s4 kernels against CMSIS-NN's s4 calls, emitter/kernels/cmsis_s4.py)
are their own groups (the s4 wrappers' branches, cmsis_fn) with their own table rows
(`python scripts/cost_tables.py --s4`). mcugen's s4 kernel is the incumbent: where no s4 row of the
group was measured (a plain-C core, a core's table without s4 rows), it stays (source "unmeasured").
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from emitter.backends import cost_fit
from emitter.backends.cost_cases import Shape, shape_of
from emitter.calls import ConstArg, Prepared
from emitter.kernels import mcu_batch_matmul_s8 as bmm_twin
from emitter.kernels import mcu_conv2d_s4 as conv4_twin
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels import mcu_depthwise_conv2d_s4 as dw4_twin
from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin
from emitter.kernels import mcu_fully_connected_s4 as fc4_twin
from emitter.kernels import mcu_fully_connected_s8 as fc_twin

TABLES = Path(__file__).resolve().parent / "cost_tables"
SAME_ISA = {"dsp": "cortex-m4", "mve": "cortex-m55"}
NEIGHBOURS = 3
# Weight of each feature in the distance: the window and the channel counts decide a kernel's
# cost per MAC far more than the feature map's size (chosen by leave-one-out over the tables).
WEIGHTS = np.array([2, 2, 1.5, 2, 1, 1, 0.5, 1, 1, 2, 2, 2], dtype=np.float64)
DW_MAP_WEIGHT = 2.0  # depthwise: the per-row set-up makes the cost per MAC depend on the map size
# CMSIS-NN v7 arm_depthwise_conv_wrapper_s8 on MVE: in_c == 1 and out_c above this -> a convolution
DW_TO_CONV_ABOVE = 64


@dataclass(frozen=True)
class Choice:
    """One layer's candidates: instructions of mcugen's kernel and CMSIS-NN's, 'measured' (--tune,
    or the table holds this very shape) or 'table' (interpolated), and which runs."""
    index: int
    kernel: str
    ours: int
    cmsis: int
    source: str
    path: str

    @property
    def ours_wins(self) -> bool:
        return self.ours < self.cmsis or self.source == UNMEASURED


UNMEASURED = "unmeasured"  # an s4 layer whose group has no measured case: mcugen's kernel stays


def bias_of(p: Prepared) -> np.ndarray | None:
    """The bias of a portable conv/depthwise/FC call."""
    b = p.operands.get("bias")
    return b.data if isinstance(b, ConstArg) else None


def path_of(p: Prepared, isa: str) -> str:
    """The code path mcugen's kernel takes for this layer on `isa`."""
    twin: Any = {"mcu_conv2d_s8": conv_twin, "mcu_depthwise_conv2d_s8": dw_twin,
                 "mcu_fully_connected_s8": fc_twin, "mcu_batch_matmul_s8": bmm_twin,
                 "mcu_conv2d_s4": conv4_twin, "mcu_depthwise_conv2d_s4": dw4_twin,
                 "mcu_fully_connected_s4": fc4_twin}[p.kernel]
    if p.kernel == "mcu_fully_connected_s4":
        s = p.operands.get("kernel_sums")
        return str(twin.path(p.params, s.data if isinstance(s, ConstArg) else None, isa))
    return str(twin.path(p.params, bias_of(p), isa))


def conv_fn(s: Shape) -> str | None:
    """The 1x1 / 1xN branch both convolution wrappers (s8, s4) take first, None for the others."""
    if s.pt == s.pl == 0 and s.kh == s.kw == 1 and s.dh == s.dw == 1:
        return "1x1_fast" if s.sh == s.sw == 1 else "1x1"
    if s.h == 1 and s.dw == 1 and s.kh == 1 and s.sw * s.c_in % 4 == 0:
        return "1xn"
    return None


def cmsis_fn(s: Shape, isa: str) -> str:
    """The function arm_convolve_wrapper_s8 / arm_depthwise_conv_wrapper_s8 (v7) dispatches to; for
    4-bit weights, the s4 wrappers' (suffix _s4)."""
    if s.bits == 4:
        return cmsis_fn_s4(s, isa) + "_s4"
    if s.kind == "fc":
        return "fc_per_channel" if s.per_channel else "fc"
    if s.kind == "bmm":
        return "bmm"
    if s.kind == "conv":
        return conv_fn(s) or "conv"
    if isa == "mve" and s.c_in == 1 and s.c_out > DW_TO_CONV_ABOVE:
        return "dw_to_conv"
    if s.c_out == s.c_in and s.batches == 1 and s.dh == s.dw == 1:
        if isa != "mve" and s.kh == s.kw == 3 and s.pt <= 1 and s.pl <= 1:
            return "dw_3x3"
        return "dw_opt"
    return "dw"


def cmsis_fn_s4(s: Shape, isa: str) -> str:
    """The function arm_convolve_wrapper_s4 / arm_depthwise_conv_wrapper_s4 (v7) dispatches to."""
    if s.kind == "fc":
        return "fc"
    if s.kind == "conv":
        return conv_fn(s) or ("even" if isa == "mve" and s.kh * s.kw * s.c_in % 2 == 0 else "conv")
    return "dw_opt" if s.c_out == s.c_in and s.batches == 1 and s.dh == s.dw == 1 else "dw"


def features(s: Shape) -> np.ndarray:
    lg = [math.log2(max(v, 1)) for v in (s.kh, s.kw, s.c_in, s.c_out, s.out_h, s.out_w, s.batches)]
    rest = [s.sh - 1, s.sw - 1, s.dh > 1, s.dw > 1, math.log2(max(s.c_out // max(s.c_in, 1), 1))]
    v = WEIGHTS * np.array(lg + rest, dtype=np.float64)
    if s.kind == "dw":
        v[4:6] *= DW_MAP_WEIGHT
    return v


@dataclass(frozen=True)
class Row:
    shape: Shape
    path: str
    ours: int
    cmsis: int


@lru_cache(maxsize=8)
def load_table(core: str) -> tuple[Row, ...]:
    """The committed cost table of `core` (empty when there is none)."""
    f = TABLES / f"{core}.json"
    if not f.is_file():
        return ()
    data = json.loads(f.read_text())
    return tuple(Row(Shape.from_list(r["shape"]), r["path"], r["ours"], r["cmsis"])
                 for r in data["cases"] if r["cmsis"] is not None and not r.get("planner"))  # not the planner's


def table_for(core: str, isa: str) -> tuple[Row, ...]:
    rows = load_table(core)
    return rows if rows or isa not in SAME_ISA else load_table(SAME_ISA[isa])


_R = TypeVar("_R", "Row", "Cost")


def nearest(group: list[_R], s: Shape) -> tuple[list[_R], np.ndarray | None]:
    """The NEIGHBOURS cases of `group` nearest to shape `s` (distance of their features), nearest
    first, with their weights 1/(distance+0.1)^2; weights None when the nearest is `s` itself."""
    here = features(s)
    dist = np.array([float(np.linalg.norm(features(r.shape) - here)) for r in group])
    order = np.argsort(dist, kind="stable")[:NEIGHBOURS]
    near = [group[int(i)] for i in order]
    if dist[order[0]] == 0.0:
        return near, None
    return near, 1.0 / (dist[order] + 0.1) ** 2


def predict(rows: tuple[Row, ...], s: Shape, path: str, isa: str) -> tuple[int, int, bool] | None:
    """(ours, cmsis, exact) predicted for shape `s` whose kernel takes `path`, from the table rows;
    None when the table has no case of its group."""
    fn = cmsis_fn(s, isa)
    group = [r for r in rows if r.shape.kind == s.kind and r.shape.bits == s.bits and r.path == path
             and cmsis_fn(r.shape, isa) == fn]
    if not group:
        return None
    near, wts = nearest(group, s)
    if wts is None:
        return near[0].ours, near[0].cmsis, True
    log_ratio = sum(w * math.log(r.ours / r.cmsis) for w, r in zip(wts, near, strict=True)) / wts.sum()
    cmsis_per_mac = sum(w * r.cmsis / r.shape.macs for w, r in zip(wts, near, strict=True)) / wts.sum()
    cmsis = max(1, int(round(cmsis_per_mac * s.macs)))
    return max(1, int(round(cmsis * math.exp(log_ratio)))), cmsis, False


def choose(p: Prepared, index: int, core: str, isa: str,
           measured: tuple[int, int | None] | None = None) -> Choice | None:
    """The candidates of one layer on `core`, or None (not a conv/depthwise/FC layer, a plain-C
    core, or nothing measured of its kind). measured: (ours, cmsis) from --tune."""
    s = shape_of(p)
    if s is None or (isa not in ("dsp", "mve") and s.bits == 8):
        return None
    path = path_of(p, isa)
    if measured is not None and measured[1] is not None:
        return Choice(index, p.kernel, measured[0], measured[1], "measured", path)
    got = predict(table_for(core, isa), s, path, isa) if isa in ("dsp", "mve") else None
    if got is None and s.bits == 4:
        return Choice(index, p.kernel, 0, 0, UNMEASURED, path)
    if got is None:
        return None
    ours, cmsis, _ = got
    return Choice(index, p.kernel, ours, cmsis, "table", path)


def ours_is_faster(p: Prepared, var: str, core: str | None = None) -> str | None:
    """Why mcugen's kernel is faster than CMSIS-NN's on this layer for code path `var` ("c",
    "dsp", "mve") on `core` (default: the table of that instruction set's reference core); None
    where CMSIS-NN is predicted as fast or faster."""
    if var not in SAME_ISA or not p.kernel:
        return None
    ch = choose(p, 0, core or SAME_ISA[var], var)
    return reason(ch) if ch is not None and ch.ours_wins else None


def reason(ch: Choice) -> str:
    if ch.source == UNMEASURED:
        return (f"CMSIS-NN's 4-bit call was never measured against mcugen's on this core and kind of layer "
                f"({ch.path} path): mcugen's 4-bit kernel stays")
    return (f"{ch.ours:,} vs CMSIS-NN {ch.cmsis:,} instructions "
            f"({ch.ours / ch.cmsis:.2f}x, {ch.path} path, {ch.source})")


@lru_cache(maxsize=8)
def cmsis_costs(core: str, isa: str) -> tuple[Cost, ...]:
    """CMSIS-NN's counts of the core's table (of a core with the same ISA), each under its group
    "<mcugen's path>|<CMSIS-NN's function>" (predict's groups)."""
    return tuple(Cost(r.shape, f"{r.path}|{cmsis_fn(r.shape, isa)}", r.cmsis) for r in table_for(core, isa))


def predict_cmsis(s: Shape, path: str, core: str, isa: str) -> int | None:
    """CMSIS-NN's instructions for shape `s` (mcugen's kernel taking `path`) on `core`: cost_fit's line
    of the generic work counts fitted on the table's CMSIS-NN column of its group (the planner's base;
    the choice itself stays predict's); None where the table has no case of that group."""
    rows = cmsis_costs(core, isa)
    return cost_fit.predict(rows, s, f"{path}|{cmsis_fn(s, isa)}", features, NEIGHBOURS) if rows else None


# -- instruction estimates from a table of mcugen's counts alone (RISC-V: no CMSIS-NN to choose) ----

@dataclass(frozen=True)
class Cost:
    shape: Shape
    path: str
    ours: int


@lru_cache(maxsize=8)
def load_costs(core: str) -> tuple[Cost, ...]:
    """mcugen's counts from `core`'s committed table when that table has no CMSIS-NN column (a
    RISC-V core: `python scripts/cost_tables.py --cores rv32imac`), else ()."""
    f = TABLES / f"{core}.json"
    if not f.is_file():
        return ()
    data = json.loads(f.read_text())
    if data.get("cmsis_nn") is not None:
        return ()
    return tuple(Cost(Shape.from_list(r["shape"]), r["path"], r["ours"]) for r in data["cases"])


def predict_ours(rows: tuple[Cost, ...], s: Shape, path: str) -> int | None:
    """mcugen's instructions for shape `s` taking `path`, from the table's cases of its kind, path and
    bits (emitter/backends/cost_fit.py: their mean on an exact hit, else a line fitted on the nearest
    cases, corrected by the NEIGHBOURS nearest); None when the table has no case of that group."""
    return cost_fit.predict(rows, s, path, features, NEIGHBOURS)


# A convolution with its residual Add fused (mcu_conv2d_add_s8): the conv's count plus this per
# output element (the Add's arithmetic and the general output stage; 90-106 on IC's three
# residual layers, rv32imac)
