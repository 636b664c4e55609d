"""The pipeline, in one direction: load -> lower -> passes -> prepare -> plan.

`compile_model` returns a Compiled object that the golden model, the code generator, the summary
and verification all read; none of them recompute anything.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from emitter import ops
from emitter.backends.cmsis_version import CmsisVersion
from emitter.boards import Board, pools_with_overrides
from emitter.calls import Prepared
from emitter.errors import BudgetError, NodeUnsupported, UnsupportedError, UsageError
from emitter.ir import Graph, Node
from emitter.lower import lower
from emitter.onnx.load import OnnxModel
from emitter.onnx.load import load as load_model
from emitter.optimize import OPTIMIZE, PLAN_ISA
from emitter.passes.fuse import fuse_activations, fuse_residual_adds
from emitter.passes.layout import assign_layouts
from emitter.passes.tables import fold_tables
from emitter.plan import search
from emitter.plan.arena import GUARD_BYTES, Plan, plan
from emitter.plan.order import reorder
from emitter.plan.pools import Placement, assign
from emitter.plan.stream import can_stream
from emitter.quant import NUMERICS

C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct switch
typedef union unsigned void volatile while _Bool _Complex _Imaginary bool true false main""".split())


@dataclass(frozen=True, eq=False)
class CompileOptions:
    """compile_model's options after the model path, as given (compile_model's docstring says what
    each does); one frozen record passed through the pipeline and kept on Compiled."""
    name: str | None = None
    input_shapes: dict[str, tuple[int, ...]] | None = None
    io_nhwc: bool = False
    alignment: int = 4
    backend: str = "portable"
    board: Board | None = None
    cmsis_path: Path | None = None
    guard: bool = False
    cmsis_choice: str = "fastest"
    cmsis_sizes_for: str | None = None
    isa: str | None = None
    memory: str = "layer"
    ram_budget: int | None = None
    budget_src: str = "--ram-budget"
    numerics: str | None = None
    optimize: str = "speed"
    tune: Tuner | None = None
    pools: tuple[tuple[str, int], ...] = ()  # --pool NAME=SIZE: RAM pool sizes over the board's

    def as_kwargs(self) -> dict[str, Any]:
        """The options as compile_model keyword arguments."""
        return {f.name: self.__dict__[f.name] for f in fields(self)}


@dataclass(frozen=True, eq=False)
class Compiled:
    name: str
    model: OnnxModel
    graph: Graph
    prepared: tuple[Prepared, ...]
    plan: Plan
    io_nhwc: bool
    backend: str = "portable"
    fallbacks: tuple[str, ...] = ()  # kernels the backend lacks, run by the portable kernels
    cmsis_path: Path | None = None
    portable_layers: tuple[tuple[int, str, str], ...] = ()  # cmsis-nn backend: (layer, kernel, why)
    cmsis_version: CmsisVersion | None = None  # of the CMSIS-NN at cmsis_path
    options: CompileOptions = CompileOptions()  # compile_model's options after the path
    memory: search.Choice | None = None  # the plan candidates and why this plan (None: whole layers asked)
    kernel_choices: tuple[Any, ...] = ()  # cmsis-nn backend: kernel_choice.Choice per conv/depthwise/FC layer
    pools: Placement | None = None  # which RAM pool holds each buffer (None: no board, no --pool: one arena)

    @property
    def plan_isa(self) -> str:
        """The instruction set the portable kernels' paths and scratch were planned for: what their
        twins' path() must be asked with to name the path the C takes ("any": no board)."""
        if self.options.isa is not None:
            return self.options.isa
        return PLAN_ISA if self.optimize == "size" else isa_of(self.options.board)

    @property
    def optimize(self) -> str:
        """"speed" or "size" (compile_model's `optimize`)."""
        return self.options.optimize

    @property
    def input_shapes(self) -> list[tuple[int, ...]]:
        return [self.graph.t(n).shape for n in self.graph.inputs]

    @property
    def output_shapes(self) -> list[tuple[int, ...]]:
        return [self.graph.t(n).shape for n in self.graph.outputs]


def c_name(stem: str) -> str:
    """A model name usable as a C prefix: [a-z0-9_], not starting with a digit, not a keyword."""
    name = re.sub(r"[^0-9a-zA-Z_]", "_", stem).strip("_").lower() or "model"
    if name[0].isdigit():
        name = "m_" + name
    if name in C_KEYWORDS:
        name += "_model"
    return name


def check_name(name: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,40}", name) or name in C_KEYWORDS:
        raise UsageError(f"--name '{name}' is not usable as a C prefix: use lower-case letters, "
                         "digits and '_', not starting with a digit, not a C keyword, at most 41 chars")
    return name


def passes(io_nhwc: bool) -> list[Callable[[Graph], Graph]]:
    """The Graph -> Graph passes after lowering, in order (compile_model runs Graph.verify() after each)."""
    return [fold_tables, fuse_activations, lambda g: assign_layouts(g, io_nhwc)]


def numerics_of(m: OnnxModel) -> str:
    """The rounding contract the model was quantized for: "onnxruntime" for onnxruntime's quantizer
    output (producer_name "onnx.quantize", which onnxruntime.quantization writes, or its
    "onnxruntime.quant" metadata), "tflite" for everything else (TFLite-converted graphs with int8
    I/O, hand-built models)."""
    proto = m.model
    meta = {p.key: p.value for p in proto.metadata_props}
    if proto.producer_name == "onnx.quantize" or "onnxruntime.quant" in meta.values():
        return "onnxruntime"
    return "tflite"


def isa_of(board: Board | None) -> str:
    """The instruction set the portable kernels plan their paths and scratch for: the board's
    ("mve", "dsp" or "c"), or "any" without a board (a bundle for any core: the scratch of every
    path)."""
    return "any" if board is None else board.isa


def prepare_all(g: Graph, isa: str = "any") -> tuple[Prepared, ...]:
    """Every node's Prepare, `prepare(node, g, isa)` (one signature for every op); ops whose kernel
    has per-target paths size their scratch for `isa`, the others ignore it."""
    out, problems = [], []
    for node in g.nodes:
        try:
            out.append(ops.prepare(node, g, isa))  # int16 activations: the op module's A16
        except NodeUnsupported as exc:
            problems.append((node.name, node.source or node.op, node.opset, str(exc)))
    if problems:
        raise UnsupportedError(problems)
    return tuple(out)


def compile_model(path: str | Path, options: CompileOptions | None = None, **kwargs: Any) -> Compiled:
    """Compile the model at `path` with `options` (a CompileOptions, or its fields as keyword
    arguments: compile_model(path, name="net", board=board)).

    memory: "layer" (whole layers, the liveness bound), "overlap", "stream" (the smallest plan
    of that kind) or "auto" (emitter/plan/search.py, Goal: by `ram_budget`, else the smallest within 5 %
    estimated overhead). Guard builds always plan whole layers. numerics: "tflite" or
    "onnxruntime" (the rounding contract); None chooses from the model (numerics_of). optimize:
    "speed" (each kernel's fastest path for the shape) or "size" (the bundle defines
    MCU_OPTIMIZE_SIZE: every kernel plans its generic path, as on plain C; emitter/optimize.py).
    tune: how the cmsis-nn backend measures both candidates of each conv/depthwise/FC layer instead
    of reading the cost table (emitter/backends/kernel_choice.py): --tune passes
    emitter.verify.tuning.tune_layers (QEMU, cached)."""
    if options is not None and (kwargs or not isinstance(options, CompileOptions)):
        raise TypeError("compile_model(path, options) takes a CompileOptions, or keyword arguments instead")
    options = options if options is not None else CompileOptions(**kwargs)
    optimize, isa, board, numerics = options.optimize, options.isa, options.board, options.numerics
    if optimize not in OPTIMIZE:
        raise UsageError(f"unknown --optimize '{optimize}': use {' or '.join(OPTIMIZE)}")
    if optimize == "size" and isa is None:
        isa = PLAN_ISA  # MCU_ISA_PLAN in mcu_nn.h: the dispatchers plan as on plain C
    m = load_model(path, options.input_shapes)
    name = check_name(options.name) if options.name is not None else c_name(Path(path).stem)
    g = lower(m)
    g.verify()
    if numerics is not None and numerics not in NUMERICS:
        raise UsageError(f"unknown numerics '{numerics}': use {' or '.join(NUMERICS)}")
    # before the passes: fold_tables runs the chain's goldens, which round by the numerics
    g = replace(g, numerics=numerics if numerics is not None else numerics_of(m))
    for p in passes(options.io_nhwc):
        g = p(g)
        g.verify()
    plan_isa = isa if isa is not None else isa_of(board)  # isa: override (host builds)
    fused = fuse_residual_adds(g, residual_fusion(plan_isa, options.backend, board, options.cmsis_choice))
    fused.verify()
    build = functools.partial(build_plan, name=name, m=m, isa=plan_isa, options=options)
    # whole layers: fusing only saves RAM
    if len(fused.nodes) == len(g.nodes) or options.guard or options.memory == "layer":
        return place_pools(build(fused))
    try:
        first = build(fused)
    except BudgetError:
        return place_pools(build(g))
    plain = build(g)  # a fused layer does not run by row bands: keep it only where the plan is no larger
    if search.activation_ram(plain.graph, plain.plan) < search.activation_ram(first.graph, first.plan):
        return place_pools(plain)
    return place_pools(first)


def place_pools(c: Compiled) -> Compiled:
    """The chosen plan's buffers in the board's RAM pools (with --pool's sizes), densest first into
    the fastest (emitter/plan/pools.py); unchanged without a board and --pool."""
    board, overrides = c.options.board, c.options.pools
    if board is None and not overrides:
        return c
    pools = pools_with_overrides(board.ram_pools if board is not None else (), overrides)
    chosen, placement = assign(c.graph, c.prepared, c.plan, pools)
    return replace(c, plan=chosen, pools=placement)


def residual_fusion(isa: str, backend: str, board: Board | None, cmsis_choice: str) -> Callable[[Node, Graph], bool]:
    """Which conv -> add pairs become one mcu_conv2d_add_s8 layer: where mcugen's convolution runs the
    conv (every path applies the Add in its output stage). Not where CMSIS-NN's kernel runs it (its
    separate add is then kept: measured, docs/cmsis_nn.md)."""
    from emitter.backends.cmsis_nn import ours_runs_conv
    from emitter.ops import conv

    def keep(node: Node, g: Graph) -> bool:
        p = conv.prepare(node, g, isa)
        return p.kernel == "mcu_conv2d_s8" and ours_runs_conv(p, backend, board, cmsis_choice)
    return keep


def build_plan(g: Graph, *, name: str, m: OnnxModel, isa: str, options: CompileOptions) -> Compiled:
    """Prepare, backend and memory plan of the graph after its passes (name: the checked C prefix;
    isa: the one planned for)."""
    io_nhwc, alignment, backend, board = options.io_nhwc, options.alignment, options.backend, options.board
    cmsis_path, guard, cmsis_choice, cmsis_sizes_for = (options.cmsis_path, options.guard, options.cmsis_choice,
                                                        options.cmsis_sizes_for)
    memory, ram_budget, budget_src = options.memory, options.ram_budget, options.budget_src
    optimize, tune = options.optimize, options.tune
    core = board.core if board is not None else ""  # its cost table, where it has one of its own
    prepared = prepare_all(g, isa)
    portable: list[tuple[int, str, str]] = []
    choices: list[Any] = []
    version = None
    tuned = None
    from emitter.backends import cmsis_nn

    conversion: cmsis_nn.Conversion | None = None  # cmsis-nn: every layer's calls, converted once
    if backend == "cmsis-nn":
        if board is None or cmsis_path is None:
            raise UsageError("the cmsis-nn backend needs a board and CMSIS_NN_PATH")
        version = cmsis_nn.check_version(cmsis_path)
        cmsis_path = Path(cmsis_path).resolve()
        # size: mcugen's kernels have no fast path left to prefer over CMSIS-NN's
        cmsis_choice = "cmsis" if optimize == "size" else cmsis_choice
        if tune is not None and cmsis_choice == "fastest":
            tuned = tune(prepared, board, cmsis_path, str(version))
        # the backend's one conversion, before planning: the plans below only select() from it
        conversion = cmsis_nn.convert_once(prepared, board, cmsis_path, cmsis_choice, cmsis_sizes_for, tuned)
        prepared, portable, choices = conversion.select()
    elif backend != "portable":
        raise UsageError(f"unknown backend '{backend}': use portable or cmsis-nn")
    choice = None
    if guard or memory == "layer":
        align = arena_alignment(prepared, alignment)
        chosen = plan(g, [p.scratch for p in prepared], align, GUARD_BYTES if guard else 0)
    else:
        variants: list[Variant] = [(prepared, portable, choices)]
        keep = frozenset[int]()
        if backend == "cmsis-nn":  # layers kept portable so that they can run by rows, when the budget needs it
            assert conversion is not None
            keep = frozenset(k for k, p in enumerate(conversion.native) if can_stream(p)) - {k for k, _, _ in portable}
            if keep:
                variants.append(functools.partial(conversion.select, keep))
        order, prepared, portable, choices, choice = memory_variants(g, variants, alignment, isa, memory,
                                                                     ram_budget, budget_src, core)
        for _ in range(3):  # only the layers that do run by rows stay portable (while the plan still fits)
            rows = {order[st.step] for s in choice.chosen.plan.schedule.segments
                    if choice.chosen.plan.modes.get(s.first, "whole") != "whole" for st in s.stages}
            kept = {order[pos] for pos, _, why in portable if why == cmsis_nn.KEPT}
            if kept <= rows:
                break
            assert conversion is not None
            narrow = conversion.select(frozenset(kept & rows))
            try:
                got = memory_variants(g, [narrow], alignment, isa, memory, ram_budget, budget_src, core)
            except BudgetError:
                break
            if memory != "auto" and search.activation_ram(reorder(g, got[0]), got[4].chosen.plan) > \
                    search.activation_ram(reorder(g, order), choice.chosen.plan):
                break
            order, prepared, portable, choices, choice = got
        g = reorder(g, order)
        chosen = choice.chosen.plan
        if conversion is not None:  # layers CMSIS-NN runs on bands are no fallbacks
            portable = cmsis_nn.drop_banded(portable, prepared, chosen)
    return Compiled(name, m, g, prepared, chosen, io_nhwc,
                    backend, tuple(sorted({kernel for _, kernel, _ in portable})),
                    cmsis_path if backend == "cmsis-nn" else None, tuple(portable), version, options, choice,
                    tuple(choices))


def arena_alignment(prepared: tuple[Prepared, ...], alignment: int) -> int:
    """Scratch buffers need 16-byte alignment for the CMSIS-NN kernels (mcugen's own need 4)."""
    return max(alignment, 16) if any(p.scratch and not p.is_portable for p in prepared) else alignment


Portable = list[tuple[int, str, str]]
Tuner = Callable[[tuple[Prepared, ...], Board, Path, str], dict[int, tuple[int, int | None]]]
Calls = tuple[tuple[Prepared, ...], Portable, list[Any]]  # the calls, the portable layers, kernel choices
Variant = Calls | Callable[[], Calls]


def memory_variants(g: Graph, variants: list[Variant], alignment: int, isa: str, memory: str,
                    ram_budget: int | None, budget_src: str, core: str = ""
                    ) -> tuple[list[int], tuple[Prepared, ...], Portable, list[Any], search.Choice]:
    """The memory plan of the first kernel choice (e.g. CMSIS-NN's calls), or of a later one (more
    layers portable, to run by rows; a callable, made only when asked) when the first misses the
    budget, or its plan within the budget costs more estimated instructions (the fastest plan within
    a budget: the first choice's kernels are the faster on whole layers, not when its plan streams
    where the later one's need not), or when the smallest plan is asked and the later one is
    smaller. Returns the execution order, the calls in that order, the portable layers and kernel
    choices (by position in that order) and the plan."""
    fastest = memory == "auto" and ram_budget is not None
    best = None
    error: BudgetError | None = None
    for k, variant in enumerate(variants):
        if k > 0 and best is not None and memory == "auto" and (not fastest or best[5].chosen.overhead == 0):
            break  # the first choice fits (with a budget: at no overhead): its kernels are the fastest
        prepared, portable, choices = variant() if callable(variant) else variant
        try:
            order, choice = search.search_orders(g, prepared, arena_alignment(prepared, alignment), isa, memory,
                                                 ram_budget, budget_src, core)
        except BudgetError as e:
            error = error or e
            continue
        ram = search.activation_ram(reorder(g, order), choice.chosen.plan)
        # the estimated instructions: each choice's own base (its kernels' whole layers) and overhead
        key = (choice.base + choice.chosen.overhead, ram) if fastest else (ram, 0)
        if best is None or key < best[0]:
            at = {step: pos for pos, step in enumerate(order)}
            moved = sorted((at[i], kernel, why) for i, kernel, why in portable)
            chose = sorted((replace(x, index=at[x.index]) for x in choices), key=lambda x: x.index)
            best = (key, order, tuple(prepared[i] for i in order), moved, chose, choice)
    if best is None:
        assert error is not None
        raise error
    return best[1], best[2], best[3], best[4], best[5]


def golden_tensors(c: Compiled, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Run the bit-exact numpy golden on int8 inputs in the caller's layout; every tensor's
    physical bytes by name."""
    g = c.graph
    if len(inputs) != len(g.inputs):
        raise UsageError(f"the model has {len(g.inputs)} inputs, {len(inputs)} given")
    env: dict[str, np.ndarray] = {}
    for name, x in zip(g.inputs, inputs, strict=False):
        x = np.asarray(x)
        if x.size != g.t(name).size:
            raise UsageError(f"input '{name}' needs {g.t(name).size} values, got {x.size}")
        env[name] = x.astype(g.t(name).dtype).ravel()
    for node, p in zip(g.nodes, c.prepared, strict=False):
        env[node.outputs[0]] = np.asarray(p.golden(env)).astype(g.t(node.outputs[0]).dtype).ravel()
    return env


def golden_run(c: Compiled, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The golden model's int8 outputs, shaped as the graph declares them."""
    env = golden_tensors(c, inputs)
    return [env[o].reshape(c.graph.t(o).shape) for o in c.graph.outputs]
