"""The data of the layers that run by row bands, for templates/stream_segment.c.j2: one loop per
segment (emitter/plan/stream.py).

A segment of several layers is one loop making one band per step (its band height's rows, one
row by default), of the layer nearest the end whose next band's input rows are made (depth
first), into that layer's ring
(mcu_runtime/support/mcu_band.h). A one-layer segment whose output the planner put over its
input is a loop of row calls, top down ("down") or bottom up ("up"). The loops replay exactly
what emitter/plan/stream.simulate() replayed to size the rings and the overlaps. The C text is
the template's; here only the numbers, names and pointers it is filled with.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emitter.kernels import kernel
from emitter.kernels.base import SinkC
from emitter.plan.stream import Segment, Stage
from emitter.render.cfmt import c_comment, c_struct, environment

CallText = Callable[[Stage, dict[str, str], str], str]  # (stage, tensor -> C pointer, band params) -> call


def macros() -> Any:
    """templates/stream_segment.c.j2's macros, callable from here."""
    return environment().get_template("stream_segment.c.j2").module


def lines(text: str) -> list[str]:
    """A macro's block as the lines model.c.j2 indents."""
    return text.rstrip("\n").split("\n")


def stage_ptrs(seg: Segment, i: int, ptr: Callable[[str], str]) -> dict[str, str]:
    """The C pointers stage i of a several-layer segment's loop passes its kernel: its main input
    from the previous ring (or the whole tensor), side operands and the last output by rows."""
    m, s = macros(), seg.stages[i]
    ptrs = {}
    for k, (name, rb) in enumerate(zip(s.inputs, s.in_row_bytes, strict=True)):
        ptrs[name] = m.ring_row(i - 1) if i > 0 and k == 0 else m.rows_ptr(ptr(name), "rows[0]", rb)
    ptrs[s.output] = "row" if i < len(seg.stages) - 1 else m.rows_ptr(ptr(s.output), f"done[{i}]", s.out_row_bytes)
    return ptrs


# A stage whose band CMSIS-NN computes (the cmsis-nn backend, emitter/backends/cmsis_nn.py Banded):
# its band function is mcu_window_band() over the layer's mcu_window_t (mcu_runtime/support/mcu_band.h),
# and its call re-dimensions CMSIS-NN's structs with the band's rows (band_structs).
WINDOW_C, WINDOW_TYPE, WINDOW_BAND_TYPE = "mcu_window_band", "mcu_window_t", "mcu_window_band_t"


def window_init(window: tuple[int, ...]) -> str:
    """The initializer of a layer's mcu_window_t (Banded.window)."""
    return c_struct(dict(zip(("out_h", "in_h", "stride", "dilation", "taps", "pad_top"), window, strict=True)))


class Expr:
    """A C expression in a struct field (a band's value)."""

    def __init__(self, text: str) -> None:
        self.text = text


def band_structs(name: str, fields: dict[str, Any], in_h: Any, out_h: Any, pad_top: Any) -> dict[str, Any] | None:
    """The fields of CMSIS-NN operand `name` on one band (None: the band keeps the layer's)."""
    from emitter.backends.cmsis_nn import BAND_PARAMS

    if name in ("input_dims", "output_dims"):
        return {**fields, "h": in_h if name == "input_dims" else out_h}
    if name in BAND_PARAMS:
        return {**fields, "padding": {**fields["padding"], "h": pad_top}}
    return None


def literal(ctype: str, fields: dict[str, Any], refs: Callable[[str, Any], str]) -> str:
    """A compound literal `(ctype){.a = 1, ...}` on one line; an Expr field is its text."""
    def ref(path: str, v: Any) -> str:
        return v.text if isinstance(v, Expr) else refs(path, v)
    return f"({ctype}){' '.join(c_struct(fields, ref).split())}"


def cmsis_status(call: str) -> str:
    """A CMSIS-NN call as an mcu_status_t expression."""
    return f"({call} == ARM_CMSIS_NN_SUCCESS ? MCU_OK : MCU_ERR_ARG)"


def band_call(stage: Stage, params: str, o0: str, o1: str, band: str, rows: str, window: bool = False) -> str:
    k = kernel(stage.kernel)
    b = {"fn": WINDOW_C if window else k.band_c,
         "row_size": stage.row_size if k.row_band is not None and not window else None}  # element-wise: rows
    return str(macros().band_call(b, params, o0, o1, band, rows))


def band_ctype(stage: Stage, window: bool) -> str:
    return WINDOW_BAND_TYPE if window else str(type(stage.params).CTYPE)


def sink_calls(sink: SinkC, params: str, ops: dict[str, str], row: str, y: str, acc: str) -> tuple[str, str]:
    """(the statement adding input row y at `row`, the call that finishes) of a sink."""
    m = macros()
    return str(m.sink_add(sink, params, ops, row, y, acc)), str(m.sink_finish(sink, params, ops, acc))


def single(seg: Segment, mode: str, params: str, ptr: Callable[[str], str], call: CallText,
           windows: frozenset[int] = frozenset()) -> list[str]:
    """One layer by rows, its output over its input: top down or bottom up. windows: the steps
    whose band CMSIS-NN computes (WINDOW_C)."""
    m, s = macros(), seg.stages[0]
    ptrs = {name: m.rows_ptr(ptr(name), "rows[0]", rb) for name, rb in zip(s.inputs, s.in_row_bytes, strict=True)}
    ptrs[s.output] = m.rows_ptr(ptr(s.output), "y", s.out_row_bytes)
    w = s.step in windows
    d = {"ctype": band_ctype(s, w), "init": None if w else params, "mode": mode, "rows": s.out_rows,
         "last_row": s.out_rows - 1, "band": band_call(s, params, "y", "y + 1", "band", "rows", w),
         "call": call(s, ptrs, "band")}
    return lines(m.single(d))


def sink_row(seg: Segment) -> tuple[str, str]:
    """(C pointer, row index) of the input row a sink adds in the loop of segment()."""
    return macros().ring_row(len(seg.stages) - 2), "rows[0]"


def band_end(i: int, h: int, rows: int) -> str:
    """C: the end of stage i's next band of (at most) h of its `rows` output rows."""
    if h == 1:
        return f"done[{i}] + 1"
    if rows % h == 0:
        return f"done[{i}] + {h}"
    return f"(done[{i}] + {h} < {rows} ? done[{i}] + {h} : {rows})"


def band_count(i: int, h: int, rows: int) -> str:
    """C: the rows of stage i's next band (h, or fewer in the last)."""
    return str(h) if rows % h == 0 else f"(done[{i}] + {h} < {rows} ? {h} : {rows} - done[{i}])"


def segment(seg: Segment, names: list[str], at: Callable[[str], str], calls: list[str],
            finish: str | None = None, windows: frozenset[int] = frozenset()) -> list[str]:
    """Several layers through rings, one band per step: the layer nearest the end whose next
    band's input rows are made makes that band (stream.simulate's order), h rows in one call
    (seg.height(i); one by default), pushed into its ring whole (mcu_ring_push_rows). Each
    layer's next band (its parameters band<i>, its input rows need[i]) is computed once, when the
    layer has made the one before. A sink last (its call adds one input row to `acc`) ends with
    `finish`. at(tensor): the C pointer to its ring (`arena + 64`). windows: the steps whose band
    CMSIS-NN computes (WINDOW_C)."""
    st, n = seg.stages, len(seg.stages)
    last = st[-1]

    def band(i: int, rows: str, h: int) -> str:
        return band_call(st[i], names[i], f"done[{i}]", band_end(i, h, st[i].out_rows), f"band{i}", rows,
                         st[i].step in windows)

    stages = []
    for i in range(n - 1, -1, -1):
        s, h = st[i], seg.height(i)
        what = "CMSIS-NN on its band" if s.step in windows else c_comment(s.kernel)
        if h > 1:
            what += f", {h} rows a call"
        nxt = None
        if i < n - 1:  # the lowest row its next band reads (need[i + 1][0])
            nxt = {"i": i + 1, "rows": st[i + 1].out_rows, "sink": bool(st[i + 1].sink)}
        stages.append({"i": i, "sink": bool(s.sink), "band": None if s.sink else band(i, f"need[{i}]", h),
                       "rows": s.out_rows,
                       "what": f"layer {s.step}: {what}", "prev": i - 1 if i > 0 else None,
                       "next": nxt, "call": calls[i], "end": band_end(i, h, s.out_rows),
                       "count": None if h == 1 else band_count(i, h, s.out_rows)})
    d = {"rings": [{"i": i, "at": at(s.output), "row_bytes": s.out_row_bytes, "cap": seg.caps[i], "step": s.step}
                   for i, s in enumerate(st[:-1])],
         "sink": {"at": at(last.output + "#acc"), "step": last.step, "count": last.sink} if last.sink else None,
         "bands": [{"i": i, "ctype": band_ctype(s, s.step in windows), "init": None if s.step in windows else names[i]}
                   for i, s in enumerate(st) if not s.sink],
         "n": n, "last": n - 1, "rows": last.out_rows, "stages": stages, "finish": finish}
    return lines(macros().segment(d))
