"""The cmsis-nn backend: direct calls into the user's CMSIS-NN (versions: cmsis_version.py).

Each portable kernel call that CMSIS-NN implements bit-exactly is re-expressed as the CMSIS-NN
call with the same numbers (the golden model is unchanged: CMSIS-NN implements the same TFLite
arithmetic); everything else keeps the portable kernel and is reported as a fallback. The mapping
of each kernel is `to_cmsis(conv, p)` in its twin (emitter/kernels/mcu_<k>.py); the functions and
types it may use are the table of emitter/kernels/cmsis_api.py. This module holds the shared machinery: dispatch,
the call builder (operands by parameter name, the context), and the scratch sizes.

Scratch sizes come from the user's CMSIS-NN: a small host tool (mcu_runtime/tools/cmsis_sizer.c)
calls the _get_buffer_size[_dsp|_mve] function of the board's code path, one ScratchRequest per
call. The generated <name>_init() (run once, by <name>_run*() on first use) checks each size again
against the CMSIS-NN linked on the target and returns <NAME>_ERR_SCRATCH rather than let a kernel
overrun the arena (CMSIS-NN never checks ctx.size itself).
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from emitter.backends.cmsis_version import CmsisVersion, detect
from emitter.backends.cost_cases import shape_of
from emitter.backends.kernel_choice import Choice, choose, ours_is_faster, path_of, predict_cmsis, reason
from emitter.boards import Board
from emitter.calls import Call, CArg, CRef, Prepared, StructArg
from emitter.errors import ToolchainError
from emitter.kernels import kernel
from emitter.kernels.cmsis_api import API, ScratchRequest, operands, sizer_query
from emitter.kernels.common import rounding_of
from emitter.resources import cache_dir, data_dir

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


@lru_cache(maxsize=4)
def sizer(path: Path) -> Path:
    """Build (once, cached by path, header and tool source hash) the host scratch-size tool."""
    header = (path / "Include" / "arm_nnfunctions.h").read_bytes()
    tool = (data_dir("mcu_runtime") / "tools" / "cmsis_sizer.c").read_bytes()  # its queries change with it
    key = hashlib.sha256(str(path).encode() + header + tool).hexdigest()[:16]
    exe = cache_dir(f"cmsis-sizer-{key}") / "cmsis_sizer"
    if exe.is_file():
        return exe
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


class Converter:
    """Dispatches a portable call to its twin's to_cmsis() and builds the CMSIS-NN call."""

    def __init__(self, path: Path, board: Board, sizes_for: str | None = None) -> None:
        self.path, self.var = path, board.isa
        self.sizes_for = sizes_for or self.var  # the code path whose scratch sizes the queries ask
        self.refusal: str | None = None  # why the last convert() kept the portable kernel, if known

    def convert(self, p: Prepared) -> tuple[Prepared, ScratchRequest | None]:
        """(prepared for CMSIS-NN or the portable one, its scratch request or None)."""
        self.refusal = None
        mapping = cmsis_mapping(p.kernel)
        out = mapping(self, p) if mapping is not None else None
        return out if out is not None else (p, None)

    def call(self, p: Prepared, fn: str, values: dict[str, CArg], then: tuple[Call, ...] = (),
             summary: str | None = None) -> tuple[Prepared, ScratchRequest | None]:
        """Layer p as a call of CMSIS-NN's `fn` with these operands (named as fn's parameters).
        A function taking a context gets one (NULL, 0) unless `values` has it; its size is the
        answer to the returned scratch request (with_scratch fills it in)."""
        request = None
        if API[fn].params[0][1] == "ctx" and "ctx" not in values:
            values = {"ctx": StructArg("cmsis_nn_context", "ctx", {"buf": CRef("null"), "size": 0}), **values}
            request = sizer_query(fn, values, self.sizes_for)
        elif API[fn].params[0][1] == "ctx" and scratch_offset(values["ctx"]) is not None:
            request = sizer_query(fn, values, self.sizes_for)  # a context placed in the layer's scratch
        return replace(p, kernel=fn, params=None, operands=operands(fn, values), then=then, scratch=0,
                       summary=p.summary + "; CMSIS-NN" if summary is None else summary), request


def cmsis_mapping(name: str) -> Callable[[Converter, Prepared], tuple[Prepared, ScratchRequest | None] | None] | None:
    """The to_cmsis() of a portable kernel's twin, None where CMSIS-NN has no such kernel."""
    return kernel(name).to_cmsis


def scratch_offset(ctx: CArg) -> int | None:
    """Where a twin placed a call's context in the layer's scratch (after its other buffers), or None."""
    buf = ctx.fields.get("buf") if isinstance(ctx, StructArg) else None
    return buf.offset if isinstance(buf, CRef) and buf.kind == "scratch" else None


def with_scratch(p: Prepared, size: int) -> Prepared:
    """Fill the planned scratch size into the context of a converted call; a context a twin placed
    after other buffers of the layer (CRef offset) keeps its place, the scratch covers both."""
    base = scratch_offset(p.operands["ctx"]) or 0
    fields = {"buf": CRef("scratch", offset=base) if size or base else CRef("null"), "size": size}
    return replace(p, operands={**p.operands, "ctx": StructArg("cmsis_nn_context", "ctx", fields)},
                   scratch=base + size)


KEPT = "runs by rows to meet the RAM budget (CMSIS-NN's kernel takes whole tensors)"

# -- CMSIS-NN on row bands (docs/memory.md, CMSIS-NN in streamed plans) --
# The calls whose operands a band re-dimensions: input_dims.h, output_dims.h and the params'
# padding.h (the band's own top padding; its bottom padding is what the window reaches past
# input_dims.h, as for a whole layer). Each output row depends only on its window, so a band call
# computes exactly the layer's rows.
BAND_FNS = frozenset({"arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8", "arm_avgpool_s8",
                      "arm_max_pool_s8"})
# element-wise calls of whole same-size operands: a band is a row pointer and block_size = its elements
ROW_BAND_FNS = frozenset({"arm_elementwise_add_s8"})
BAND_PARAMS = ("conv_params", "dw_conv_params", "pool_params")  # the operand whose padding.h a band sets


@dataclass(frozen=True)
class BandGeometry:
    """One distinct band call of a layer: its input rows, output rows and top padding."""
    in_h: int
    out_h: int
    pad_top: int


@dataclass(frozen=True, eq=False)
class Banded(Prepared):
    """A layer the planner sees as its portable kernel (whose twin states the band rule) that runs
    CMSIS-NN's call on each band when its segment runs by rows (and that whole CMSIS-NN call when
    it does not). `scratch` covers the whole call and every band call (run lean, the layer takes
    its twin's lean scratch instead: plan/stream.band_scratch)."""
    cmsis: Prepared | None = None  # the CMSIS-NN call, its context sized for every band (with_scratch)
    bands: tuple[BandGeometry, ...] = ()  # the distinct band calls of one output row each
    window: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)  # out_h, in_h, stride, dilation, taps, pad_top

    @property
    def is_portable(self) -> bool:  # its scratch is CMSIS-NN's (16-byte alignment, compiler.arena_alignment)
        return False


def band_geometries(p: Prepared) -> list[tuple[BandGeometry, Prepared]]:
    """Every distinct one-row band of a layer whose twin has a band rule: (geometry, the layer
    with that band's params)."""
    rule = kernel(p.kernel).band
    assert rule is not None and p.params is not None
    out: dict[BandGeometry, Prepared] = {}
    for r in range(p.params.output.h):
        bp, _, _ = rule(p.params, r, r + 1)
        geo = BandGeometry(bp.input.h, bp.output.h, bp.pad_top)
        if geo not in out:
            out[geo] = replace(p, params=bp)
    return list(out.items())


def window_of(p: Prepared) -> tuple[int, int, int, int, int, int]:
    """The mcu_window_t of a band layer (mcu_runtime/support/mcu_band.h): out_h, in_h, stride,
    dilation, taps, pad_top."""
    c: Any = p.params
    taps = c.filter.h if hasattr(c, "filter") else c.filter_h
    return (c.output.h, c.input.h, c.stride_h, getattr(c, "dilation_h", 1), taps, c.pad_top)


def band_requests(conv: Converter, p: Prepared, whole: Prepared) -> list[ScratchRequest | None] | None:
    """The scratch requests of every band call of layer p, whose whole-layer CMSIS-NN call is
    `whole`; None when CMSIS-NN does not take some band (the converter refuses it, e.g. a 1xN
    convolution of one input row on MVE: cmsis_quirks.mve_1xn_problem) or takes it otherwise."""
    if p.then or whole.then:
        return None
    if kernel(p.kernel).row_band is not None:
        return [] if whole.kernel in ROW_BAND_FNS else None  # no scratch
    if whole.kernel not in BAND_FNS or kernel(p.kernel).band is None:
        return None
    out = []
    for _, bp in band_geometries(p):
        got, request = conv.convert(bp)
        if got.kernel != whole.kernel:
            return None
        out.append(request)
    return out


ROUNDING = "onnxruntime numerics: CMSIS-NN rounds as TFLite (double rounding, ties away from zero)"
Calls = tuple[tuple[Prepared, ...], list[tuple[int, str, str]], list[Choice]]  # calls, portable layers, choices


@dataclass(frozen=True, eq=False)
class Conversion:
    """Every layer converted once, before planning: mcugen's call, and CMSIS-NN's where it takes the
    layer (scratch sized), with the rule that picks one of them (select) - the one place that says
    whose kernel runs a layer. The planner then only asks select() for the layers it wants
    portable to run them by rows; nothing converts again."""
    native: tuple[Prepared, ...]  # mcugen's calls
    cmsis: tuple[Prepared | None, ...]  # CMSIS-NN's call per layer; None: it stays mcugen's
    ours: dict[int, str]  # layers mcugen runs whatever the plan (onnxruntime rounding, faster), and why
    refused: dict[int, str]  # why CMSIS-NN's kernel does not take a layer its twin maps (converter refusal)
    choices: tuple[Choice, ...]  # the kernel choices made (kernel_choice.choose)
    no_such: tuple[str, ...] = ()  # per layer: why CMSIS-NN has no call, when it has none
    band_scratch: dict[int, int] = field(default_factory=dict)  # layers CMSIS-NN takes by bands: every band's scratch

    def select(self, keep: frozenset[int] = frozenset()) -> Calls:
        """The calls, with `keep` (layers to run by rows) left portable: (calls, portable layers as
        (index, kernel, why), kernel choices)."""
        out, portable = [], []
        for k, (mine, theirs) in enumerate(zip(self.native, self.cmsis, strict=True)):
            why = self.ours.get(k) or (KEPT if k in keep else None)
            p = mine if why is not None or theirs is None else theirs
            if why == KEPT and theirs is not None and k in self.band_scratch:
                p = banded(mine, theirs, self.band_scratch[k])
            if p.kernel == mine.kernel and p.kernel:
                portable.append((k, p.kernel, why or self.refused.get(k) or self.no_such[k]))
            out.append(p)
        return tuple(out), portable, list(self.choices)


def convert_once(prepared: tuple[Prepared, ...], board: Board, path: Path, choice: str = "fastest",
                 sizes_for: str | None = None, tuned: dict[int, tuple[int, int | None]] | None = None
                 ) -> Conversion:
    """Every call CMSIS-NN can take, with its scratch size, and which layers stay mcugen's.

    choice "fastest" keeps mcugen's kernel where it executes fewer instructions on the board's core
    (kernel_choice.choose: the cost table, or `tuned` counts measured by --tune); "cmsis" converts
    every call CMSIS-NN can take. sizes_for ("c", "dsp", "mve") sizes the scratch for that code path
    instead of the board's: "c" for a host build, which runs CMSIS-NN's plain C path
    (emitter.verify.run.host_twin)."""
    conv = Converter(path, board, sizes_for)
    staged: list[tuple[Prepared, ScratchRequest | None] | None] = []
    ours: dict[int, str] = {}
    refused: dict[int, str] = {}
    choices: list[Choice] = []
    for k, p in enumerate(prepared):
        ch = choose(p, k, board.name, conv.var, (tuned or {}).get(k)) if choice == "fastest" and p.kernel else None
        if p.kernel and rounding_of(p.params) != 0:
            ours[k] = ROUNDING
            staged.append(None)
            continue
        if ch is not None:
            choices.append(ch)
        if ch is not None and ch.ours_wins:
            ours[k] = f"faster than CMSIS-NN here: {reason(ch)}"
            staged.append(None)
            continue
        converted = conv.convert(p)
        if conv.refusal:
            refused[k] = conv.refusal
        staged.append(converted)
    sizes = iter(ask_sizes(path, [s[1].query for s in staged if s is not None and s[1] is not None]))
    cmsis: list[Prepared | None] = []
    chosen = {ch.index: ch for ch in choices}
    for k, (orig, got) in enumerate(zip(prepared, staged, strict=True)):
        call = None if got is None else (with_scratch(got[0], next(sizes)) if got[1] is not None else got[0])
        ok = call is not None and call.kernel != orig.kernel
        cmsis.append(replace(call, instructions=price(orig, chosen.get(k), board)) if ok and call else None)
    no_such = tuple(no_cmsis_reason(conv, p) if p.kernel else "" for p in prepared)
    return Conversion(prepared, tuple(cmsis), ours, refused, tuple(choices), no_such,
                      band_sizes(conv, prepared, cmsis, path))


# CMSIS-NN's element-wise calls, per element (an Add's outputs, a pool's inputs) on the ISA's path:
#   QEMU, IC's two residual Adds (8,192 and 4,096 elements) streamed, and its global average pool
#   (8x8x64), CMSIS-NN v7.0.0 -Ofast: 13.8 and 1.23 on cortex-m55, 81.8 and 6.5 on cortex-m4
PER_ELEMENT = {"mcu_add_s8": {"mve": 14.0, "dsp": 82.0}, "mcu_avgpool_s8": {"mve": 1.2, "dsp": 6.5}}
CALL_INSTRUCTIONS = 200  # a call's own set-up, as the planner's base counts it


def price(p: Prepared, ch: Choice | None, board: Board) -> int:
    """The instructions of CMSIS-NN's call of layer p on the board's core, for the planner's base:
    --tune's count, else the table's CMSIS-NN column fitted at its shape (kernel_choice.predict_cmsis),
    an element-wise call PER_ELEMENT; 0 where none knows it (the planner prices the call by its MACs)."""
    if ch is not None and ch.source == "measured":
        return ch.cmsis
    rate = PER_ELEMENT.get(p.kernel, {}).get(board.isa)
    if rate is not None and p.params is not None:
        elements = p.params.size if p.kernel == "mcu_add_s8" else p.macs
        return int(rate * elements) + CALL_INSTRUCTIONS
    s = shape_of(p)
    got = predict_cmsis(s, path_of(p, board.isa), board.name, board.isa) if s is not None else None
    return got or 0


def band_sizes(conv: Converter, prepared: tuple[Prepared, ...], cmsis: list[Prepared | None],
               path: Path) -> dict[int, int]:
    """Per layer CMSIS-NN takes on every band: the most scratch any of its band calls needs."""
    asked: dict[int, list[ScratchRequest | None]] = {}
    for k, (p, whole) in enumerate(zip(prepared, cmsis, strict=True)):
        if whole is not None and p.kernel and p.params is not None:
            got = band_requests(conv, p, whole)
            if got is not None:
                asked[k] = got
    queries = sorted({r.query for got in asked.values() for r in got if r is not None})
    size = dict(zip(queries, ask_sizes(path, queries), strict=True))
    return {k: max([0, *(size[r.query] for r in got if r is not None)]) for k, got in asked.items()}


def banded(mine: Prepared, theirs: Prepared, band_scratch: int) -> Banded:
    """Layer `mine` (portable, for the planner's band rule) running CMSIS-NN's `theirs` on bands."""
    call = with_scratch(theirs, max(band_scratch, theirs.scratch - (scratch_offset(theirs.operands["ctx"]) or 0)))\
        if "ctx" in theirs.operands else theirs
    values = {f.name: getattr(mine, f.name) for f in fields(Prepared)}
    values["scratch"] = call.scratch  # plan/stream.band_scratch: every band's; lean: the twin's lean scratch
    if kernel(mine.kernel).band is None:  # element-wise (ROW_BAND_FNS): its twin's row bands, no window
        return Banded(**values, cmsis=call)
    return Banded(**values, cmsis=call, bands=tuple(g for g, _ in band_geometries(mine)), window=window_of(mine))


def band_call(p: Prepared, plan: Any, k: int) -> Prepared | None:
    """The CMSIS-NN call Banded layer k runs in the plan: on each band when its segment runs by
    rows, else whole; None (mcugen's kernel) where its segment runs it lean (the generic path, for
    the least scratch) or as a sink (it adds each input row as it is made)."""
    if not isinstance(p, Banded) or p.cmsis is None:
        return None
    seg = plan.schedule.segment_at(k)
    if seg is not None and (k in seg.lean or (plan.modes.get(seg.first, "whole") != "whole" and
                                              any(s.sink for s in seg.stages if s.step == k))):
        return None
    return p.cmsis


LEAN = "runs by rows with its generic path, for the least scratch, to meet the RAM budget"


def drop_banded(portable: list[tuple[int, str, str]], prepared: tuple[Prepared, ...], plan: Any
                ) -> list[tuple[int, str, str]]:
    """The portable layers of a plan without those that run CMSIS-NN's call (on bands or whole);
    those in a lean segment say so."""
    out = []
    for k, name, why in portable:
        seg = plan.schedule.segment_at(k)
        if band_call(prepared[k], plan, k) is None:
            out.append((k, name, LEAN if isinstance(prepared[k], Banded) and seg is not None and k in seg.lean
                        else why))
    return out


def convert_all(prepared: tuple[Prepared, ...], board: Board, path: Path, choice: str = "fastest",
                sizes_for: str | None = None, tuned: dict[int, tuple[int, int | None]] | None = None,
                keep: frozenset[int] = frozenset()) -> Calls:
    """convert_once(...).select(keep): the calls with `keep` left portable."""
    return convert_once(prepared, board, path, choice, sizes_for, tuned).select(keep)


def ours_runs_conv(p: Prepared, backend: str, board: Board | None, cmsis_choice: str) -> bool:
    """Whether mcugen's convolution runs this conv layer (then a following residual Add fuses into
    it, compiler.residual_fusion): always on the portable backend; on cmsis-nn where the rounding is
    not TFLite's, or where mcugen's kernel is predicted faster on the board's code path (and
    CMSIS-NN is not asked for every layer)."""
    if backend == "cmsis-nn" and board is not None and rounding_of(p.params) == 0:
        return cmsis_choice != "cmsis" and bool(ours_is_faster(p, board.isa))
    return True


def no_cmsis_reason(conv: Converter, p: Prepared) -> str:
    if cmsis_mapping(p.kernel) is None:
        return "CMSIS-NN has no such kernel"
    return "outside what CMSIS-NN's kernel takes (e.g. broadcasting or requantization)"
