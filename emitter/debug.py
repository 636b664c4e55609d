"""Per-layer debugging: `mcugen debug MODEL.onnx --board=B [--inputs x.npz] [--samples N]`.

Emits the bundle (or takes an emitted one with --bundle), builds the harness on the host and for
QEMU in per-layer dump mode, runs it on the first sample (or N samples), and compares every layer's
output, in schedule order, with mcugen's golden model and with onnxruntime:

    # build: every file compiled with -DMCU_HARNESS_LAYERS -include model_glue.h, where the glue
    #        (rendered with layer_dump=True) defines <PREFIX>_AFTER_LAYER -> harness_after_layer()
    # run:   the harness appends (sample, layer index, bytes, output bytes) records to layers.bin
    # golden_tensors(): every tensor's physical bytes
    # onnxruntime: the ONNX tensor of the same name (graph output of a copy of the model), as our
    #        int8 (uint8 - 128, float quantized), put into our physical order with layout.index_map

Host and QEMU must equal the golden bit for bit; the first layer where one of them does not is named
and the exit code is 1. onnxruntime requantizes in float, so its differences are reported only.
Layers mcugen inserted (relayouts, requantizations, copies) have no ONNX tensor: "-".
"""
from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from emitter.compiler import Compiled, golden_tensors
from emitter.errors import McugenError, ModelError, OutputError, UsageError, VerifyError
from emitter.layout import index_map

LAYERS_FILE = "layers.bin"
# -include finds model_glue.h through the glue folder on the include path (SConstruct's CPPPATH).
LAYER_CFLAGS = ("-DMCU_HARNESS_LAYERS", "-include", "model_glue.h")
_RECORD = struct.Struct("<III")  # sample, layer index, byte count


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


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


@dataclass(frozen=True)
class Diff:
    differ: int
    elements: int
    max_diff: int
    missing: bool = False  # no layers.bin record (the run stopped before this layer)

    @property
    def exact(self) -> bool:
        return not self.missing and self.differ == 0

    def cell(self) -> str:
        if self.missing:
            return "missing"
        if self.differ == 0:
            return "bit-exact"
        share = 100.0 * self.differ / max(self.elements, 1)
        return f"{self.differ}/{self.elements} ({share:.1f}%) max {self.max_diff}"


@dataclass
class LayerRow:
    layer: DebugLayer
    host: Diff
    qemu: Diff | None = None
    ort: Diff | None = None


@dataclass
class DebugReport:
    board: str
    samples: int
    prefix: str = "model"
    rows: list[LayerRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    qemu: bool = False

    @property
    def first_divergent(self) -> LayerRow | None:
        for row in self.rows:
            if not row.host.exact or (row.qemu is not None and not row.qemu.exact):
                return row
        return None

    @property
    def ok(self) -> bool:
        return self.first_divergent is None

    def table(self, name_width: int = 40) -> str:
        head = ["#", "layer", "op", "kernel", "host vs golden"]
        if self.qemu:
            head.append(f"QEMU {self.board} vs golden")
        head.append("golden vs onnxruntime")
        body = []
        for r in self.rows:
            lay = r.layer
            name = _short(lay.name, name_width)
            cells = [str(lay.index), name, lay.op, lay.kernel, r.host.cell()]
            if self.qemu:
                cells.append(r.qemu.cell() if r.qemu is not None else "-")
            cells.append(r.ort.cell() if r.ort is not None else "-")
            body.append(cells)
        widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head] + body]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def verdict(self) -> str:
        row = self.first_divergent
        where = "host" + (f" and QEMU {self.board}" if self.qemu else "")
        if row is None:
            which = f"all {len(self.rows)} layers are" if len(self.rows) != 1 else "the one layer is"
            return (f"{which} bit-exact with the golden model on {where} "
                    f"({self.samples} sample{'s' if self.samples != 1 else ''})")
        lay = row.layer
        parts = [f"host vs golden: {row.host.cell()}"]
        if row.qemu is not None:
            parts.append(f"QEMU {self.board} vs golden: {row.qemu.cell()}")
        output = "" if lay.tensor in lay.name else f", output '{lay.tensor}'"
        hint = (f"every earlier layer is bit-exact, so its inputs were right: see 'Layer {lay.index}' "
                f"in {self.prefix}.c, kernel {lay.kernel}, constants {self.prefix}_l{lay.index}_* in "
                f"{self.prefix}_weights.c")
        return "\n".join([
            f"first divergent layer: #{lay.index} '{lay.name}' ({lay.op}, kernel {lay.kernel}{output})",
            "  " + "; ".join(parts), "  " + hint])

    def text(self) -> str:
        out = [self.table(), ""]
        out += self.notes
        out.append(self.verdict())
        return "\n".join(out)


# ---- what to compare ----------------------------------------------------------------------------

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
    for node, p in zip(g.nodes, c.prepared):
        if not p.kernel:
            views.setdefault(c.plan.root[node.outputs[0]], []).append(node.outputs[0])
    out = []
    for k, (node, p) in enumerate(zip(g.nodes, c.prepared)):
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
        out.append(DebugLayer(k, node.name, node.op, p.kernel, name, t.nbytes, onnx_name, order))
    return out


# ---- building and running in per-layer dump mode ------------------------------------------------

def write_layer_glue(c: Compiled, folder: Path) -> None:
    """model_glue.h with the per-layer hook (see templates/model_glue.h.j2)."""
    from emitter.render import BundleBuilder, environment

    ctx = BundleBuilder(c).context()
    ctx["layer_dump"] = True
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model_glue.h").write_text(environment().get_template("model_glue.h.j2").render(ctx))


def pack(samples: list[list[np.ndarray]]) -> bytes:
    return b"".join(np.asarray(x).astype(np.int8).tobytes() for s in samples for x in s)


def parse_layers(raw: bytes, layers: list[DebugLayer], samples: int,
                 what: str) -> dict[tuple[int, int], np.ndarray]:
    """layers.bin -> {(sample, layer index): output bytes as int8}. A record cut short at the end
    (the run crashed while writing) is dropped; anything else malformed is a VerifyError."""
    sizes = {lay.index: lay.nbytes for lay in layers}
    out: dict[tuple[int, int], np.ndarray] = {}
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
        out[(s, k)] = np.frombuffer(raw, np.int8, n, off).copy()
        off += n
    return out


def _status_note(what: str, code: int, text: str) -> str | None:
    if code == 0:
        return None
    detail = " ".join(text.split())[:300]
    return f"note: {what} exited with {code}" + (f": {detail}" if detail else "")


def run_host_layers(bundle: Path, glue: Path, layers: list[DebugLayer],
                    samples: list[list[np.ndarray]], work: Path) -> tuple[dict, str | None]:
    from emitter.target.firmware import build_host

    exe = build_host(bundle, glue, work / "host", LAYER_CFLAGS)
    run_dir = work / "host_run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / LAYERS_FILE).unlink(missing_ok=True)
    (run_dir / "input.bin").write_bytes(pack(samples))
    res = subprocess.run([str(exe)], cwd=run_dir, capture_output=True, text=True, check=False)
    raw = (run_dir / LAYERS_FILE).read_bytes() if (run_dir / LAYERS_FILE).is_file() else b""
    return (parse_layers(raw, layers, len(samples), "host"),
            _status_note("the host harness", res.returncode, res.stdout + res.stderr))


def run_qemu_layers(bundle: Path, glue: Path, board, layers: list[DebugLayer],
                    samples: list[list[np.ndarray]], work: Path) -> tuple[dict, str | None]:
    from emitter.target.firmware import build_firmware
    from emitter.target.qemu import EXIT_MEANING, run_qemu

    fw = build_firmware(bundle, glue, board, work / "fw", cflags=LAYER_CFLAGS)
    run_dir = work / "qemu_run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / LAYERS_FILE).unlink(missing_ok=True)
    (run_dir / "input.bin").write_bytes(pack(samples))
    run = run_qemu(fw.elf, board, run_dir, count_instructions=False, check=False)
    if run.exit_code != 0 and "qemu-system-arm:" in run.stderr:
        from emitter.errors import ToolchainError
        raise ToolchainError(f"qemu-system-arm failed (exit {run.exit_code}): {run.stderr.strip()}")
    raw = (run_dir / LAYERS_FILE).read_bytes() if (run_dir / LAYERS_FILE).is_file() else b""
    note = _status_note(f"QEMU {board.name}", run.exit_code,
                        f"{EXIT_MEANING.get(run.exit_code, '')} {run.stdout} {run.stderr}")
    return parse_layers(raw, layers, len(samples), f"QEMU {board.name}"), note


# ---- onnxruntime --------------------------------------------------------------------------------

def ort_layers(c: Compiled, layers: list[DebugLayer],
               samples: list[list[np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """Per sample, onnxruntime's value of every layer's ONNX tensor, as our int8 codes (int16 if
    out of range) in our physical order.

    A copy of the model gets those tensors as extra graph outputs; graph optimizations are off so
    that every QuantizeLinear output still exists."""
    import onnx
    import onnxruntime as ort

    from emitter.verify import quantize

    g, m = c.graph, c.model
    wanted = [(lay, lay.onnx_tensor) for lay in layers if lay.onnx_tensor is not None]
    model = onnx.ModelProto()
    model.CopyFrom(m.model)
    present = {o.name for o in model.graph.output}
    for _, name in wanted:
        if name in present:
            continue
        dtype = m.dtypes.get(name)
        if dtype is not None:
            elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
            vi = onnx.helper.make_tensor_value_info(name, elem, None)
        else:  # e.g. the output of a com.microsoft QLinear op: onnxruntime infers the type
            vi = onnx.ValueInfoProto(name=name)
        model.graph.output.append(vi)
        present.add(name)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    fetch = sorted({name for _, name in wanted})
    results = []
    for sample in samples:
        feed = {}
        for name, x in zip(g.inputs, sample):
            b, t = g.boundaries[name], g.t(name)
            assert t.quant is not None and t.layout is not None
            logical = np.empty(t.size, np.int8)  # the caller's bytes (e.g. NHWC) in ONNX order
            logical[index_map(t.layout)] = np.asarray(x, np.int8).ravel()
            x = logical.reshape(t.shape)
            if b.float_io:
                feed[b.onnx_name] = ((x.astype(np.float32) - t.quant.zp)
                                     * np.float32(t.quant.s)).astype(np.float32)
            elif b.from_uint8:
                feed[b.onnx_name] = (x.astype(np.int16) + 128).astype(np.uint8)
            else:
                feed[b.onnx_name] = x.astype(np.int8)
        values = dict(zip(fetch, sess.run(fetch, feed)))
        row = {}
        for lay, name in wanted:
            y = np.asarray(values[name])
            t = g.t(lay.tensor)
            assert t.quant is not None and lay.onnx_order is not None
            if y.size != t.size:
                continue
            if y.dtype == np.uint8:
                # uint8 -> int8 as the lowering did: zero point - 128 when the model declares the
                # type; an untyped tensor (com.microsoft op output) kept its zero point, so values
                # above 127 cannot be represented: kept as int16 to show up in the difference
                shift = 128 if m.dtypes.get(name) == np.dtype(np.uint8) else 0
                y = y.astype(np.int16) - shift
            elif y.dtype != np.int8:
                y = quantize(y.astype(np.float64), t.quant.s, t.quant.zp)
            row[lay.tensor] = y.ravel()[lay.onnx_order]
        results.append(row)
    return results


# ---- comparison ---------------------------------------------------------------------------------

def diff(pairs: list[tuple[np.ndarray | None, np.ndarray]]) -> Diff:
    """(got, want) per sample; got None = no record."""
    d = n = mx = 0
    missing = False
    for got, want in pairs:
        if got is None:
            missing = True
            continue
        delta = np.abs(got.astype(np.int32) - want.astype(np.int32))
        n += delta.size
        d += int((delta > 0).sum())
        mx = max(mx, int(delta.max(initial=0)))
    return Diff(d, n, mx, missing)


def run_debug(c: Compiled, bundle: Path, board, samples: list[list[np.ndarray]],
              qemu: bool = True, work: Path | None = None) -> DebugReport:
    """Build, run and compare; the report holds one row per kernel call."""
    layers = debug_layers(c)
    gold = [golden_tensors(c, s) for s in samples]
    rep = DebugReport(board.name, len(samples), c.name, qemu=qemu)
    with tempfile.TemporaryDirectory(prefix="mcugen-debug-") as tmp:
        w = Path(work) if work is not None else Path(tmp)
        glue = w / "glue"
        write_layer_glue(c, glue)
        host, note = run_host_layers(bundle, glue, layers, samples, w)
        if note:
            rep.notes.append(note)
        target = None
        if qemu:
            target, note = run_qemu_layers(bundle, glue, board, layers, samples, w)
            if note:
                rep.notes.append(note)
    try:
        ort_vals = ort_layers(c, layers, samples)
    except Exception as exc:  # noqa: BLE001 - onnxruntime refusing the model is reported, not fatal
        ort_vals = None
        rep.notes.append(f"note: onnxruntime could not run the model ({type(exc).__name__}: "
                         f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}); "
                         "no onnxruntime column")
    for lay in layers:
        want = [gold[s][lay.tensor] for s in range(len(samples))]
        row = LayerRow(lay, diff([(host.get((s, lay.index)), want[s]) for s in range(len(samples))]))
        if target is not None:
            row.qemu = diff([(target.get((s, lay.index)), want[s]) for s in range(len(samples))])
        if ort_vals is not None and all(lay.tensor in v for v in ort_vals):
            row.ort = diff([(want[s], ort_vals[s][lay.tensor]) for s in range(len(samples))])
        rep.rows.append(row)
    worst = next((r for r in rep.rows if r.ort is not None and r.ort.max_diff > 1), None)
    if ort_vals is not None:
        rep.notes.append("golden vs onnxruntime (float requantization; reported, not an error): "
                         + (f"first layer off by more than one quantum: #{worst.layer.index} "
                            f"'{_short(worst.layer.name, 60)}'" if worst is not None
                            else "every compared layer within one quantum"))
    return rep


# ---- command line -------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcugen debug",
        description="Run the bundle layer by layer on the host and in QEMU; compare every layer with "
                    "the golden model and onnxruntime; name the first layer that diverges "
                    "(exit code 1 then, 0 when every layer is bit-exact).")
    p.add_argument("model", help="the INT8 ONNX model")
    p.add_argument("--board", default="cortex-m7", help="board or core name (see `mcugen boards`)")
    p.add_argument("--inputs", help="reference inputs (.npz, as for --verify); default: random samples")
    p.add_argument("--samples", type=int, default=1, help="samples to run (default 1: the first)")
    p.add_argument("--no-qemu", action="store_true", help="host build only")
    p.add_argument("-o", "--output", help="write the bundle here (default: a temporary folder)")
    p.add_argument("--bundle", help="debug this already emitted bundle (e.g. one you edited) "
                                    "instead of emitting one; it must come from this model and options")
    p.add_argument("--work", help=f"keep the builds, model_glue.h and {LAYERS_FILE} files here")
    p.add_argument("--name", help="C prefix (default: the file stem, or the --bundle's)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="static shape for an input with symbolic dims (repeatable)")
    p.add_argument("--io-layout", choices=["onnx", "nhwc"], default="onnx",
                   help="layout of 4-D inputs/outputs at the C API")
    p.add_argument("--force", action="store_true", help="replace an -o folder that is not an mcugen bundle")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    return p


def _bundle_report(folder: Path) -> dict:
    try:
        return json.loads((folder / "report.json").read_text())
    except (OSError, ValueError):
        raise OutputError(f"--bundle '{folder}' is not an mcugen bundle (no readable report.json)") from None


def cmd_debug(args: argparse.Namespace) -> int:
    from emitter.boards import load_board
    from emitter.bundle import write_bundle
    from emitter.compiler import compile_model
    from emitter.frontend import parse_input_shapes
    from emitter.render import render_bundle
    from emitter.verify import load_inputs

    if args.samples < 1:
        raise UsageError(f"--samples {args.samples}: give at least 1")
    if args.bundle and args.output:
        raise UsageError("give either --bundle (debug an emitted bundle) or -o (where to emit one)")
    board = load_board(args.board)
    name = args.name
    existing = None
    if args.bundle:
        existing = _bundle_report(Path(args.bundle))
        name = name or existing.get("name")
        if existing.get("backend", "portable") != "portable":
            raise UsageError(f"--bundle '{args.bundle}' uses the {existing.get('backend')} backend; mcugen debug "
                             "compares portable bundles layer by layer: debug the model without --bundle (it "
                             "emits a portable one), or use `mcugen verify --profile` for this bundle")
    compiled = compile_model(args.model, name, parse_input_shapes(args.input_shape),
                             io_nhwc=args.io_layout == "nhwc")
    if existing is not None and existing.get("model_sha256") != compiled.model.sha256:
        raise ModelError(f"--bundle '{args.bundle}' was emitted from another model "
                         f"({existing.get('model')}), not from '{args.model}'")
    samples = load_inputs(compiled, args.inputs, args.samples)[:args.samples]
    if not samples:
        raise UsageError("no reference inputs to run")
    with tempfile.TemporaryDirectory(prefix="mcugen-debug-bundle-") as tmp:
        if args.bundle:
            bundle = Path(args.bundle)
        else:
            bundle = Path(args.output) if args.output else Path(tmp) / compiled.name
            write_bundle(render_bundle(compiled, " ".join(board.cflags), board.name), bundle,
                         force=args.force)
        where = bundle if args.bundle or args.output else "in a temporary folder"
        print(f"mcugen debug: {Path(args.model).name} on {board.name}, bundle {where}, "
              f"{len(samples)} sample{'s' if len(samples) != 1 else ''}"
              + ("" if args.inputs is None else f" from {args.inputs}"))
        work = Path(args.work) if args.work else None
        rep = run_debug(compiled, bundle, board, samples, qemu=not args.no_qemu, work=work)
    print(rep.text())
    return 0 if rep.ok else 1


def main_debug(argv: list[str]) -> int:
    """`mcugen debug ...`: 0 every layer bit-exact, 1 a layer diverges, 2 a McugenError."""
    argv = list(argv)
    debug = "--debug" in argv
    try:
        return cmd_debug(build_parser().parse_args(argv))
    except VerifyError as exc:
        if debug:
            raise
        print(f"mcugen: error: {exc}", file=sys.stderr)
        return 1
    except McugenError as exc:
        if debug:
            raise
        print(f"mcugen: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main_debug(sys.argv[1:]))
