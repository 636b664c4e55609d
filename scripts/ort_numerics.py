"""Where mcugen's int8 arithmetic drifts from onnxruntime's on deep onnxruntime-quantized models
(the figures of docs/numerics_onnxruntime.md).

    python scripts/ort_numerics.py [--models mbv2 resnet] [--samples 32] [--layers] [--work DIR]
                                   [--cores cortex-m0plus cortex-m4 ...]

Per model (tests/models/deep.py, quantized by onnxruntime in QDQ and QOperator form), on seeded
N(0, 1) inputs, each numerics mode of mcugen's golden model and onnxruntime's integer paths are
compared with onnxruntime's float QDQ reference (graph optimizations off: float ops between
QuantizeLinear/DequantizeLinear):
- at the logits: elements differing, max |diff| in quanta, argmax agreement;
- with --layers, per layer: "isolated" (the layer fed onnxruntime's reference input, so only its
  own rounding shows: share differing, mean diff = bias, max) and "propagated" (the whole golden run).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emitter.compiler import Compiled, compile_model, golden_run  # noqa: E402
from emitter.errors import McugenError  # noqa: E402
from emitter.verify.debug.layers import debug_layers  # noqa: E402
from emitter.verify.debug.ort import ort_layers  # noqa: E402
from emitter.verify.run import ort_run, quantize  # noqa: E402
from tests.models.deep import build, feeds  # noqa: E402

Rows = list[list[np.ndarray]]


def int8_inputs(c: Compiled, n: int, seed: int) -> Rows:
    t = c.graph.t(c.graph.inputs[0])
    assert t.quant is not None
    return [[quantize(f["x"].astype(np.float64), t.quant.s, t.quant.zp).reshape(t.shape)] for f in feeds(n, seed)]


def output_stats(got: Rows, ref: Rows) -> str:
    a = np.stack([r[0].astype(np.int32).ravel() for r in got])
    b = np.stack([r[0].astype(np.int32).ravel() for r in ref])
    d = np.abs(a - b)
    agree = int((a.argmax(1) == b.argmax(1)).sum())
    return (f"{int((d > 0).sum()):4d}/{d.size} differ, {int((d > 4).sum()):4d} by > 4, max {int(d.max()):3d}, "
            f"mean diff {float((a - b).mean()):+.3f}, argmax {agree}/{len(a)}")


def isolated(c: Compiled, samples: Rows, refs: list[dict[str, np.ndarray]]) -> dict[str, list[np.ndarray]]:
    """Per layer output tensor: golden - reference when the layer reads the reference's inputs."""
    g = c.graph
    diffs: dict[str, list[np.ndarray]] = {}
    for sample, ref in zip(samples, refs, strict=True):
        env = {name: np.asarray(x).astype(np.int8).ravel() for name, x in zip(g.inputs, sample, strict=True)}
        for node, p in zip(g.nodes, c.prepared, strict=True):
            out = node.outputs[0]
            env[out] = np.asarray(p.golden(env)).astype(np.int8).ravel()
            if out in ref:
                diffs.setdefault(out, []).append(env[out].astype(np.int32) - ref[out].astype(np.int32))
                env[out] = np.clip(ref[out], -128, 127).astype(np.int8)
    return diffs


def layer_table(c: Compiled, samples: Rows, refs: list[dict[str, np.ndarray]]) -> list[str]:
    from emitter.compiler import golden_tensors

    iso = isolated(c, samples, refs)
    prop: dict[str, list[np.ndarray]] = {}
    for sample, ref in zip(samples, refs, strict=True):
        env = golden_tensors(c, sample)
        for name, y in ref.items():
            prop.setdefault(name, []).append(env[name].astype(np.int32) - y.astype(np.int32))
    lines = [f"{'#':>3} {'op':<18} {'isolated: differ':>17} {'bias':>7} {'max':>4} | "
             f"{'propagated: differ':>18} {'bias':>7} {'max':>4}"]
    for lay in debug_layers(c):
        if lay.tensor not in iso:
            continue
        i, p = np.concatenate(iso[lay.tensor]), np.concatenate(prop[lay.tensor])
        lines.append(f"{lay.index:3d} {lay.op:<18} {100 * (i != 0).mean():16.3f}% {i.mean():+7.4f} "
                     f"{np.abs(i).max():4d} | {100 * (p != 0).mean():17.3f}% {p.mean():+7.4f} "
                     f"{np.abs(p).max():4d}")
    return lines


def instructions(path: Path, modes: list[str], cores: list[str], samples: Rows, work: Path) -> list[str]:
    """Median executed instructions per inference in QEMU, per core and mode (portable backend,
    the bundle planned for the core), and each mode's ratio to the first."""
    from emitter.boards import load_board
    from emitter.render.bundle import render_bundle
    from emitter.render.write import write_bundle
    from emitter.verify.harness import run_in_qemu, write_glue

    lines = []
    for core in cores:
        board = load_board(core)
        counts = {}
        for mode in modes:
            c = compile_model(path, name="net", numerics=mode, board=board)
            folder = work / f"{path.stem}_{core}_{mode}"
            write_bundle(render_bundle(c, " ".join(board.cflags), board.name), folder / "bundle")
            write_glue(c, folder / "glue")
            _, run = run_in_qemu(folder / "bundle", folder / "glue", board, folder, samples[:3])
            counts[mode] = int(np.median(run.instructions))
        first = counts[modes[0]]
        lines.append(f"  {core:<14} " + ", ".join(f"{m} {n:,} ({n / first:.3f})" for m, n in counts.items()))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["mbv2", "resnet"])
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--modes", nargs="+", default=["tflite", "onnxruntime"])
    ap.add_argument("--layers", action="store_true", help="per-layer tables")
    ap.add_argument("--cores", nargs="*", default=[], help="QEMU instruction counts on these cores")
    ap.add_argument("--work", type=Path, default=None, help="where the quantized models go (default: a temp dir)")
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="ort_numerics_"))
    for kind in args.models:
        qdq, qop = build(kind, "qdq", work), build(kind, "qop", work)
        base = compile_model(qdq, numerics="tflite")
        samples = int8_inputs(base, args.samples, args.seed)
        ref = ort_run(base, qdq, samples)
        print(f"== {kind}: {qdq.name} ({len(base.graph.nodes)} IR nodes), {len(samples)} samples; "
              "logits in quanta vs onnxruntime's float QDQ reference")
        print(f"  {'onnxruntime QDQ, optimized':<32} {output_stats(ort_run(base, qdq, samples, optimize=True), ref)}")
        try:
            compile_model(qop)
            qop_ok = True
        except McugenError as exc:  # reported, not hidden: the QDQ figures still stand
            print(f"  (QOperator form not compiled: {str(exc).splitlines()[1].strip()})")
            qop_ok = False
        ort_int = ort_run(base, qop, samples)
        print(f"  {'onnxruntime QOperator':<32} {output_stats(ort_int, ref)}")
        for mode in args.modes:
            c = compile_model(qdq, numerics=mode)
            gold = [golden_run(c, s) for s in samples]
            print(f"  {'mcugen QDQ, ' + mode:<32} {output_stats(gold, ref)}")
            same = sum(int((g[0] != o[0]).sum()) for g, o in zip(gold, ort_int, strict=True))
            print(f"  {'':<32} vs onnxruntime QOperator's integer kernels: {same} logits differ")
            if qop_ok:
                c_qop = compile_model(qop, numerics=mode)
                gq = [golden_run(c_qop, s) for s in samples]
                print(f"  {'mcugen QOperator, ' + mode:<32} {output_stats(gq, ref)}")
            if args.layers:
                refs = ort_layers(c, debug_layers(c), samples)
                print("\n".join("    " + line for line in layer_table(c, samples, refs)))
        if args.cores:
            print(f"  instructions per inference (QEMU, median of 3 samples), ratio to {args.modes[0]}:")
            print("\n".join(instructions(qdq, args.modes, args.cores, samples, work)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
