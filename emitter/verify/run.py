"""Verification: run the bundle on host (gcc) and in QEMU, compare with the golden and onnxruntime.

The golden model is the contract: host C and QEMU must equal it bit for bit. onnxruntime
requantizes in float, so against it we report the share of differing elements and max |diff|.
"""
from __future__ import annotations

import tempfile
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from emitter.compiler import Compiled, golden_run
from emitter.errors import McugenError, UsageError, VerifyError
from emitter.optimize import CMSIS_OPT_FLAGS, OPT_FLAGS
from emitter.verify.harness import Samples, run_in_qemu, run_on_host, unpack, write_glue

if TYPE_CHECKING:
    from emitter.boards import Board
    from emitter.target.qemu import QemuRun


def quantize(x: np.ndarray, scale: float, zp: int, dtype: str = "int8") -> np.ndarray:
    q = np.floor(np.abs(x / scale) + 0.5) * np.sign(x / scale) + zp
    info = np.iinfo(dtype)  # int16: TFLite's int16x8 activations (emitter/ops/a16.py)
    return np.clip(q, info.min, info.max).astype(dtype)


def load_inputs(c: Compiled, npz: str | Path | None, samples: int, seed: int = 0) -> list[list[np.ndarray]]:
    """Reference inputs as int8 in the caller's layout: per sample, one array per graph input.

    From an .npz (read_inputs: checked, UsageError otherwise): a key per ONNX input name (or
    'inputs'/'images'/'x' for a single input), int8 as is, uint8 minus 128 (uint16 minus 32768 for an
    int16 input), float quantized with
    the input's scale and zero point; the first axis runs over samples. Without one: `samples`
    uniform random int8 samples (seeded)."""
    g = c.graph
    if npz is None:
        rng = np.random.default_rng(seed)
        return [[rng.integers(np.iinfo(g.t(n).dtype).min, np.iinfo(g.t(n).dtype).max + 1, size=g.t(n).shape,
                              dtype=g.t(n).dtype) for n in g.inputs]
                for _ in range(samples)]
    per_input = []
    for name, arr in zip(g.inputs, read_inputs(c, npz), strict=True):
        t = g.t(name)
        if arr.dtype == np.dtype(t.dtype):
            q = arr
        elif arr.dtype in (np.uint8, np.uint16):  # the ONNX uint8 (uint16) data: minus 128 (32768)
            q = signed_output(arr)
        else:
            assert t.quant is not None
            q = quantize(arr.astype(np.float64), t.quant.s, t.quant.zp, t.dtype)
        per_input.append(q)
    n = min(len(a) for a in per_input)
    return [[a[k] for a in per_input] for k in range(n)]


INPUT_ALIASES = ("inputs", "images", "x")  # keys a one-input model's --inputs may use instead of its name


def _npz(npz: str | Path) -> dict[str, np.ndarray]:
    """Every array of an .npz file; UsageError when it cannot be read as one."""
    try:
        data = np.load(npz, allow_pickle=False)
        if not hasattr(data, "files"):
            raise UsageError(f"--inputs '{npz}' holds one bare array, not named arrays: save it with "
                             "numpy.savez(path, <input name>=array, ...)")
        return {k: np.asarray(data[k]) for k in data.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise UsageError(f"cannot read --inputs '{npz}': {exc}") from None


def read_inputs(c: Compiled, npz: str | Path) -> list[np.ndarray]:
    """The arrays of --inputs, one per graph input, each [samples, *shape] and checked: the key
    (the ONNX input name, or inputs/images/x for a one-input model), the shape (per sample the
    input's element count: [N, *shape], or one sample as [*shape]), the dtype (the input's own,
    uint8 for an int8 input, or float to quantize) and at least one sample; any problem is one
    UsageError naming the file, the key, what was expected and what was found."""
    g = c.graph
    data = _npz(npz)
    keys = sorted(data)
    out = []
    for name in g.inputs:
        b, t = g.boundaries[name], g.t(name)
        want = tuple(int(d) for d in t.shape)
        allowed = [b.onnx_name] + (list(INPUT_ALIASES) if len(g.inputs) == 1 else [])
        key = next((k for k in allowed if k in data), None)
        if key is None:
            raise UsageError(f"--inputs '{npz}' has no array for input '{b.onnx_name}': expected a key "
                             f"{' or '.join(repr(k) for k in allowed)}; found keys {keys}")
        arr = data[key]
        size = int(np.prod(want))
        unsigned = {"int8": "uint8", "int16": "uint16"}.get(t.dtype)
        ok_dtypes = f"{t.dtype}" + (f", {unsigned} (minus {128 if t.dtype == 'int8' else 32768})"
                                    if unsigned else "") + " or float"
        if not (arr.dtype == np.dtype(t.dtype) or np.issubdtype(arr.dtype, np.floating)
                or (unsigned is not None and arr.dtype == np.dtype(unsigned))):
            raise UsageError(f"--inputs '{npz}': array '{key}' (input '{b.onnx_name}') is {arr.dtype}; "
                             f"expected {ok_dtypes}")
        if arr.shape == want:
            arr = arr[None]
        if arr.ndim < 1 or len(arr) == 0 or int(np.prod(arr.shape[1:])) != size:
            raise UsageError(f"--inputs '{npz}': array '{key}' (input '{b.onnx_name}') has shape "
                             f"{list(arr.shape)}; expected [samples, ...] with {size} values per sample "
                             f"(the input is {list(want)}), at least one sample")
        out.append(arr.reshape((-1,) + want))
    return out


def check_inputs(c: Compiled, npz: str | Path | None, samples: int) -> None:
    """Everything verification will read, checked before anything is written or built: --samples,
    the arrays of --inputs (read_inputs) and the reference outputs it may carry (tflm_outputs /
    expected: numbers, the output's element count per sample). UsageError on any problem."""
    if npz is None:
        if samples < 1:
            raise UsageError(f"--samples {samples}: verification needs at least one sample")
        return
    read_inputs(c, npz)
    data = _npz(npz)
    key = next((k for k in REFERENCE_KEYS if k in data), None)
    if key is None or len(c.graph.outputs) != 1:
        return
    arr = data[key]
    size = int(np.prod(c.output_shapes[0]))
    if not np.issubdtype(arr.dtype, np.integer) or arr.ndim < 1 or len(arr) == 0 or \
            int(np.prod(arr.shape[1:])) != size:
        raise UsageError(f"--inputs '{npz}': reference outputs '{key}' are {arr.dtype} {list(arr.shape)}; "
                         f"expected integers [samples, ...] with {size} values per sample (the output is "
                         f"{list(c.output_shapes[0])})")


REFERENCE_KEYS = {"tflm_outputs": ("TFLM outputs", "TensorFlow Lite Micro's interpreter on the same inputs"),
                  "expected": ("expected outputs", "as given with the inputs")}


def reference_source(npz: str | Path) -> tuple[str, str] | None:
    """(short label, where they came from) of the reference outputs shipped in `npz`, if any."""
    data = _npz(npz)
    key = next((k for k in REFERENCE_KEYS if k in data), None)
    if key is None:
        return None
    label, origin = REFERENCE_KEYS[key]
    return label, f"array '{key}' of {Path(npz).name}: {origin}"


def reference_outputs(c: Compiled, npz: str | Path | None, count: int) -> list[list[np.ndarray]] | None:
    """Expected int8 outputs shipped with the inputs ('tflm_outputs' or 'expected'), if any."""
    if npz is None or len(c.graph.outputs) != 1:
        return None
    data = _npz(npz)
    key = next((k for k in REFERENCE_KEYS if k in data), None)
    if key is None:
        return None
    shape = c.output_shapes[0]
    arr = data[key].reshape((-1,) + tuple(shape))
    return [[arr[k].astype(c.graph.t(c.graph.outputs[0]).dtype)] for k in range(min(count, len(arr)))]


def ort_run(c: Compiled, model: Path, samples: list[list[np.ndarray]],
            optimize: bool = False, config: dict[str, str] | None = None) -> list[list[np.ndarray]]:
    """onnxruntime (CPU) on the same samples, outputs as our int8. Graph optimizations off by
    default: QDQ runs as float ops between QuantizeLinear/DequantizeLinear (the float QDQ
    reference); `optimize` turns them on, as a default session has them (onnxruntime fuses QDQ
    groups into its integer QLinear kernels where its CPU provider has them). `config`: session
    config entries (SessionOptions.add_session_config_entry)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    for key, value in (config or {}).items():
        so.add_session_config_entry(key, value)
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    g = c.graph
    results = []
    for sample in samples:
        feed = {}
        for name, x in zip(g.inputs, sample, strict=True):
            b, t = g.boundaries[name], g.t(name)
            assert t.quant is not None
            if b.float_io:
                feed[b.onnx_name] = ((x.astype(np.float32) - t.quant.zp) * np.float32(t.quant.s)).astype(np.float32)
            elif b.from_uint8:  # uint8 (uint16) in ONNX: the C API's int8 (int16) + 128 (+ 32768)
                feed[b.onnx_name] = unsigned_feed(x)
            else:
                feed[b.onnx_name] = x
        outs = sess.run([g.boundaries[n].onnx_name for n in g.outputs], feed)
        row = []
        for name, y in zip(g.outputs, outs, strict=True):
            b, t = g.boundaries[name], g.t(name)
            assert t.quant is not None
            if b.float_io:
                y = quantize(np.asarray(y, np.float64), t.quant.s, t.quant.zp, t.dtype)
            elif b.from_uint8:
                y = signed_output(np.asarray(y))
            row.append(np.asarray(y).reshape(t.shape))
        results.append(row)
    return results


def unsigned_feed(x: np.ndarray) -> np.ndarray:
    """The C API's int8 (int16) data of an ONNX uint8 (uint16) tensor as onnxruntime takes it:
    + 128 (+ 32768), the zero point's shift (emitter/lower/graph_io.py)."""
    wide = x.dtype == np.int16
    return (x.astype(np.int32) + (32768 if wide else 128)).astype(np.uint16 if wide else np.uint8)


def signed_output(y: np.ndarray) -> np.ndarray:
    """onnxruntime's uint8 (uint16) output as the C API gives it: int8 (int16), - 128 (- 32768)."""
    wide = y.dtype == np.uint16
    return (y.astype(np.int32) - (32768 if wide else 128)).astype(np.int16 if wide else np.int8)


def diff_stats(a: list[list[np.ndarray]], b: list[list[np.ndarray]]) -> tuple[int, int, int]:
    """(elements differing, elements, max |diff|) over all samples and outputs."""
    n = d = mx = 0
    for ra, rb in zip(a, b, strict=False):  # reference outputs may cover fewer samples
        for x, y in zip(ra, rb, strict=True):
            delta = np.abs(x.astype(np.int32) - y.astype(np.int32))
            n += delta.size
            d += int((delta > 0).sum())
            mx = max(mx, int(delta.max(initial=0)))
    return d, n, mx


# Every check a verification can make, by stable id (report.json checks[].check, JUnit case names).
CHECKS = {"host_vs_golden": "host gcc vs golden", "qemu_vs_golden": "QEMU vs golden",
          "qemu_vs_host": "QEMU vs host", "golden_vs_reference": "golden vs reference outputs",
          "host_vs_reference": "host gcc vs reference outputs", "frontend": "front end"}


def first_differences(a: list[list[np.ndarray]], b: list[list[np.ndarray]],
                      limit: int = 10) -> list[dict[str, int]]:
    """The first `limit` differing elements: sample, output, flat index, got (a) and want (b)."""
    out: list[dict[str, int]] = []
    for s, (ra, rb) in enumerate(zip(a, b, strict=False)):
        for o, (x, y) in enumerate(zip(ra, rb, strict=True)):
            for i in np.flatnonzero(x.reshape(-1).astype(np.int32) != y.reshape(-1).astype(np.int32)):
                out.append({"sample": s, "output": o, "index": int(i), "got": int(x.reshape(-1)[i]),
                            "want": int(y.reshape(-1)[i])})
                if len(out) == limit:
                    return out
    return out


def host_twin(c: Compiled) -> Compiled | None:
    """The bundle as the host runs it, when that differs from the board's bundle.

    The host build compiles the kernels (mcugen's, and CMSIS-NN's) for the host, so they take
    their plain C paths, whose scratch needs differ from the board's DSP/MVE paths (a one-channel
    conv on cortex-m55: 56 bytes there in CMSIS-NN, 160 in plain C). The twin is the same
    compilation (same kernels, same choice per layer) with the scratch planned for the C paths;
    None where the bundle already is (no board: planned for every path; pure-C cores)."""
    from emitter.compiler import isa_of

    board = c.options.board
    if board is None or c.options.isa == "c" or isa_of(board) == "c" or c.optimize == "size":
        return None
    from emitter.compiler import compile_model

    return compile_model(c.model.path, replace(c.options, name=c.name, isa="c", cmsis_sizes_for="c"))


def run_host(c: Compiled, bundle: Path, samples: Samples, work: Path,
             cflags: tuple[str, ...] = ()) -> Samples:
    """Build the bundle with the host gcc (-Werror) and run it on `samples`. A bundle for a DSP/MVE
    core runs as its host_twin(), rendered under work/host_bundle."""
    twin = host_twin(c)
    if twin is not None:
        from emitter.render.bundle import render_bundle
        from emitter.render.write import write_bundle

        board = c.options.board
        assert board is not None  # host_twin() is None without a board
        bundle = work / "host_bundle"
        write_bundle(render_bundle(twin, " ".join(board.cflags), board.name), bundle, force=True)
    write_glue(c, work / "glue")
    run_dir, res = run_on_host(bundle, work / "glue", work, samples, cflags, werror=True,
                               cmsis_nn=c.cmsis_path, opt=OPT_FLAGS[c.optimize])
    if res.returncode != 0:
        raise VerifyError(f"host harness exited {res.returncode}: {res.stdout}{res.stderr}")
    return unpack(c, (run_dir / "output.bin").read_bytes(), len(samples))


@dataclass
class VerifyReport:
    samples: int
    lines: list[str] = field(default_factory=list)
    ok: bool = True
    figures: dict = field(default_factory=dict)
    outputs: dict[str, list[list[np.ndarray]]] = field(default_factory=dict)

    failed: list[str] = field(default_factory=list)  # the checks that found a difference

    def check(self, check: str, what: str, got: list[list[np.ndarray]], want: list[list[np.ndarray]]) -> None:
        """Compare `got` with `want`; `check` is the check's stable id (CHECKS), `what` its line."""
        d, n, mx = diff_stats(got, want)
        good = d == 0
        self.ok &= good
        if not good:
            self.failed.append(what)
        self.lines.append(f"{what:<34} {'bit-exact' if good else 'MISMATCH'}: {d}/{n} elements differ, max |diff| {mx}")
        self.figures.setdefault("checks", []).append({
            "check": check, "what": what, "ok": good, "differ": d, "elements": n, "max_diff": mx,
            "first_differences": first_differences(got, want)})

    def culprit(self) -> str:
        """What a failed verification blames: the generated C when it differs from the golden model
        (or the host from QEMU); else the golden model's numerics, when only the reference differs."""
        code = [w for w in self.failed if w.endswith((" vs golden", " vs host"))]
        if code or not self.failed:
            return ("verification failed: the generated C does not match the golden model bit for "
                    f"bit ({'; '.join(code)}; see above)")
        return ("verification failed: the generated C equals mcugen's golden model bit for bit, but "
                "the golden model differs from the reference outputs shipped in --inputs: a numerics "
                "difference between mcugen's contract (TFLite int8: fixed-point multipliers, double "
                "rounding) and whatever produced the reference (onnxruntime requantizes in float, "
                "rounding half to even), not a code-generation bug. Compare per layer with `mcugen "
                "debug` to see where the two numerics part")

    def note(self, line: str) -> None:
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join([f"verification on {self.samples} samples:"] + ["  " + s for s in self.lines])


def run_verify(c: Compiled, bundle: Path, board: Board, model: Path, inputs: str | None, count: int,
               qemu: bool = True, work: Path | None = None, cc: str = "gcc") -> VerifyReport:
    """Golden vs host build vs QEMU firmware (built with `cc`: gcc or a clang) on `count` samples."""
    samples = load_inputs(c, inputs, count)
    if not samples:
        raise UsageError("no reference inputs to verify with")
    gold = [golden_run(c, s) for s in samples]
    rep = VerifyReport(len(samples))
    rep.figures.update(samples=len(samples), inputs=f"--inputs {Path(inputs).name}" if inputs is not None
                       else "random int8 inputs (seeded; no --inputs)")
    try:
        _run_checks(rep, c, bundle, board, samples, gold, inputs, qemu, work, cc)
    except McugenError as exc:  # e.g. QEMU missing: the host checks that ran still count
        exc.verify_figures = rep.figures
        raise
    ort_out = ort_run(c, model, samples)
    d, n, mx = diff_stats(gold, ort_out)
    rep.note(f"golden ({c.graph.numerics} numerics) vs onnxruntime: {d}/{n} elements differ "
             f"({100.0 * d / max(n, 1):.2f}%), max |diff| {mx} (reported, not an error)")
    rep.figures.update(ort_differ=d, ort_elements=n, ort_max_diff=mx)
    for line in ort_optimized_lines(c, model, samples, ort_out, rep.figures):
        rep.note(line)
    return rep


def _run_checks(rep: VerifyReport, c: Compiled, bundle: Path, board: Board, samples: Samples,
                gold: Samples, inputs: str | None, qemu: bool, work: Path | None, cc: str = "gcc") -> None:
    """The host build and run, the reference outputs, and the QEMU build and run, into `rep`."""
    with tempfile.TemporaryDirectory(prefix="mcugen-verify-") as tmp:
        w = Path(work) if work is not None else Path(tmp)
        host = run_host(c, bundle, samples, w)
        rep.outputs.update(golden=gold, host=host)
        rep.check("host_vs_golden", "host gcc vs golden", host, gold)
        expected = reference_outputs(c, inputs, len(samples))
        source = reference_source(inputs) if expected is not None and inputs is not None else None
        if expected is not None and source is not None:
            rep.check("golden_vs_reference", f"golden vs {source[0]}", gold, expected)
            rep.check("host_vs_reference", f"host gcc vs {source[0]}", host, expected)
            rep.note(f"{source[0]}: {source[1]}")
        if qemu:
            fw, run = run_in_qemu(bundle, w / "glue", board, w, samples, cmsis_nn=c.cmsis_path,
                                  opt=OPT_FLAGS[c.optimize], cmsis_opt=CMSIS_OPT_FLAGS[c.optimize], cc=cc,
                                  arena_prefix=c.name)
            target = unpack(c, (run.workdir / "output.bin").read_bytes(), len(samples))
            rep.outputs["qemu"] = target
            rep.check("qemu_vs_golden", f"QEMU {board.name} vs golden", target, gold)
            rep.check("qemu_vs_host", f"QEMU {board.name} vs host", target, host)
            counts = sorted(set(run.instructions))
            opt = ("" if cc == "gcc" else f"{cc}, ") + f"bundle {OPT_FLAGS[c.optimize]}" + (
                f", CMSIS-NN {CMSIS_OPT_FLAGS[c.optimize]}" if c.cmsis_path else "")
            rep.figures.update(instructions=list(run.instructions), stack_bytes=run.stack_bytes,
                               flash_model=fw.model_flash, ram_model=fw.model_ram,
                               ram_model_with_stack=fw.model_ram + (run.stack_bytes or 0), opt=opt,
                               text=fw.text, rodata=fw.rodata, data=fw.data, bss=fw.bss,
                               code_bytes=fw.model_code(c.name), optimize=c.optimize, compiler=cc)
            rep.note(f"instructions per inference ({board.name}, {opt}): "
                     f"{counts[0]:,}" + (f"..{counts[-1]:,}" if len(counts) > 1 else ""))
            rep.note(f"firmware: text {fw.text:,} rodata {fw.rodata:,} data {fw.data:,} bss {fw.bss:,} bytes; "
                     f"model alone: flash {fw.model_flash:,}, RAM {fw.model_ram:,} bytes; "
                     f"inference stack {run.stack_bytes} bytes")
            rep.note(f"code beyond the weights (linked firmware, --optimize {c.optimize}): "
                     f"{fw.model_code(c.name):,} bytes" + (" with CMSIS-NN's" if c.cmsis_path else ""))
            if run.accesses:
                rep.figures["pool_accesses"] = pool_accesses(run)
                rep.note(pool_access_line(rep.figures["pool_accesses"], board.name))


def pool_accesses(run: QemuRun) -> dict[str, dict[str, int | float]]:
    """Per pool arena the plugin counted (QemuRun.accesses): its address and bytes, and the data
    bytes loaded and stored in it per inference (the first inference's; `varies` 1 when another
    inference's differ), with `share`, its loads + stores over all the arenas'."""
    assert run.ranges is not None and run.accesses
    first = run.accesses[0]
    total = sum(loaded + stored for loaded, stored in first.values())
    varies = int(any(a != first for a in run.accesses[1:]))
    return {name: {"address": start, "bytes": size, "loaded": first[name][0], "stored": first[name][1],
                   "share": (first[name][0] + first[name][1]) / total if total else 0.0, "varies": varies}
            for name, (start, size) in run.ranges.items()}


def pool_access_line(pools: dict[str, dict[str, int | float]], board: str) -> str:
    """One report line: bytes accessed per pool arena, as the QEMU plugin counted them."""
    parts = [f"{name} {int(p['loaded']) + int(p['stored']):,} ({100 * p['share']:.1f} %; loads "
             f"{int(p['loaded']):,}, stores {int(p['stored']):,}; {int(p['bytes']):,} bytes at 0x{int(p['address']):x})"
             for name, p in pools.items()]
    varies = any(p["varies"] for p in pools.values())
    return (f"arena bytes accessed per inference ({board}, QEMU plugin"
            + (", first inference; the others differ" if varies else "") + "): " + ", ".join(parts))


# x86-64 without AVX-512 VNNI: onnxruntime's u8s8 integer kernels add pairs of uint8 x int8 products
# in saturating 16-bit lanes (docs/onnxruntime_optimized_graph.md); this session entry makes them u8u8
X64_PRECISION = {"session.x64quantprecision": "1"}


def ort_optimized_lines(c: Compiled, model: Path, samples: list[list[np.ndarray]],
                        reference: list[list[np.ndarray]], figures: dict | None = None) -> list[str]:
    """onnxruntime's optimized session (a default session: every graph optimization on) against
    its own QDQ reference (`reference`: optimizations off); lines to print when the two differ by
    more than one quantum, none otherwise. The figures go into `figures` (ort_optimized_*)."""
    try:
        opt = ort_run(c, model, samples, optimize=True)
    except Exception as exc:  # noqa: BLE001 - an optimizer failure is reported, not fatal
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return [f"onnxruntime's optimized session could not run the model ({type(exc).__name__}: {first})"]
    d, n, mx = diff_stats(opt, reference)
    if figures is not None:
        figures.update(ort_optimized_differ=d, ort_optimized_elements=n, ort_optimized_max_diff=mx)
    if mx <= 1:
        return []
    lines = [f"onnxruntime's optimized graph differs from its own QDQ reference: {d}/{n} elements, "
             f"max |diff| {mx}; accuracy measured with a default onnxruntime session is not this model's"]
    try:
        fixed = diff_stats(ort_run(c, model, samples, optimize=True, config=X64_PRECISION), reference)[2] <= 1
    except Exception:  # noqa: BLE001 - only a diagnosis
        fixed = False
    if fixed:
        lines.append("  cause: its u8s8 integer kernels saturate 16-bit pair sums on this x86-64 CPU (no "
                     "AVX-512 VNNI); the session config entry session.x64quantprecision=1 gives the "
                     "reference's outputs (docs/onnxruntime_optimized_graph.md)")
    else:
        lines.append("  see docs/onnxruntime_optimized_graph.md to find which graph transformer makes the "
                     "difference (InferenceSession(..., disabled_optimizers=[...]))")
    return lines
