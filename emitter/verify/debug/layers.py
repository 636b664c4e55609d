"""Per-layer dumps: which kernel calls are compared with what, and the layers.bin records a build
with the layer hook writes on the host and in QEMU (see emitter/verify/debug/__init__.py)."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from emitter.compiler import Compiled
from emitter.errors import ToolchainError, VerifyError
from emitter.layout import index_map
from emitter.verify.harness import LAYERS_FILE, Samples, run_in_qemu, run_on_host, write_glue

if TYPE_CHECKING:
    from emitter.boards import Board

# -include finds model_glue.h through the glue folder on the include path (SConstruct's CPPPATH).
LAYER_CFLAGS = ("-DMCU_HARNESS_LAYERS", "-include", "model_glue.h")
_RECORD = struct.Struct("<III")  # sample, layer index, byte count

Dumps = dict[tuple[int, int], np.ndarray]  # (sample, layer index) -> that layer's output bytes


@dataclass(frozen=True)
class DebugLayer:
    """One kernel call of the schedule and what it is compared with."""
    index: int  # the node index: `Layer <index>` in NAME.c, `NAME_l<index>_*` in NAME_weights.c
    name: str
    op: str
    kernel: str
    tensor: str  # the IR output tensor (its physical bytes are dumped)
    nbytes: int
    onnx_tensor: str | None  # the ONNX tensor holding the same values, if the model has one
    onnx_order: np.ndarray | None  # physical position -> logical flat index of onnx_tensor
    dtype: str = "int8"  # of the dumped tensor (int16: emitter/ops/a16.py)


# ---- what to compare ---------------------------------------------------------------------------

def onnx_values(c: Compiled) -> set[str]:
    """Names of the ONNX model's computed tensors (node outputs)."""
    return {o for n in c.model.graph.node for o in n.output if o}


def debug_layers(c: Compiled) -> list[DebugLayer]:
    """The kernel calls in schedule order (views skipped), each with its ONNX counterpart: the
    output tensor itself when the ONNX model has it, else a view of it that the model has (same
    bytes, the view's own layout)."""
    g = c.graph
    known = onnx_values(c)
    views: dict[str, list[str]] = {}
    for node, p in zip(g.nodes, c.prepared, strict=True):
        if not p.kernel:
            views.setdefault(c.plan.root[node.outputs[0]], []).append(node.outputs[0])
    out = []
    for k, (node, p) in enumerate(zip(g.nodes, c.prepared, strict=True)):
        if not p.kernel:
            continue
        name = node.outputs[0]
        t = g.t(name)
        onnx_name = order = None
        for cand in [name] + views.get(name, []):
            ct = g.t(cand)
            if cand in known and ct.layout is not None and ct.size == t.size:
                onnx_name, order = cand, index_map(ct.layout)
                break
        out.append(DebugLayer(k, node.name, node.op, p.kernel, name, t.nbytes, onnx_name, order, t.dtype))
    return out


# ---- building and running in per-layer dump mode ----------------------------------------------

def write_layer_glue(c: Compiled, folder: Path) -> None:
    """model_glue.h with the per-layer hook (see templates/model_glue.h.j2)."""
    write_glue(c, folder, layer_dump=True)


def parse_layers(raw: bytes, layers: list[DebugLayer], samples: int, what: str) -> Dumps:
    """layers.bin -> {(sample, layer index): output bytes as int8}. A record cut short at the end
    (the run crashed while writing) is dropped; anything else malformed is a VerifyError."""
    sizes = {lay.index: lay.nbytes for lay in layers}
    dtypes = {lay.index: np.dtype(lay.dtype).newbyteorder("<") for lay in layers}
    out: Dumps = {}
    off = 0
    while off + _RECORD.size <= len(raw):
        s, k, n = _RECORD.unpack_from(raw, off)
        if s >= samples or sizes.get(k) != n or (s, k) in out:
            raise VerifyError(f"{what} {LAYERS_FILE}: unexpected record at byte {off} (sample {s}, "
                              f"layer {k}, {n} bytes); was the bundle emitted from this model with "
                              "the same options?")
        off += _RECORD.size
        if off + n > len(raw):
            break
        out[(s, k)] = np.frombuffer(raw, dtypes[k], n // dtypes[k].itemsize, off).astype(dtypes[k].newbyteorder("="))
        off += n
    return out


def _status_note(what: str, code: int, text: str) -> str | None:
    if code == 0:
        return None
    detail = " ".join(text.split())[:300]
    return f"note: {what} exited with {code}" + (f": {detail}" if detail else "")


def _dumps(run_dir: Path, layers: list[DebugLayer], samples: int, what: str) -> Dumps:
    raw = (run_dir / LAYERS_FILE).read_bytes() if (run_dir / LAYERS_FILE).is_file() else b""
    return parse_layers(raw, layers, samples, what)


def run_host_layers(bundle: Path, glue: Path, layers: list[DebugLayer], samples: Samples,
                    work: Path) -> tuple[Dumps, str | None]:
    """Build with the layer hook on the host, run, read layers.bin; a note if the run failed."""
    run_dir, res = run_on_host(bundle, glue, work, samples, LAYER_CFLAGS, stale=(LAYERS_FILE,))
    return (_dumps(run_dir, layers, len(samples), "host"),
            _status_note("the host harness", res.returncode, res.stdout + res.stderr))


def run_qemu_layers(bundle: Path, glue: Path, board: Board, layers: list[DebugLayer], samples: Samples,
                    work: Path) -> tuple[Dumps, str | None]:
    """The same in QEMU on `board`; ToolchainError when QEMU itself fails."""
    from emitter.target.qemu import EXIT_MEANING
    from emitter.target.toolchain import qemu_binary

    _, run = run_in_qemu(bundle, glue, board, work, samples, LAYER_CFLAGS, count_instructions=False,
                         check=False, stale=(LAYERS_FILE,))
    qemu = qemu_binary(board.arch)
    if run.exit_code != 0 and f"{qemu}:" in run.stderr:
        raise ToolchainError(f"{qemu} failed (exit {run.exit_code}): {run.stderr.strip()}")
    note = _status_note(f"QEMU {board.name}", run.exit_code,
                        f"{EXIT_MEANING.get(run.exit_code, '')} {run.stdout} {run.stderr}")
    return _dumps(run.workdir, layers, len(samples), f"QEMU {board.name}"), note
