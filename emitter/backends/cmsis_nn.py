"""The cmsis-nn backend: direct calls into the user's CMSIS-NN (versions: cmsis_version.py).

Each portable kernel call that CMSIS-NN implements bit-exactly is re-expressed as the CMSIS-NN
call with the same numbers (the golden model is unchanged: CMSIS-NN implements the same TFLite
arithmetic); everything else keeps the portable kernel and is reported as a fallback.

    mcu_conv2d_s8            -> arm_convolve_wrapper_s8            (scratch from CMSIS-NN itself)
    mcu_depthwise_conv2d_s8  -> arm_depthwise_conv_wrapper_s8
    mcu_fully_connected_s8   -> arm_fully_connected_s8 / _per_channel_s8 (MVE: build-time kernel sums)
    mcu_avgpool_s8           -> arm_avgpool_s8
    mcu_maxpool_s8           -> arm_max_pool_s8
    mcu_add_s8 / mcu_mul_s8  -> arm_elementwise_add_s8 / _mul_s8   (no broadcast, no subtract)
    mcu_softmax_s8 (mode 0)  -> arm_softmax_s8
    mcu_transpose_s8         -> arm_transpose_s8                   (rank <= 4)
    mcu_concat_s8            -> arm_concatenation_s8_{x,y,z,w}     (one call per input, uint16 sizes)
    mcu_pad_s8               -> arm_pad_s8                         (rank <= 4 after squeezing)

Concat never requantizes: lowering puts a requantize layer (portable) in front of every input whose
scale/zero point differs from the output's, so the concat layer itself is a pure copy.

Scratch sizes come from the user's CMSIS-NN: a small host tool (mcu_runtime/tools/cmsis_sizer.c)
calls the _get_buffer_size[_dsp|_mve] function of the board's code path. The generated
<name>_init() (run once, by <name>_run*() on first use) checks each size again against the
CMSIS-NN linked on the target and returns <NAME>_ERR_SCRATCH rather than let a kernel overrun
the arena (CMSIS-NN never checks ctx.size itself).
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import subprocess
from dataclasses import replace
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np

from emitter.backends.cmsis_version import CmsisVersion, detect
from emitter.backends.cmsis_quirks import mve_1xn_problem
from emitter.backends.kernel_choice import ours_is_faster
from emitter.errors import ToolchainError
from emitter.kernel_params import Bcast
from emitter.layout import squeeze_transpose
from emitter.ops.base import Call, ConstArg, CRef, IntArg, NullArg, Prepared, StructArg, TensorArg, TensorListArg
from emitter.resources import data_dir

# Source files never compiled: float kernels of newer CMSIS-NN, which need ARM_NN_ENABLE_F32/F16.
# The bundle's Makefile and CMakeLists.txt and the SConstruct skip the same names.
FLOAT_SOURCE = re.compile(r"_(f16|f32|flt)\.c$")


def cmsis_path() -> Path | None:
    value = os.environ.get("CMSIS_NN_PATH")
    return Path(value) if value else None


def check_version(path: Path | str) -> CmsisVersion:
    """The version of the CMSIS-NN at `path`; UsageError if mcugen cannot use it."""
    return detect(path)


def sources(path: Path) -> list[Path]:
    """The CMSIS-NN sources a build compiles: Source/<group>/*.c without the float kernels."""
    return [p for p in sorted((path / "Source").glob("*/*.c")) if not FLOAT_SOURCE.search(p.name)]


def variant(board) -> str:
    return "mve" if board.has_mve else ("dsp" if board.has_dsp else "c")


@lru_cache(maxsize=4)
def sizer(path: Path) -> Path:
    """Build (once, cached by path and header hash) the host scratch-size tool."""
    header = (path / "Include" / "arm_nnfunctions.h").read_bytes()
    key = hashlib.sha256(str(path).encode() + header).hexdigest()[:16]
    cache = Path(os.environ.get("MCUGEN_CACHE_DIR", Path.home() / ".cache" / "mcugen")) / f"cmsis-sizer-{key}"
    exe = cache / "cmsis_sizer"
    if exe.is_file():
        return exe
    cache.mkdir(parents=True, exist_ok=True)
    cmd = ["gcc", "-O1", "-w", f"-I{path / 'Include'}", str(data_dir("mcu_runtime") / "tools" / "cmsis_sizer.c"),
           *map(str, sources(path)), "-o", str(exe)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise ToolchainError(f"building the CMSIS-NN scratch-size tool failed:\n{res.stderr[-2000:]}")
    return exe


def ask_sizes(path: Path, queries: list[str]) -> list[int]:
    if not queries:
        return []
    res = subprocess.run([str(sizer(path))], input="\n".join(queries) + "\n", capture_output=True,
                         text=True, check=False)
    values = res.stdout.split()
    if res.returncode != 0 or len(values) != len(queries):
        raise ToolchainError(f"the CMSIS-NN scratch-size tool failed on: {queries[:2]}")
    return [max(int(v), 0) for v in values]


def dims(d) -> dict[str, int]:
    return {"n": d.n, "h": d.h, "w": d.w, "c": d.c}


def tile(w: int, h: int) -> dict[str, int]:
    return {"w": w, "h": h}


def arr(a: ConstArg, cast: str = "") -> CRef:
    return CRef("array", a, cast)


def padded(a: np.ndarray, extra: int) -> np.ndarray:
    """MVE kernels read up to 3 elements past per-channel arrays: pad with zeros."""
    return np.concatenate([a, np.zeros(extra, a.dtype)]) if extra else a


def dims_q(d) -> str:
    return f"{d.n} {d.h} {d.w} {d.c}"


def dims4(shape: tuple[int, ...] | list[int]) -> dict[str, int]:
    """Up to four values as cmsis_nn_dims {n, h, w, c}, left-aligned, missing trailing ones = 1."""
    v = list(shape) + [1] * (4 - len(shape))
    return {"n": v[0], "h": v[1], "w": v[2], "c": v[3]}


U16 = 0xFFFF


def split_u16(n: int, k: int) -> tuple[int, ...] | None:
    """n as exactly k factors, each a uint16 (innermost first, largest first), or None."""
    if k == 0:
        return () if n == 1 else None
    if k == 1:
        return (n,) if n <= U16 else None
    for d in sorted((d for i in range(1, math.isqrt(n) + 1) if n % i == 0 for d in (i, n // i)), reverse=True):
        rest = split_u16(n // d, k - 1) if d <= U16 else None
        if rest is not None:
            return (d, *rest)
    return None


def concat_plan(outer: int, chunks: list[int]) -> tuple[str, tuple[int, ...], list[int], tuple[int, ...]] | None:
    """Each input is `outer` rows of chunks[i] bytes. As arm_concatenation_s8_<axis>, whose dims are
    x (innermost), y, z, w: (axis, inner dims below the axis, per-input axis sizes, outer dims
    above it), all uint16; None if no variant fits. `_w` (one copy per input) needs outer == 1."""
    for k, axis in enumerate("xyzw"):
        unit = math.gcd(*chunks) if k else 1  # bytes of the inner dims, common to every input
        inner, above = split_u16(unit, k), split_u16(outer, 3 - k)
        sizes = [c // unit for c in chunks]
        if inner is not None and above is not None and max(sizes) <= U16 and (axis == "w" or sum(sizes) <= U16):
            return axis, inner, sizes, above
    return None


def pad_axes(shape: tuple[int, ...], before: tuple[int, ...], after: tuple[int, ...]) -> list[tuple[int, int, int]] | None:
    """(size, before, after) per axis as at most 4 axes, or None: unit axes without padding are
    dropped, and while more than 4 remain, an unpadded axis folds into its outer neighbour."""
    axes = [t for t in zip(shape, before, after) if t != (1, 0, 0)] or [(1, 0, 0)]
    k = len(axes) - 1
    while len(axes) > 4 and k > 0:
        s, b, a = axes[k]
        if b == a == 0:
            ps, pb, pa = axes[k - 1]
            axes[k - 1:k + 1] = [(ps * s, pb * s, pa * s)]
        k -= 1
    return [(1, 0, 0)] * (4 - len(axes)) + axes if len(axes) <= 4 else None


class Converter:
    def __init__(self, path: Path, board, sizes_for: str | None = None):
        self.path, self.var = path, variant(board)
        self.sizes_for = sizes_for or self.var  # the code path whose scratch sizes the queries ask
        self.refusal: str | None = None  # why the last convert() kept the portable kernel, if known

    def convert(self, p: Prepared) -> tuple[Prepared, str | None]:
        """(prepared for CMSIS-NN or the portable one, query for its scratch size or None)."""
        self.refusal = None
        fn = getattr(self, p.kernel, None)
        if fn is None:
            return p, None
        out = fn(p)
        return out if out is not None else (p, None)

    def ctx(self, scratch: bool, buf: CRef | None = None, size: int = 0) -> StructArg:
        if buf is not None:
            return StructArg("cmsis_nn_context", "ctx", {"buf": buf, "size": size})
        return StructArg("cmsis_nn_context", "ctx", {"buf": CRef("scratch" if scratch else "null"), "size": -1 if scratch else 0})

    def mcu_conv2d_s8(self, p: Prepared):
        c: Any = p.params
        x, f, b, y = p.args
        if self.var == "mve" and (problem := mve_1xn_problem(c)):
            self.refusal = problem
            return None
        pad = 4 if self.var == "mve" else 0
        bias = b if isinstance(b, ConstArg) else ConstArg("bias", np.zeros(c.filter.n, np.int32))
        conv = {"input_offset": c.q.input_offset, "output_offset": c.q.output_offset,
                "stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
                "dilation": tile(c.dilation_w, c.dilation_h),
                "activation": {"min": c.q.act_min, "max": c.q.act_max}}
        args = (StructArg("cmsis_nn_conv_params", "conv", conv),
                StructArg("cmsis_nn_per_channel_quant_params", "quant",
                          {"multiplier": arr(ConstArg("multiplier", padded(c.multiplier, pad)), "(int32_t *)"),
                           "shift": arr(ConstArg("shift", padded(c.shift, pad)), "(int32_t *)")}),
                StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), x,
                StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)), f,
                StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.filter.n}),
                ConstArg("bias", padded(bias.data, pad)),
                StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), y)
        q = (f"conv {self.sizes_for} {dims_q(c.input)} {dims_q(c.filter)} {dims_q(c.output)} "
             f"{c.stride_w} {c.stride_h} {c.pad_left} {c.pad_top} {c.dilation_w} {c.dilation_h}")
        return self.call(p, "arm_convolve_wrapper_s8", args), q

    def mcu_depthwise_conv2d_s8(self, p: Prepared):
        c: Any = p.params
        x, f, b, y = p.args[1:]  # (after the mcu_context_t)
        assert isinstance(f, ConstArg)
        pad = 4 if self.var == "mve" else 0
        bias = b if isinstance(b, ConstArg) else ConstArg("bias", np.zeros(c.output.c, np.int32))
        dw = {"input_offset": c.q.input_offset, "output_offset": c.q.output_offset, "ch_mult": c.depth_multiplier,
              "stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
              "dilation": tile(c.dilation_w, c.dilation_h),
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
        args = (StructArg("cmsis_nn_dw_conv_params", "dw", dw),
                StructArg("cmsis_nn_per_channel_quant_params", "quant",
                          {"multiplier": arr(ConstArg("multiplier", padded(c.multiplier, pad)), "(int32_t *)"),
                           "shift": arr(ConstArg("shift", padded(c.shift, pad)), "(int32_t *)")}),
                StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), x,
                StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)),
                ConstArg("filter", padded(f.data.ravel(), pad * 4)),
                StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.output.c}),
                ConstArg("bias", padded(bias.data, pad)),
                StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), y)
        q = (f"dw {self.sizes_for} {dims_q(c.input)} {dims_q(c.filter)} {dims_q(c.output)} "
             f"{c.stride_w} {c.stride_h} {c.pad_left} {c.pad_top} {c.dilation_w} {c.dilation_h} {c.depth_multiplier}")
        return self.call(p, "arm_depthwise_conv_wrapper_s8", args), q

    def mcu_fully_connected_s8(self, p: Prepared):
        c: Any = p.params
        x, w, b, y = p.args
        fc = {"input_offset": c.q.input_offset, "filter_offset": 0, "output_offset": c.q.output_offset,
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
        if c.per_channel:
            quant = StructArg("cmsis_nn_per_channel_quant_params", "quant",
                              {"multiplier": arr(ConstArg("multiplier", c.multiplier), "(int32_t *)"),
                               "shift": arr(ConstArg("shift", c.shift), "(int32_t *)")})
            fn = "arm_fully_connected_per_channel_s8"
        else:
            quant = StructArg("cmsis_nn_per_tensor_quant_params", "quant",
                              {"multiplier": int(c.multiplier[0]), "shift": int(c.shift[0])})
            fn = "arm_fully_connected_s8"
        filt = {"n": c.in_features, "h": 1, "w": 1, "c": c.out_features}
        args = [StructArg("cmsis_nn_fc_params", "fc", fc), quant,
                StructArg("cmsis_nn_dims", "input_dims", {"n": c.batches, "h": 1, "w": 1, "c": c.in_features}), x,
                StructArg("cmsis_nn_dims", "filter_dims", filt), w,
                StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.out_features}),
                b if isinstance(b, ConstArg) else NullArg(),
                StructArg("cmsis_nn_dims", "output_dims", {"n": c.batches, "h": 1, "w": 1, "c": c.out_features}), y]
        assert isinstance(w, ConstArg)
        if self.var == "mve":  # kernel sums: bias[r] + input_offset * sum_c w[r][c], computed now
            bias = b.data.astype(np.int64) if isinstance(b, ConstArg) else np.zeros(c.out_features, np.int64)
            sums = (bias + c.q.input_offset * w.data.astype(np.int64).reshape(c.out_features, -1).sum(axis=1))
            ctx = self.ctx(False, arr(ConstArg("kernel_sums", sums.astype(np.int32)), "(void *)"), 4 * c.out_features)
            return replace(p, kernel=fn, params=None, args=(ctx, *args), summary=p.summary + "; CMSIS-NN"), None
        return self.call(p, fn, tuple(args)), f"fc {self.sizes_for} {c.in_features} 1 1 {c.out_features}"

    def pool(self, p: Prepared, fn: str, scratch: bool):
        c: Any = p.params
        x, y = p.args
        pool = {"stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
                "activation": {"min": c.act_min, "max": c.act_max}}
        args = (StructArg("cmsis_nn_pool_params", "pool", pool),
                StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), x,
                StructArg("cmsis_nn_dims", "filter_dims", {"n": 1, "h": c.filter_h, "w": c.filter_w, "c": 1}),
                StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), y)
        return self.call(p, fn, args), (f"avg {self.sizes_for} {c.output.w} {c.input.c}" if scratch else None)

    def mcu_avgpool_s8(self, p: Prepared):
        return self.pool(p, "arm_avgpool_s8", True)

    def mcu_maxpool_s8(self, p: Prepared):
        return self.pool(p, "arm_max_pool_s8", False)

    def mcu_add_s8(self, p: Prepared):
        c: Any = p.params
        full = Bcast(1, c.size)
        if c.in1 != full or c.in2 != full or c.input2_multiplier < 0:
            return None
        a, b, y = p.args
        args = (a, b, IntArg(c.input1_offset), IntArg(c.input1_multiplier), IntArg(c.input1_shift),
                IntArg(c.input2_offset), IntArg(c.input2_multiplier), IntArg(c.input2_shift),
                IntArg(c.left_shift), y, IntArg(c.output_offset), IntArg(c.output_multiplier),
                IntArg(c.output_shift), IntArg(c.act_min), IntArg(c.act_max), IntArg(c.size))
        return replace(p, kernel="arm_elementwise_add_s8", params=None, args=args,
                       summary=p.summary + "; CMSIS-NN"), None

    def mcu_mul_s8(self, p: Prepared):
        c: Any = p.params
        full = Bcast(1, c.size)
        if c.in1 != full or c.in2 != full:
            return None
        a, b, y = p.args
        args = (a, b, IntArg(c.input1_offset), IntArg(c.input2_offset), y, IntArg(c.output_offset),
                IntArg(c.output_multiplier), IntArg(c.output_shift), IntArg(c.act_min), IntArg(c.act_max),
                IntArg(c.size))
        return replace(p, kernel="arm_elementwise_mul_s8", params=None, args=args,
                       summary=p.summary + "; CMSIS-NN"), None

    def mcu_softmax_s8(self, p: Prepared):
        c: Any = p.params
        if c.output_mode != 0:
            return None
        x, y = p.args
        args = (x, IntArg(c.rows), IntArg(c.row_size), IntArg(c.input_multiplier),
                IntArg(c.input_left_shift), IntArg(c.diff_min), y)
        return replace(p, kernel="arm_softmax_s8", params=None, args=args,
                       summary=p.summary + "; CMSIS-NN"), None

    def mcu_transpose_s8(self, p: Prepared):
        c: Any = p.params
        x, y = p.args
        # The smallest equivalent transpose (relayouts already are): then only rank 1 is the
        # identity, and no 4-D perm starts (0, 1), which v7.0.0 runs as a w <-> c swap on MVE.
        shape, perm = squeeze_transpose(c.in_shape[:c.rank], c.perm[:c.rank])
        if len(shape) > 4:
            return None
        # 2-D always swaps, in arm_transpose_s8_nhcw: uint16 rows and columns, and on MVE
        # gathers at uint16 offsets up to 7 * columns
        if len(shape) == 2 and (max(shape) > U16 or (self.var == "mve" and 7 * shape[1] > U16)):
            return None
        out_shape = tuple(shape[a] for a in perm)
        params = {"num_dims": len(shape), "permutations": arr(ConstArg("perm", np.array(perm, np.uint32)))}
        args = (x, y, StructArg("cmsis_nn_dims", "input_dims", dims4(shape)),
                StructArg("cmsis_nn_dims", "output_dims", dims4(out_shape)),
                StructArg("cmsis_nn_transpose_params", "transpose", params))
        return replace(p, kernel="arm_transpose_s8", params=None, args=args,
                       summary=p.summary + "; CMSIS-NN"), None

    def mcu_concat_s8(self, p: Prepared):
        _, names, chunk, outer, y = p.args
        assert isinstance(names, TensorListArg) and isinstance(chunk, ConstArg) and isinstance(outer, IntArg)
        plan = concat_plan(outer.value, [int(v) for v in chunk.data])
        if plan is None:
            return None
        axis, inner, sizes, above = plan
        fn = f"arm_concatenation_s8_{axis}"
        calls = []
        total = [IntArg(sum(sizes))] if axis != "w" else []  # the output's size along the axis
        for name, size, offset in zip(names.names, sizes, accumulate([0, *sizes[:-1]])):
            xyzw = [IntArg(v) for v in (*inner, size, *above)]
            calls.append(Call(fn, (TensorArg(name), *xyzw, y, *total, IntArg(offset))))
        return replace(p, kernel=fn, params=None, args=calls[0].args, then=tuple(calls[1:]),
                       summary=p.summary + "; CMSIS-NN, one call per input"), None

    def mcu_pad_s8(self, p: Prepared):
        c: Any = p.params
        x, y = p.args
        axes = pad_axes(c.in_shape[:c.rank], c.pad_before[:c.rank], c.pad_after[:c.rank])
        if axes is None:
            return None
        size, before, after = zip(*axes)
        args = (x, y, IntArg(c.pad_value), StructArg("cmsis_nn_dims", "input_size", dims4(size)),
                StructArg("cmsis_nn_dims", "pre_pad", dims4(before)), StructArg("cmsis_nn_dims", "post_pad", dims4(after)))
        return replace(p, kernel="arm_pad_s8", params=None, args=args, summary=p.summary + "; CMSIS-NN"), None

    def call(self, p: Prepared, fn: str, args: tuple) -> Prepared:
        """A call with a cmsis_nn_context first; its size is filled in by with_scratch()."""
        return replace(p, kernel=fn, params=None, args=(self.ctx(True), *args),
                       summary=p.summary + "; CMSIS-NN")


RETURNS_VOID = ("arm_softmax_s8", "arm_concatenation_s8_x", "arm_concatenation_s8_y",
                "arm_concatenation_s8_z", "arm_concatenation_s8_w")


def precheck(kernel: str, idents: dict[str, str], ctx_size: int) -> str | None:
    """C condition that is true when the target's CMSIS-NN needs more than ctx.size bytes."""
    if kernel not in GET_SIZE or "ctx" not in idents:
        return None
    fn, needs = GET_SIZE[kernel]
    args = [f"{idents[n.split('.')[0]]}.{n.split('.')[1]}" if "." in n else "&" + idents[n] for n in needs]
    return f"{fn}({', '.join(args)}) > {ctx_size}"
GET_SIZE: dict[str, tuple[str, tuple[str, ...]]] = {  # kernel -> (size function, structs it takes)
    "arm_convolve_wrapper_s8": ("arm_convolve_wrapper_s8_get_buffer_size",
                                ("conv", "input_dims", "filter_dims", "output_dims")),
    "arm_depthwise_conv_wrapper_s8": ("arm_depthwise_conv_wrapper_s8_get_buffer_size",
                                      ("dw", "input_dims", "filter_dims", "output_dims")),
    "arm_fully_connected_s8": ("arm_fully_connected_s8_get_buffer_size", ("filter_dims",)),
    "arm_fully_connected_per_channel_s8": ("arm_fully_connected_s8_get_buffer_size", ("filter_dims",)),
    "arm_avgpool_s8": ("arm_avgpool_s8_get_buffer_size", ("output_dims.w", "input_dims.c")),
}


def with_scratch(p: Prepared, size: int) -> Prepared:
    """Fill the planned scratch size into the context struct of a converted call."""
    ctx = p.args[0]
    if not isinstance(ctx, StructArg) or ctx.ctype != "cmsis_nn_context" or ctx.fields["size"] != -1:
        return p
    fields = {"buf": CRef("scratch") if size else CRef("null"), "size": size}
    return replace(p, args=(StructArg("cmsis_nn_context", "ctx", fields), *p.args[1:]), scratch=size)


def convert_all(prepared: tuple[Prepared, ...], board, path: Path, choice: str = "fastest",
                sizes_for: str | None = None) -> tuple[tuple[Prepared, ...], list[tuple[int, str, str]]]:
    """Every call CMSIS-NN can take, with its scratch size.

    Returns (calls, portable layers as (index, kernel, why)). choice "fastest" keeps mcugen's
    kernel where ours_is_faster() says so; "cmsis" converts every call CMSIS-NN can take.
    sizes_for ("c", "dsp", "mve") sizes the scratch for that code path instead of the board's:
    "c" for a host build, which runs CMSIS-NN's plain C path (emitter.verify.host_twin)."""
    conv = Converter(path, board, sizes_for)
    staged: list[tuple[Prepared, str | None]] = []
    why: dict[int, str] = {}
    for k, p in enumerate(prepared):
        faster = ours_is_faster(p, conv.var) if choice == "fastest" and p.kernel else None
        if faster:
            why[k] = f"faster than CMSIS-NN here: {faster}"
            staged.append((p, None))
        else:
            staged.append(conv.convert(p))
            if conv.refusal:
                why[k] = conv.refusal
    sizes = iter(ask_sizes(path, [q for _, q in staged if q]))
    out, portable = [], []
    for k, (orig, (p, q)) in enumerate(zip(prepared, staged)):
        if q is not None:
            p = with_scratch(p, next(sizes))
        elif p.args and isinstance(p.args[0], StructArg) and p.args[0].fields.get("size") == -1:
            p = with_scratch(p, 0)
        if p.kernel == orig.kernel and p.kernel:
            portable.append((k, p.kernel, why.get(k) or no_cmsis_reason(conv, p)))
        out.append(p)
    return tuple(out), portable


def no_cmsis_reason(conv: Converter, p: Prepared) -> str:
    if getattr(conv, p.kernel, None) is None:
        return "CMSIS-NN has no such kernel"
    return "outside what CMSIS-NN's kernel takes (e.g. broadcasting or requantization)"
