"""The keyword example end to end: raw PCM -> MFCC front end -> int8 network, in QEMU.

    python examples/keyword_audio/run_keyword_demo.py [--board cortex-m4 --board cortex-m7] [--out DIR]

1. mcugen emits keyword_int8.onnx with the front end of frontend.toml (`--frontend`);
2. the bundle runs on the held-out clips (raw 8 kHz PCM) on the host and in QEMU: features and
   network, checked bit for bit against cmsisdsp and the golden model (and the stream, hop by hop);
3. top-1 accuracy on the same clips: float model and int8 onnxruntime (its QDQ reference, graph
   optimizations off; a default session's figure beside it when that differs) on cmsisdsp's
   features, and the generated C in QEMU from PCM. Exits non-zero if any check fails.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from keyword_data import CLASSES, decode_mulaw  # noqa: E402


def heldout() -> tuple[list[np.ndarray], np.ndarray]:
    data = np.load(HERE / "heldout.npz")
    return list(decode_mulaw(data["mulaw"], data["table"])), data["labels"]


def ort_accuracy(model: Path, feats: np.ndarray, labels: np.ndarray, optimize: bool = False) -> float:
    """Top-1 accuracy in onnxruntime: its QDQ reference (graph optimizations off), or with
    `optimize` a default session, whose fused integer kernels can differ from the reference on
    some CPUs (docs/onnxruntime_optimized_graph.md)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    pred = [int(np.argmax(sess.run(None, {"mfcc": f[None]})[0])) for f in feats]
    return float(np.mean(np.array(pred) == labels))


def evaluate(boards: list[str], out: Path) -> dict[str, float | int]:
    """Emit, check (host + each board's QEMU) and measure; returns accuracies and figures."""
    from emitter.boards import load_board
    from emitter.compiler import compile_model, golden_run
    from emitter.features import features_raw, load_spec
    from emitter.render.bundle import render_bundle
    from emitter.render.frontend import bind
    from emitter.render.write import write_bundle
    from emitter.verify.frontend import check, run_mode

    clips, labels = heldout()
    spec = load_spec(HERE / "frontend.toml")
    feats = np.stack([features_raw(spec, c, 49) for c in clips]).astype(np.float32) / 128.0
    result: dict[str, float | int] = {
        "clips": len(clips),
        "float": ort_accuracy(HERE / "keyword_fp32.onnx", feats, labels),
        "int8_ort": ort_accuracy(HERE / "keyword_int8.onnx", feats, labels),
        "int8_ort_optimized": ort_accuracy(HERE / "keyword_int8.onnx", feats, labels, optimize=True)}
    c = compile_model(HERE / "keyword_int8.onnx", name="kws")
    fe = bind(spec, c)
    with tempfile.TemporaryDirectory(prefix="mcugen-kws-") as tmp:
        for name in [None, *boards]:
            board = load_board(name) if name else None
            bundle = out / (name or "host")
            write_bundle(render_bundle(c, " ".join(board.cflags) if board else "",
                                       board.name if board else "host", fe), bundle, force=True)
            r = check(fe, c, bundle, clips, Path(tmp), board, modes=("raw", "push"))
            run = run_mode(fe, c, bundle, "window", clips, Path(tmp), board)
            outs = [np.frombuffer(o[1], np.int8) for o in run.outputs]
            inputs = [np.frombuffer(o[0], np.int8) for o in run.outputs]
            gold = [golden_run(c, [x.reshape(c.input_shapes[0])])[0].ravel() for x in inputs]
            exact = r.ok and all(np.array_equal(a, b) for a, b in zip(outs, gold, strict=True))
            where = name or "host"
            acc = float(np.mean(np.array([int(np.argmax(o)) for o in outs]) == labels))
            print(f"{where:14s} features vs cmsisdsp {'bit-exact' if r.raw_mismatch == 0 else 'DIFFER'}, stream "
                  f"{'bit-exact' if r.stream_mismatch == 0 else 'DIFFERS'}, network vs golden "
                  f"{'bit-exact' if exact else 'DIFFERS'}; PCM -> class accuracy {acc:.2%}")
            result[f"{where}_exact"] = int(exact)
            result[f"{where}_accuracy"] = acc
            if run.instructions:
                per = int(np.median(run.instructions))
                print(f"{'':14s} instructions: PCM -> class {per:,} per window; front end per hop "
                      f"{r.instructions['push']:,}")
                result[f"{where}_instructions"] = per
                result[f"{where}_hop_instructions"] = r.instructions["push"]
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", action="append", help="QEMU board (repeatable; default cortex-m4 and cortex-m7)")
    ap.add_argument("--out", default="out/keyword_audio")
    args = ap.parse_args()
    boards = args.board or ["cortex-m4", "cortex-m7"]
    r = evaluate(boards, Path(args.out))
    print(f"\ntop-1 accuracy on {r['clips']} held-out clips ({len(CLASSES)} classes: {', '.join(CLASSES)}):")
    print(f"  float model (onnxruntime, cmsisdsp features)  {r['float']:.2%}")
    opt = ("" if r["int8_ort_optimized"] == r["int8_ort"] else
           f"  (a default, optimized onnxruntime session: {r['int8_ort_optimized']:.2%}, not this model's; "
           "docs/onnxruntime_optimized_graph.md)")
    print(f"  int8 model (onnxruntime QDQ reference)        {r['int8_ort']:.2%}{opt}")
    for b in boards:
        print(f"  generated C in QEMU {b:13s} from PCM    {r[f'{b}_accuracy']:.2%}")
    ok = all(r[f"{w}_exact"] for w in ["host", *boards])
    print("all checks bit-exact" if ok else "MISMATCH: see above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
