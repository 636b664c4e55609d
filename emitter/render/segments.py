"""C text of the layers that run by row bands: one loop per segment (emitter/plan/stream.py).

A segment of several layers is one loop making one row per step, of the layer nearest the end
whose next row's input rows are made (depth first), into that layer's ring
(mcu_runtime/support/mcu_band.h). A one-layer segment whose output the planner put over its
input is a loop of row calls, top down ("down") or bottom up ("up"). The loops replay exactly
what emitter/plan/stream.simulate() replayed to size the rings and the overlaps.
"""
from __future__ import annotations

from collections.abc import Callable

from emitter.kernels import kernel
from emitter.plan.stream import Segment, Stage
from emitter.render.cfmt import c_comment

CallText = Callable[[Stage, dict[str, str], str], str]  # (stage, tensor -> C pointer, band params) -> call


def stage_ptrs(seg: Segment, i: int, ptr: Callable[[str], str]) -> dict[str, str]:
    """The C pointers stage i of a several-layer segment's loop passes its kernel: its main input
    from the previous ring (or the whole tensor), side operands and the last output by rows."""
    s = seg.stages[i]
    ptrs = {}
    for k, (name, rb) in enumerate(zip(s.inputs, s.in_row_bytes, strict=True)):
        ptrs[name] = f"mcu_ring_row(&ring{i - 1}, rows[0])" if i > 0 and k == 0 else f"{ptr(name)} + rows[0] * {rb}"
    ptrs[s.output] = "row" if i < len(seg.stages) - 1 else f"{ptr(s.output)} + done[{i}] * {s.out_row_bytes}"
    return ptrs


def band_call(stage: Stage, params: str, o0: str, o1: str, band: str, rows: str) -> str:
    k = kernel(stage.kernel)
    extra = f"{stage.row_size}, " if k.row_band is not None else ""  # element-wise: rows of row_size
    return f"{k.band_c}(&{params}, {extra}{o0}, {o1}, &{band}, {rows})"


def check(expr: str, indent: str) -> list[str]:
    return [f"{indent}status = {expr};", f"{indent}if (status != MCU_OK) {{", f"{indent}    return (int)status;",
            f"{indent}}}"]


def single(seg: Segment, mode: str, params: str, ptr: Callable[[str], str], call: CallText) -> list[str]:
    """One layer by rows, its output over its input: top down or bottom up."""
    s = seg.stages[0]
    ctype = type(s.params).CTYPE
    loop = (f"for (int32_t y = 0; y < {s.out_rows}; ++y) {{" if mode == "down" else
            f"for (int32_t y = {s.out_rows - 1}; y >= 0; --y) {{")
    ptrs = {name: f"{ptr(name)} + rows[0] * {rb}" for name, rb in zip(s.inputs, s.in_row_bytes, strict=True)}
    ptrs[s.output] = f"{ptr(s.output)} + y * {s.out_row_bytes}"
    return ["{", f"    {ctype} band;", "    int32_t rows[2];", "",
            f"    {loop}",
            *check(band_call(s, params, "y", "y + 1", "band", "rows"), "        "),
            *check(call(s, ptrs, "band"), "        "),
            "    }", "}"]


def sink_row(seg: Segment) -> tuple[str, str]:
    """(C pointer, row index) of the input row a sink adds in the loop of segment()."""
    n = len(seg.stages)
    return f"mcu_ring_row(&ring{n - 2}, rows[0])", "rows[0]"


def segment(seg: Segment, names: list[str], ring_at: Callable[[str], int], calls: list[str],
            finish: str | None = None) -> list[str]:
    """Several layers through rings, one row per step: the layer nearest the end whose next row's
    input rows are made makes that row (stream.simulate's order). A sink last (its call adds one
    input row to `acc`) ends with `finish`."""
    st, n = seg.stages, len(seg.stages)
    last = st[-1]

    def at(name: str) -> str:  # arena + offset, no `+ 0`
        return "arena" if ring_at(name) == 0 else f"arena + {ring_at(name)}"

    out: list[str] = ["{"]
    for i, s in enumerate(st[:-1]):
        out.append(f"    mcu_ring_t ring{i} = {{{at(s.output)}, {s.out_row_bytes}, {seg.caps[i]}, 0, 0}};"
                   f" /* layer {s.step}: {seg.caps[i]} rows */")
    if last.sink:
        out.append(f"    int32_t *const acc = (int32_t *)(void *)({at(last.output + '#acc')});"
                   f" /* layer {last.step}: {last.sink} sums */")
    for i, s in enumerate(st):
        if not s.sink:
            out.append(f"    {type(s.params).CTYPE} band{i};")
    out += [f"    int32_t done[{n}] = {{0}};", "    int32_t rows[2];", "    int32_t keep[2];", "    int8_t *row;", ""]
    if last.sink:
        out += [f"    for (int32_t i = 0; i < {last.sink}; ++i) {{", "        acc[i] = 0;", "    }"]
    out.append(f"    while (done[{n - 1}] < {last.out_rows}) {{")
    for i in range(n - 1, -1, -1):
        s = st[i]
        ind = "        "
        if s.sink:
            out += [f"{ind}rows[0] = done[{i}];", f"{ind}rows[1] = done[{i}] + 1;"]
        else:
            out += check(band_call(s, names[i], f"done[{i}]", f"done[{i}] + 1", f"band{i}", "rows"), ind)
        what = f"layer {s.step}: {c_comment(s.kernel)}"
        if i > 0:
            out.append(f"{ind}if (rows[1] <= done[{i - 1}]) {{ /* {what}, its input rows made */")
            ind += "    "
        else:
            out.append(f"{ind}/* {what}, its input whole */")
        if i < n - 1:
            nxt = st[i + 1]
            out.append(f"{ind}keep[0] = done[{i}] + 1;")
            out.append(f"{ind}if (done[{i + 1}] < {nxt.out_rows}) {{ /* the next layer's lowest row to read */")
            if nxt.sink:
                out.append(f"{ind}    keep[0] = done[{i + 1}];")
            else:
                out += check(band_call(nxt, names[i + 1], f"done[{i + 1}]", f"done[{i + 1}] + 1", f"band{i + 1}",
                                       "keep"), ind + "    ")
            out.append(f"{ind}}}")
            out.append(f"{ind}row = mcu_ring_push(&ring{i}, keep[0]);")
            out += [f"{ind}if (row == NULL) {{", f"{ind}    return (int)MCU_ERR_ARG; /* ring too small */", f"{ind}}}"]
        if s.sink:
            out.append(f"{ind}{calls[i]}")
        else:
            out += check(calls[i], ind)
        out.append(f"{ind}++done[{i}];")
        if i > 0:
            out += [f"{ind}continue;", "        }"]
    out.append("    }")
    if finish is not None:
        out += check(finish, "    ")
    out.append("}")
    return out
