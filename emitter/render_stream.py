"""C text of the layers that run by row bands: one loop per segment (emitter/stream.py).

A segment of several layers is one loop over its last layer's output rows; inside it, each
layer produces, one kernel call per row, the rows the next one needs, into its ring
(mcu_runtime/support/mcu_band.h). A one-layer segment whose output the planner put over its
input is a loop of row calls, top down ("down") or bottom up ("up"). The loops replay exactly
what emitter/stream.simulate() replayed to size the rings and the overlaps.
"""
from __future__ import annotations

from collections.abc import Callable

from emitter.cfmt import c_comment
from emitter.stream import Segment, Stage, twin

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
    extra = f"{stage.row_size}, " if stage.kernel == "mcu_add_s8" else ""
    return f"{twin(stage.kernel).BAND_C}(&{params}, {extra}{o0}, {o1}, &{band}, {rows})"


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


def segment(seg: Segment, names: list[str], ring_at: Callable[[str], int], calls: list[str]) -> list[str]:
    """Several layers, row by row of the last one's output, through rings."""
    st, n = seg.stages, len(seg.stages)
    out: list[str] = ["{"]
    for i, s in enumerate(st[:-1]):
        out.append(f"    mcu_ring_t ring{i} = {{arena + {ring_at(s.output)}, {s.out_row_bytes}, {seg.caps[i]}, 0, 0}};"
                   f" /* layer {s.step}: {seg.caps[i]} rows */")
    for i, s in enumerate(st):
        out.append(f"    {type(s.params).CTYPE} band{i};")
    out += [f"    int32_t done[{n}] = {{0}};", f"    int32_t need[{n}];", "    int32_t rows[2];",
            "    int32_t keep[2];", "    int8_t *row;", ""]
    last = st[-1]
    out.append(f"    for (int32_t y = 0; y < {last.out_rows}; ++y) {{")
    out.append(f"        /* rows each layer must have made for row y of layer {last.step} */")
    out.append(f"        need[{n - 1}] = y + 1;")
    for i in range(n - 1, 0, -1):
        out += check(band_call(st[i], names[i], f"need[{i}] - 1", f"need[{i}]", f"band{i}", "rows"), "        ")
        out.append(f"        need[{i - 1}] = rows[1] > done[{i - 1}] ? rows[1] : done[{i - 1}];")
    for i, s in enumerate(st):
        out.append(f"        for (; done[{i}] < need[{i}]; ++done[{i}]) {{ /* layer {s.step}: {c_comment(s.kernel)} */")
        out += check(band_call(s, names[i], f"done[{i}]", f"done[{i}] + 1", f"band{i}", "rows"), "            ")
        if i < n - 1:
            nxt = st[i + 1]
            out.append(f"            keep[0] = done[{i}] + 1;")
            out.append(f"            if (done[{i + 1}] < {nxt.out_rows}) {{ /* the next layer's lowest row to read */")
            out += check(band_call(nxt, names[i + 1], f"done[{i + 1}]", f"done[{i + 1}] + 1", f"band{i + 1}",
                                   "keep"), "                ")
            out.append("            }")
            out.append(f"            row = mcu_ring_push(&ring{i}, keep[0]);")
            out += ["            if (row == NULL) {", "                return (int)MCU_ERR_ARG; /* ring too small */",
                    "            }"]
        out += check(calls[i], "            ")
        out.append("        }")
    out += ["    }", "}"]
    return out
