"""Code generation: a Compiled model -> the files of a C bundle, via the Jinja templates.

All C text comes from templates/ and the filters of emitter/render/cfmt.py; this module only gathers
precomputed values (layers, arrays, pointers, figures) in graph order, so the output is
deterministic: same model and options, byte-identical bundle.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from emitter import __version__
from emitter.backends.cmsis_nn import Banded, band_call
from emitter.backends.cmsis_version import supported as cmsis_supported
from emitter.calls import CArg, ConstArg, CRef, IntArg, Prepared, StructArg, TensorArg, TensorListArg, is_portable
from emitter.compiler import Compiled
from emitter.errors import UsageError
from emitter.features.sources import DEFINES as DSP_DEFINES
from emitter.kernels import kernel as kernel_twin
from emitter.kernels.cmsis_api import precheck
from emitter.optimize import CMSIS_OPT_FLAGS, CONFIG, OPT_FLAGS, config_header
from emitter.plan.arena import scratch_of
from emitter.plan.stream import Segment, Stage, band_params
from emitter.render import segments
from emitter.render.cdoc import array_role, named, tensor_text
from emitter.render.cfmt import (
    C_TYPES,
    c_comment,
    c_int,
    c_struct,
    environment,
    prefix_problem,
    upper_ident,
    wrap_comments,
)
from emitter.render.layers import ConstArray, Layer, LayerCall, call_kind, ctx_offset, ctx_size
from emitter.render.runtime_files import (
    runtime_files,
    runtime_symbols,
    s4_kernels,
    s16_kernels,
    variant_config,
    variant_tag,
)
from emitter.report.data import report
from emitter.report.html import report_html
from emitter.resources import data_dir

if TYPE_CHECKING:
    from emitter.render.frontend import FrontEnd


class BundleBuilder:
    def __init__(self, c: Compiled, pooled: bool = False):
        self.c = c
        self.g = c.graph
        self.prefix = c.name
        self.arrays: list[ConstArray] = []
        self.stage_calls: dict[int, tuple[str, str]] = {}  # segment step -> (params ident, call with band params)
        self.segment_comments: list[str] = []
        # several RAM pools: which pool and offset each plan offset is in (None: one arena, as always)
        # (pooled: one array per pool even for one pool, as a group bundle's shared pool arrays need)
        self.pools = c.pools if c.pools is not None and (c.pools.multi or pooled) else None

    def arena_at(self, offset: int, paren: bool = True, var: str = "arena") -> str:
        """C pointer to a plan offset: `arena`, `(arena + 64)` (or `arena + 64`, paren False); with
        several pools `arena_<pool>` (var: `<prefix>_arena` for file-scope initializers)."""
        if self.pools is not None:
            pool, offset = self.pools.split(offset)
            var = f"{var}_{pool}"
        if offset == 0:
            return var
        return f"({var} + {offset})" if paren else f"{var} + {offset}"

    def place_text(self, offset: int) -> str:
        """A plan offset in comments: `arena+64`, or `arena_dtcm+64` with several pools."""
        if self.pools is None:
            return f"arena+{offset}"
        pool, at = self.pools.split(offset)
        return f"arena_{pool}+{at}"

    @property
    def isa(self) -> str:
        """The board's instruction set (Board.isa), "any" for a bundle made without a board: which
        ISA path files of mcu_runtime/ the bundle ships."""
        board = self.c.options.board
        return "any" if board is None else str(board.isa)

    def ptr(self, name: str) -> str:
        kind, where = self.c.plan.location[self.c.plan.root[name]]
        if kind == "arena":
            return self.arena_at(where)
        return f"inputs[{where}]" if kind == "input" else f"outputs[{where}]"

    def describe(self, role: str, name: str) -> list[str]:
        """A tensor in a layer's comment block: stored shape and layout, scale and zero point,
        where its bytes are, then its name."""
        kind, where = self.c.plan.location[self.c.plan.root[name]]
        t = self.g.t(name)
        place = (f"{self.place_text(where)} ({t.nbytes} bytes)" if kind == "arena" else
                 f"rows in the ring at {self.place_text(where)}" if kind == "ring" else f"caller's {kind} {where}")
        return named(f"{role} {tensor_text(t)}, {place}", name)

    def title(self, k: int) -> list[str]:
        node = self.g.nodes[k]
        return named(f"Layer {k}: {node.op}, ONNX {c_comment(node.source or node.op)}", node.name)

    def const(self, k: int, suffix: str, values: np.ndarray) -> str:
        ident = f"{self.prefix}_l{k}_{suffix}"
        kernel = self.prep(k).kernel
        header = () if any(a.layer == k for a in self.arrays) else (*self.title(k), f"kernel {kernel}")
        role = array_role(suffix, kernel, values)
        self.arrays.append(ConstArray(C_TYPES[str(values.dtype)], ident, np.ascontiguousarray(values), k,
                                      f"Layer {k} {self.g.nodes[k].op}: {role}", header))
        return ident

    def prep(self, k: int) -> Prepared:
        """Layer k's call as it runs: a layer the cmsis-nn backend runs on bands (cmsis_nn.Banded)
        calls CMSIS-NN (on each band, or whole outside a by-rows segment) unless it runs lean."""
        p = self.c.prepared[k]
        return band_call(p, self.c.plan, k) or p

    def windows(self, seg: Segment) -> frozenset[int]:
        """The steps of a segment whose bands CMSIS-NN computes."""
        return frozenset(s.step for s in seg.stages if self.prep(s.step) is not self.c.prepared[s.step])

    def window_bands(self, seg: Segment) -> frozenset[int]:
        """Those of windows() whose bands mcu_window_band() computes (window layers)."""
        return frozenset(k for k in self.windows(seg) if any(getattr(self.c.prepared[k], "window", ())))

    def layer(self, k: int) -> Layer | None:
        node, p = self.g.nodes[k], self.prep(k)
        if not p.kernel:
            return None
        before = sum(a.nbytes for a in self.arrays)
        params_ident = params_init = params_type = None
        seg = self.segment_at(k)
        banded = self.c.prepared[k]
        if seg is not None and k in self.windows(seg) and isinstance(banded, Banded) and any(banded.window):
            params_type, params_ident = segments.WINDOW_TYPE, f"{self.prefix}_l{k}_window"
            params_init = segments.window_init(banded.window)
        elif seg is not None and k in self.windows(seg) and banded.params is not None:  # element-wise: twin's params
            params_type, params_ident = type(banded.params).CTYPE, f"{self.prefix}_l{k}_params"
            params_init = c_struct(banded.params, functools.partial(self.ref, k, node.name))
        elif p.params is not None:
            params_type = type(p.params).CTYPE
            params_ident = f"{self.prefix}_l{k}_params"
            params = band_params(p) if seg is not None or self.lean_at(k) else p.params
            for isa in ("dsp", "mve"):  # a lean call's groups: only those of the bundle's own path are read
                if getattr(params, f"{isa}_groups", None) is not None and self.c.plan_isa != isa:
                    params = replace(params, **{f"{isa}_groups": None})
            params_init = c_struct(params, functools.partial(self.ref, k, node.name))
        local_decls: list[str] = []
        structs: list[tuple[str, str, str]] = []
        if seg is not None:
            return self.stage_layer(k, seg, params_type, params_ident, params_init, structs, before)
        out = node.outputs[0]
        call = self.c.plan.schedule.call_at(k)
        home = self.home_at(k, out)
        ptrs = None if home is None else {out: home}
        calls = [LayerCall(self.call(k, node.name, *self.kernel_args(k), structs, local_decls, params_ident, ptrs),
                           call_kind(p.kernel))]
        calls += [LayerCall(self.call(k, node.name, c.kernel, c.args, structs, local_decls), call_kind(c.kernel))
                  for c in p.then]
        if home is not None and call is not None:
            calls.append(LayerCall(f"mcu_move_up_s8({home}, {self.g.t(out).nbytes}, {call.down})", "void"))
        how = f": {c_comment(p.summary)}" if p.summary else ""
        comment = [*self.title(k), f"kernel {p.kernel}{how}; {p.macs} MACs"]
        for i in node.inputs:
            if i and not self.g.t(i).is_const:
                comment += self.describe("in ", i)
        comment += self.describe("out", out)
        scratch = scratch_of(self.c.plan, node.name)
        if home is not None and call is not None:
            comment.append(f"{f'calls {call.call}: ' if call.call else ''}writes its output {call.down} bytes below "
                           "its input (the path's order of writes), then moves it up onto it")
        elif call is not None and call.call:
            comment.append(f"calls {call.call}: its output over its input, channel block by channel block")
        if scratch is not None:
            size = call.scratch if call is not None and call.call else p.scratch
            comment.append(f"scratch {self.place_text(scratch)} ({size} bytes)")
        return Layer(k, node.name, node.op, node.source, p.kernel, p.summary, params_type, params_ident,
                     params_init, tuple(local_decls), tuple(calls), tuple(comment),
                     self.ptr(out), self.g.t(out).shape, self.g.t(out).nbytes,
                     self.c.plan.offset_of(out), p.macs, sum(a.nbytes for a in self.arrays) - before,
                     tuple(structs),
                     precheck(p.kernel, p.operands, lambda a: f"{self.prefix}_l{k}_{a.suffix}", ctx_size(p)))

    def home_at(self, k: int, out: str) -> str | None:
        """Where a homing call (stream.InPlace.home) writes its output before moving it up onto
        its input: `down` bytes below the output's place (the lead of its buffer), or None."""
        call = self.c.plan.schedule.call_at(k)
        kind, where = self.c.plan.location[self.c.plan.root[out]]
        if call is None or not call.home or kind != "arena":
            return None
        return self.arena_at(where - call.down)

    def lean_at(self, k: int) -> bool:
        """Layer k takes its twin's lean call: in a segment (by rows or whole) or over its input."""
        seg, call = self.c.plan.schedule.segment_at(k), self.c.plan.schedule.call_at(k)
        lean_c = kernel_twin(self.prep(k).kernel).lean_c
        return bool(lean_c) and ((seg is not None and k in seg.lean) or (call is not None and call.call == lean_c))

    def segment_at(self, k: int) -> Segment | None:
        """The row-band segment layer k runs in, when it does not run as one plain call."""
        seg = self.c.plan.schedule.segment_at(k)
        return seg if seg is not None and self.c.plan.modes.get(seg.first, "whole") != "whole" else None

    def kernel_args(self, k: int) -> tuple[str, tuple[CArg, ...]]:
        """Layer k's function and arguments: in a segment that takes lean calls, its twin's LEAN_C
        with the segment's (smaller) scratch, whether it runs by rows or whole."""
        p = self.prep(k)
        seg = self.c.plan.schedule.segment_at(k)
        if seg is not None and k in seg.lean:
            return kernel_twin(p.kernel).lean_c, with_ctx(p.args, seg.scratch)
        call = self.c.plan.schedule.call_at(k)
        if call is not None and call.call:  # written over its input through another function
            return call.call, with_ctx(p.args, call.scratch)
        return p.kernel, p.args

    def stage_layer(self, k: int, seg: Segment, params_type: str | None, params_ident: str | None,
                    params_init: str | None, structs: list[tuple[str, str, str]], before: int) -> Layer:
        """Layer k of a segment: its constants and structs as usual; its call, with band
        parameters and row pointers, goes into the loop the segment's last layer carries."""
        node, p = self.g.nodes[k], self.prep(k)
        assert params_ident is not None
        stage = next(s for s in seg.stages if s.step == k)
        windows, wbands = self.windows(seg), self.window_bands(seg)

        fed = self.c.plan.feeds.get(self.g.nodes[seg.first].name) if k == seg.first else None

        def call(s: Stage, ptrs: dict[str, str], band: str) -> str:
            if k in windows:
                return self.band_cmsis_call(k, node.name, p, structs, band, ptrs, s.row_size)
            if fed is not None:  # its ctx: the scratch and the input rows the bands have passed
                at = scratch_of(self.c.plan, node.name)
                assert at is not None
                ptrs = {**ptrs, CTX: f"&(mcu_context_t){{(void *){self.arena_at(at)}, "
                                     f"{seg.feed} + rows[0] * {s.in_row_bytes[0]}}}"}
            return self.call(k, node.name, *self.kernel_args(k), structs, [], band, ptrs)

        mode = self.c.plan.modes[seg.first]
        comment = [*self.title(k), f"kernel {p.kernel}: {c_comment(p.summary)}; {p.macs} MACs"]
        for i in node.inputs:
            if i and not self.g.t(i).is_const:
                comment += self.describe("in ", i)
        comment += self.describe("out", node.outputs[0])
        block: tuple[str, ...] = ()
        if len(seg.stages) == 1:
            block = tuple(segments.single(seg, mode, params_ident, self.ptr, call, wbands))
            comment.append(f"runs row by row, {'top down' if mode == 'down' else 'bottom up'}: its output "
                           "overlaps its input, each row written where no later row reads")
        else:
            pos = seg.stages.index(stage)
            finish = None
            if stage.sink:  # adds each input row; finishes after the loop
                ops = {name: self.arg_text(k, node.name, a, structs, []) for name, a in p.operands.items()
                       if name != "ctx"}
                row, y = segments.sink_row(seg)
                sink_c = kernel_twin(p.kernel).sink_c
                assert sink_c is not None, f"{p.kernel} declares a sink without its C"
                add, finish = segments.sink_calls(sink_c(p.params, stage.in_row_bytes[0]), params_ident, ops, row, y,
                                                  "acc")
                self.stage_calls[k] = (params_ident, add)
            else:
                self.stage_calls[k] = (params_ident, call(stage, segments.stage_ptrs(seg, pos, self.ptr),
                                                          f"band{pos}"))
            if k == seg.last:
                names = [self.stage_calls[s.step][0] for s in seg.stages]
                calls = [self.stage_calls[s.step][1] for s in seg.stages]
                block = tuple(segments.segment(seg, names, lambda t: self.arena_at(self.ring_offset(t), False),
                                               calls, finish, wbands))
                rings = ", ".join(f"layer {s.step} {cap} x {s.out_row_bytes} B at "
                                  f"{self.place_text(self.ring_offset(s.output))}"
                                  for s, cap in zip(seg.stages, seg.caps, strict=False))
                comment = [f"Layers {seg.first}-{seg.last} streamed row by row of layer {k}'s "
                           f"{stage.out_rows} output rows; rings: {rings}", *self.segment_comments, *comment]
                self.segment_comments = []
            else:
                self.segment_comments += comment
        if k in seg.lean:
            comment.append(f"calls {kernel_twin(p.kernel).lean_c}: the least scratch")
        if fed is not None:
            comment.append(f"its scratch: the {seg.feed} bytes below its input and the input rows its bands "
                           "have passed; the fast call where those hold its scratch")
        check = None
        if k in wbands:
            comment.append(f"CMSIS-NN's {p.kernel} on each band of rows: input rows and top padding "
                           "of the band (mcu_window_band)")
        elif k in windows:
            comment.append(f"CMSIS-NN's {p.kernel} on each band of rows (block_size: the band's elements)")
        if k in windows:
            check = self.band_precheck(k, node.name, p)
        scratch = scratch_of(self.c.plan, node.name)
        return Layer(k, node.name, node.op, node.source, p.kernel, p.summary, params_type, params_ident,
                     params_init, (), (), tuple(comment), self.ptr(node.outputs[0]) if block else "NULL",
                     self.g.t(node.outputs[0]).shape, self.g.t(node.outputs[0]).nbytes,
                     self.c.plan.offset_of(node.outputs[0]) if block else scratch,
                     p.macs, sum(a.nbytes for a in self.arrays) - before, tuple(structs), check,
                     inside=not block, block=block)

    def band_cmsis_call(self, k: int, node_name: str, p: Prepared, structs: list[tuple[str, str, str]],
                        band: str, ptrs: dict[str, str], row_size: int = 0) -> str:
        """CMSIS-NN's call of layer k on one band: its dims and padding those of `band` (an
        mcu_window_band_t), compound literals; the other operands as for the whole layer. An
        element-wise call (row_size elements per row) takes the band's elements as block_size."""
        ex = segments.Expr
        texts = []
        for name, a in p.operands.items():
            if name == "block_size" and row_size:
                texts.append(f"(rows[1] - rows[0]) * {row_size}")
            elif isinstance(a, StructArg) and (fields := segments.band_structs(
                    name, a.fields, ex(f"{band}.in_h"), ex(f"{band}.out_h"), ex(f"{band}.pad_top"))) is not None:
                texts.append("&" + segments.literal(a.ctype, fields, functools.partial(self.ref, k, node_name)))
            else:
                texts.append(self.arg_text(k, node_name, a, structs, [], ptrs))
        return segments.cmsis_status(f"{p.kernel}({', '.join(texts)})")

    def band_precheck(self, k: int, node_name: str, p: Prepared) -> str | None:
        """<prefix>_init()'s scratch check of a banded layer: every distinct band call."""
        banded = self.c.prepared[k]
        assert isinstance(banded, Banded)
        conds = []
        for geo in banded.bands:
            def ident(a: Any, geo: Any = geo) -> str:
                name = next(n for n, v in p.operands.items() if v is a)
                fields = segments.band_structs(name, a.fields, geo.in_h, geo.out_h, geo.pad_top)
                if fields is None:
                    return f"{self.prefix}_l{k}_{a.suffix}"
                return segments.literal(a.ctype, fields, functools.partial(self.ref, k, node_name))
            cond = precheck(p.kernel, p.operands, ident, ctx_size(p))
            if cond is not None:
                conds.append(f"({cond})")
        return "\n        || ".join(conds) or None  # one line per band call, in <prefix>_init()'s if

    def ring_offset(self, tensor: str) -> int:
        return next(b.offset for b in self.c.plan.buffers if b.kind == "ring" and b.of == tensor)

    def call(self, k: int, node_name: str, kernel: str, args: tuple[CArg, ...],
             structs: list[tuple[str, str, str]], local_decls: list[str],
             params_ident: str | None = None, ptrs: dict[str, str] | None = None) -> str:
        """`kernel([&ctx, ][&params, ]args...)` as C text (a portable kernel's scratch context comes
        before its params); appends the structs and locals its arguments need."""
        texts = [self.arg_text(k, node_name, a, structs, local_decls, ptrs) for a in args]
        if params_ident:
            has_ctx = bool(args) and isinstance(args[0], StructArg) and args[0].ctype == "mcu_context_t"
            texts.insert(1 if has_ctx else 0, f"&{params_ident}")
        return f"{kernel}({', '.join(texts)})"

    def arg_text(self, k: int, node_name: str, a: CArg, structs: list[tuple[str, str, str]], local_decls: list[str],
                 ptrs: dict[str, str] | None = None) -> str:
        """One argument of layer k's call as C text (appending the struct or local it needs); ptrs:
        tensor pointers, and CTX an mcu_context_t pointer, that replace the layer's own."""
        if isinstance(a, StructArg) and a.ctype == "mcu_context_t" and CTX in (ptrs or {}):
            return (ptrs or {})[CTX]
        if isinstance(a, StructArg):
            ident = f"{self.prefix}_l{k}_{a.suffix}"
            structs.append((a.ctype, ident, c_struct(a.fields, functools.partial(self.ref, k, node_name))))
            return f"&{ident}"
        if isinstance(a, TensorArg):
            if self.g.t(a.name).is_const:  # a constant input (Concat's class token, CMSIS-NN's per-input calls)
                return self.const(k, f"input{self.g.nodes[k].inputs.index(a.name)}", np.asarray(self.g.t(a.name).data))
            ptr = (ptrs or {}).get(a.name) or self.ptr(a.name)
            if self.g.t(a.name).dtype == "int16":  # int16 activations (emitter/ops/a16.py): typed pointers
                ptr = f"({'' if a.name in self.g.nodes[k].outputs else 'const '}int16_t *){ptr}"
            return ptr
        if isinstance(a, ConstArg):
            return self.const(k, a.suffix, a.data)
        if isinstance(a, IntArg):
            return c_int(a.value)
        if isinstance(a, TensorListArg):
            ident = f"l{k}_inputs"
            ptrs_ = [self.const(k, f"input{j}", np.asarray(self.g.t(n).data)) if self.g.t(n).is_const
                     else self.ptr(n) for j, n in enumerate(a.names)]  # a constant (Concat's class token)
            local_decls.append(f"const int8_t *const {ident}[{len(a.names)}] = {{{', '.join(ptrs_)}}};")
            return ident
        return "NULL"

    def ref(self, k: int, node_name: str, path: str, v: np.ndarray | CRef) -> str:
        """The C expression of a reference field of layer k's structs: an array of a params
        struct (a const array named after the field, `conv_multiplier` for conv.multiplier), or a
        CRef of a CMSIS-NN struct: a const array (with its cast), the layer's scratch in the arena,
        or NULL."""
        if isinstance(v, np.ndarray):  # a nested struct's array (a fused kernel's): named by its path
            return self.const(k, path.replace(".", "_"), v)
        if v.kind == "array":
            assert v.array is not None
            return f"{v.cast}{self.const(k, v.array.suffix, v.array.data)}"
        if v.kind == "scratch":
            at = scratch_of(self.c.plan, node_name)
            assert at is not None, f"layer '{node_name}' has no scratch in the plan"
            return f"(void *){self.arena_at(at + v.offset, var=f'{self.prefix}_arena')}"
        return "NULL"

    def io(self, names: tuple[str, ...], kind: str) -> list[dict[str, Any]]:
        out = []
        for k, name in enumerate(names):
            t = self.g.t(name)
            b = self.g.boundaries[name]
            assert t.quant is not None
            out.append({"index": k, "macro": f"{upper_ident(self.prefix)}_{kind}{k}", "onnx_name": b.onnx_name,
                        "shape": list(t.shape), "size": t.size, "scale": t.quant.s, "zero_point": t.quant.zp,
                        "ctype": C_TYPES[t.dtype], "nbytes": t.nbytes, "qmin": int(np.iinfo(t.dtype).min),
                        "qmax": int(np.iinfo(t.dtype).max),
                        "float_io": b.float_io, "from_uint8": b.from_uint8,
                        "layout": "NHWC" if self.c.io_nhwc and len(t.shape) == 4 else "ONNX order"})
        return out

    def context(self) -> dict[str, Any]:
        layers = [lay for lay in (self.layer(k) for k in range(len(self.g.nodes))) if lay is not None]
        kernels = sorted({lay.kernel for lay in layers if is_portable(lay.kernel)})
        bands = any(lay.block for lay in layers) or any(self.home_at(lay.index, self.g.nodes[lay.index].outputs[0])
                                                         for lay in layers)  # (mcu_move_up_s8)
        sources = [f"mcu_runtime/{f}" for f in runtime_files(kernels, bands, self.isa) if f.endswith(".c")]
        m = self.c.model
        inputs, outputs = self.io(self.g.inputs, "INPUT"), self.io(self.g.outputs, "OUTPUT")
        return {
            "version": __version__, "prefix": self.prefix, "PREFIX": upper_ident(self.prefix),
            "model_file": c_comment(m.path.name), "sha256": m.sha256, "opset": m.opset,
            "layers": layers, "arrays": self.arrays, "kernels": kernels, "runtime_sources": sources,
            "bands": bands, "isa": self.isa, "plan_kind": self.c.plan.schedule.kind,
            "hosted_inputs": [self.hosted(k, n) for k, n in enumerate(self.g.inputs)
                              if self.c.plan.offset_of(n) is not None],
            "pools": self.pool_figures(),
            "inputs": inputs, "outputs": outputs,
            "uses": self.uses(layers),
            "single_io": len(inputs) == 1 and len(outputs) == 1,
            "model_sources": [f"{self.prefix}.c", f"{self.prefix}_weights.c"]
            + ([f"{self.prefix}_f32.c"] if len(inputs) == 1 and len(outputs) == 1 else []),
            "shared_arena": None,
            "arena_size": self.c.plan.arena_size, "lower_bound": self.c.plan.lower_bound,
            "weight_bytes": sum(a.nbytes for a in self.arrays),
            "macs": sum(lay.macs for lay in layers),
            "views": sum(1 for p in self.c.prepared if not p.kernel),
            "guard": self.c.plan.guard, "guard_buffers": self.guard_buffers(layers),
            "node_names": [n.name for n in self.g.nodes],
            "cmsis": self.c.backend == "cmsis-nn",
            "portable_layers": list(self.c.portable_layers),
            "scratch_checks": self.scratch_checks(layers),
            "cmsis_version": str(self.c.cmsis_version) if self.c.cmsis_version else "",
            "cmsis_supported": cmsis_supported(),
            "numerics": self.g.numerics,
            "s16": s16_kernels(kernels),
            "s4": s4_kernels(kernels),
            "optimize": self.c.optimize, "opt": OPT_FLAGS[self.c.optimize],
            "cmsis_opt": CMSIS_OPT_FLAGS[self.c.optimize],
        }

    def hosted(self, k: int, name: str) -> dict[str, Any]:
        """A graph input held in the arena: its offset (in its pool), the run's and the header's pointers."""
        at = self.c.plan.offset_of(name)
        assert at is not None
        pool, off = self.pools.split(at) if self.pools is not None else ("", at)
        arena = f"arena_{pool}" if pool else "arena"
        return {"index": k, "offset": off, "size": self.g.t(name).nbytes, "arena": arena,
                "place": self.place_text(at), "global": f"{self.prefix}_{arena}"}

    def pool_figures(self) -> list[dict[str, Any]]:
        """Several pools: each one's name, upper-case name and size (empty: one arena)."""
        if self.pools is None:
            return []
        return [{"name": u.pool.name, "NAME": upper_ident(u.pool.name), "size": u.used, "capacity": u.pool.size,
                 "accesses": u.accesses, "rank": u.pool.rank} for u in self.pools.pools]

    def uses(self, layers: list[Layer]) -> dict[str, bool]:
        """Which of <prefix>_run_multi()'s `arena` and `inputs` its layers' code reads (the others
        get a `(void)x;`). <PREFIX>_AFTER_LAYER's arguments do not count: its default expands to
        nothing."""
        hosted = any(self.c.plan.offset_of(n) is not None for n in self.g.inputs)
        text = "\n".join(line for lay in layers if not lay.inside
                         for line in (*lay.locals, *lay.block, *(c.text for c in lay.calls)))
        names = ["arena", "inputs"] + [f"arena_{u.pool.name}" for u in (self.pools.pools if self.pools else ())]
        return {name: hosted or re.search(rf"\b{name}\b", text) is not None for name in names}

    def scratch_checks(self, layers: list[Layer]) -> list[dict[str, Any]]:
        """CMSIS-NN calls whose scratch <prefix>_init() checks once against the linked library."""
        return [{"index": lay.index, "op": lay.op, "kernel": lay.kernel, "cond": lay.precheck,
                 "bytes": ctx_size(self.prep(lay.index)),
                 "offset": (scratch_of(self.c.plan, lay.name) or 0) + ctx_offset(self.prep(lay.index)),
                 "place": self.place_text((scratch_of(self.c.plan, lay.name) or 0)
                                          + ctx_offset(self.prep(lay.index)))}
                for lay in layers if lay.precheck]

    def guard_buffers(self, layers: list[Layer]) -> list[dict[str, Any]]:
        """Guard-byte builds: every arena buffer with the layer before which its guards are filled
        (the first kernel call at or after the step that writes it) and its last layer."""
        if not self.c.plan.guard:
            return []
        kernels = [lay.index for lay in layers]
        out = []
        for b in self.c.plan.buffers:
            fill_at = next((k for k in kernels if k >= b.first), None)
            if fill_at is not None and fill_at <= b.last:
                pool, at = self.pools.split(b.offset) if self.pools is not None else ("", b.offset)
                out.append({"offset": at, "bytes": b.size, "fill_at": fill_at, "last": b.last,
                            "name": c_comment(b.name),
                            "pool": [u.pool.name for u in self.pools.pools].index(pool) if self.pools else 0})
        return out


def render_bundle(c: Compiled, board_flags: str, board_name: str,
                  frontend: FrontEnd | None = None, tests: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """Every file of the bundle, relative path -> bytes (nothing is written here). With a feature
    front end (emitter/features/), its files too, and the arena sized for its scratch. With `tests`
    (the test/ folder of emitter/verify/bundle_test.py), those files too, and the Makefile's and
    CMakeLists.txt's test targets."""
    problem = prefix_problem(c.name)
    if problem is not None:
        raise UsageError(f"the C prefix '{c.name}' cannot be used: {problem}; choose another "
                         "with --name")
    ctx = BundleBuilder(c).context()
    ctx.update(cpu_flags=board_flags, board=board_name, frontend=None, tests=bool(tests))
    if frontend is not None and ctx["pools"]:
        raise UsageError("a feature front end keeps its scratch in the one arena: with --frontend, give the "
                         "fastest RAM pool room for the whole plan (--pool NAME=SIZE)")
    if frontend is not None:
        ctx["arena_size"] = max(ctx["arena_size"], frontend.scratch_bytes)
        ctx["frontend"] = frontend.figures() | {"defines": " ".join(f"-D{d}" for d in DSP_DEFINES),
                                                     "define_names": " ".join(DSP_DEFINES)}
    env = environment()
    p = c.name
    files = {
        f"{p}.h": env.get_template("model.h.j2").render(ctx),
        f"{p}.c": env.get_template("model.c.j2").render(ctx),
        f"{p}_weights.h": env.get_template("weights.h.j2").render(ctx),
        f"{p}_weights.c": env.get_template("weights.c.j2").render(ctx),
        "Makefile": env.get_template("Makefile.j2").render(ctx),
        "CMakeLists.txt": env.get_template("CMakeLists.txt.j2").render(ctx),
        "README.md": env.get_template("bundle_README.md.j2").render(ctx),
    }
    if ctx["single_io"]:
        files[f"{p}_f32.c"] = env.get_template("model_f32.c.j2").render(ctx)
    if frontend is not None:
        from emitter.render.frontend import render_frontend

        files.update(render_frontend(frontend, p, ctx))
    out = {k: (wrap_comments(v) if k.endswith((".c", ".h")) else v).encode() for k, v in files.items()}
    rep = report(c, ctx) | ({"frontend": ctx["frontend"]} if frontend is not None else {})
    out["report.json"] = (json.dumps(rep, indent=1, sort_keys=True) + "\n").encode()
    out["report.html"] = report_html(json.loads(out["report.json"])).encode()
    rt = data_dir("mcu_runtime")
    shipped = runtime_files(ctx["kernels"], ctx["bands"], ctx["isa"])
    for rel in shipped:
        out[f"mcu_runtime/{rel}"] = (rt / rel).read_bytes()
    # the one runtime file a bundle's options change: MCU_OPTIMIZE_SIZE, and the variant's symbol names
    out[CONFIG] = variant_config(config_header(out[CONFIG], c.optimize, ctx["isa"]),
                                 variant_tag(c.optimize, ctx["isa"], board_flags), runtime_symbols())
    out.update(tests or {})
    return out


CTX = "#ctx"  # arg_text's ptrs key of an mcu_context_t pointer (a fed segment's first call: Segment.feed)


def with_ctx(args: tuple[CArg, ...], size: int) -> tuple[CArg, ...]:
    """The call's arguments with its mcu_context_t holding `size` bytes of the layer's scratch."""
    ctx = {"buf": CRef("scratch" if size else "null"), "size": size}
    return tuple(replace(a, fields=ctx) if isinstance(a, StructArg) and a.ctype == "mcu_context_t" else a
                 for a in args)
