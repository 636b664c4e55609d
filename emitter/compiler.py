"""The pipeline, in one direction: load -> lower -> passes -> prepare -> plan.

`compile_model` returns a Compiled object that the golden model, the code generator, the summary
and verification all read; none of them recompute anything.
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from emitter import frontend, memplan
from emitter.backends.cmsis_version import CmsisVersion
from emitter.boards import Board
from emitter.errors import NodeUnsupported, UnsupportedError, UsageError
from emitter.ir import Graph
from emitter.lower import lower
from emitter.ops import REGISTRY
from emitter.ops.base import Prepared
from emitter.passes.fuse import fuse_activations
from emitter.passes.layout import assign_layouts
from emitter.planner import GUARD_BYTES, Plan, plan
from emitter.quant import NUMERICS

C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct switch
typedef union unsigned void volatile while _Bool _Complex _Imaginary bool true false main""".split())


@dataclass(frozen=True, eq=False)
class Compiled:
    name: str
    model: frontend.OnnxModel
    graph: Graph
    prepared: tuple[Prepared, ...]
    plan: Plan
    io_nhwc: bool
    backend: str = "portable"
    fallbacks: tuple[str, ...] = ()  # kernels the backend lacks, run by the portable kernels
    cmsis_path: Path | None = None
    portable_layers: tuple[tuple[int, str, str], ...] = ()  # cmsis-nn backend: (layer, kernel, why)
    cmsis_version: CmsisVersion | None = None  # of the CMSIS-NN at cmsis_path
    options: tuple[tuple[str, Any], ...] = ()  # compile_model's arguments after the path
    memory: memplan.Choice | None = None  # the plan candidates and why this plan (None: whole layers asked)
    kernel_choices: tuple[Any, ...] = ()  # cmsis-nn backend: kernel_choice.Choice per conv/depthwise/FC layer

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
    return [fuse_activations, lambda g: assign_layouts(g, io_nhwc)]


def numerics_of(m: frontend.OnnxModel) -> str:
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
    """Every node's Prepare; op modules whose kernel has per-target paths (a prepare taking `isa`)
    size their scratch for `isa`."""
    out, problems = [], []
    for node in g.nodes:
        try:
            prep = REGISTRY[node.op].prepare
            out.append(prep(node, g, isa) if "isa" in inspect.signature(prep).parameters else prep(node, g))
        except NodeUnsupported as exc:
            problems.append((node.name, node.source or node.op, node.opset, str(exc)))
    if problems:
        raise UnsupportedError(problems)
    return tuple(out)


def compile_model(path: str | Path, name: str | None = None,
                  input_shapes: dict[str, tuple[int, ...]] | None = None,
                  io_nhwc: bool = False, alignment: int = 4, backend: str = "portable",
                  board: Board | None = None, cmsis_path: Path | None = None, guard: bool = False,
                  cmsis_choice: str = "fastest", cmsis_sizes_for: str | None = None,
                  isa: str | None = None, memory: str = "layer", ram_budget: int | None = None,
                  budget_src: str = "--ram-budget", numerics: str | None = None, tune: bool = False) -> Compiled:
    """memory: "layer" (whole layers, the liveness bound), "overlap", "stream" (the smallest plan
    of that kind) or "auto" (emitter/memplan.choose: by `ram_budget`, else the smallest within 5 %
    estimated overhead). Guard builds always plan whole layers. numerics: "tflite" or
    "onnxruntime" (the rounding contract); None chooses from the model (numerics_of). tune: the
    cmsis-nn backend measures both candidates of each conv/depthwise/FC layer in QEMU (cached)
    instead of reading the cost table (emitter/backends/kernel_choice.py)."""
    options = (("name", name), ("input_shapes", input_shapes), ("io_nhwc", io_nhwc), ("alignment", alignment),
               ("backend", backend), ("board", board), ("cmsis_path", cmsis_path), ("guard", guard),
               ("cmsis_choice", cmsis_choice), ("cmsis_sizes_for", cmsis_sizes_for), ("isa", isa),
               ("memory", memory), ("ram_budget", ram_budget), ("budget_src", budget_src), ("numerics", numerics),
               ("tune", tune))
    m = frontend.load(path, input_shapes)
    name = check_name(name) if name is not None else c_name(Path(path).stem)
    g = lower(m)
    g.verify()
    for p in passes(io_nhwc):
        g = p(g)
        g.verify()
    if numerics is not None and numerics not in NUMERICS:
        raise UsageError(f"unknown numerics '{numerics}': use {' or '.join(NUMERICS)}")
    g = replace(g, numerics=numerics if numerics is not None else numerics_of(m))
    prepared = prepare_all(g, isa if isa is not None else isa_of(board))  # isa: override (host builds)
    portable: list[tuple[int, str, str]] = []
    choices: list[Any] = []
    version = None
    from emitter.backends import cmsis_nn

    if backend == "cmsis-nn":
        if board is None or cmsis_path is None:
            raise UsageError("the cmsis-nn backend needs a board and CMSIS_NN_PATH")
        version = cmsis_nn.check_version(cmsis_path)
        cmsis_path = Path(cmsis_path).resolve()
        tuned = None
        if tune and cmsis_choice == "fastest":
            from emitter.backends.cost_measure import tune_layers

            tuned = tune_layers(prepared, board, cmsis_path, str(version))
        prepared, portable, choices = cmsis_nn.convert_all(prepared, board, cmsis_path, cmsis_choice,
                                                           cmsis_sizes_for, tuned)
    elif backend != "portable":
        raise UsageError(f"unknown backend '{backend}': use portable or cmsis-nn")
    # scratch buffers need 16-byte alignment for the CMSIS-NN kernels (mcugen's own need 4)
    align = max(alignment, 16) if any(p.scratch and not p.kernel.startswith("mcu_") for p in prepared) else alignment
    scratch = [p.scratch for p in prepared]
    choice = None
    if guard or memory == "layer":
        chosen = plan(g, scratch, align, GUARD_BYTES if guard else 0)
    else:
        choice = memory_plan(g, prepared, scratch, align, isa if isa is not None else isa_of(board), memory,
                             ram_budget, budget_src)
        chosen = choice.chosen.plan
    return Compiled(name, m, g, prepared, chosen, io_nhwc,
                    backend, tuple(sorted({kernel for _, kernel, _ in portable})),
                    cmsis_path if backend == "cmsis-nn" else None, tuple(portable), version, options, choice,
                    tuple(choices))


def memory_plan(g: Graph, prepared: tuple[Prepared, ...], scratch: list[int], align: int, isa: str, memory: str,
                ram_budget: int | None, budget_src: str) -> memplan.Choice:
    base = memplan.model_cost(prepared, isa)
    if memory == "auto" and ram_budget is not None:  # the fastest plan fits: nothing else to weigh
        layer = memplan.Candidate(plan(g, scratch, align), 0)
        if memplan.activation_ram(g, layer.plan) <= ram_budget:
            return memplan.Choice(layer, (layer,), base,
                                  f"the fastest plan, within {budget_src} ({ram_budget:,} bytes)")
    cands = memplan.candidates(g, prepared, scratch, align, isa)
    if memory == "auto":
        return memplan.choose(g, cands, base, ram_budget, budget_src)
    if memory not in ("layer", "inplace", "overlap", "stream"):
        raise UsageError(f"--memory {memory}: use auto, layer, inplace, overlap or stream")
    kind = [c for c in cands if c.kind == memory] or [c for c in cands if c.kind == "overlap"]  # nothing to stream
    pick = min(kind, key=lambda c: (memplan.activation_ram(g, c.plan), c.overhead))
    return memplan.Choice(pick, tuple(cands), base, f"--memory {memory}")


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
        env[name] = x.astype(np.int8).ravel()
    for node, p in zip(g.nodes, c.prepared, strict=False):
        env[node.outputs[0]] = np.asarray(p.golden(env)).astype(np.int8).ravel()
    return env


def golden_run(c: Compiled, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The golden model's int8 outputs, shaped as the graph declares them."""
    env = golden_tensors(c, inputs)
    return [env[o].reshape(c.graph.t(o).shape) for o in c.graph.outputs]
