#!/usr/bin/env python3
"""Instructions per inference on RISC-V (issue 27): every shared model and the digits example on a
rv32 board in qemu-system-riscv32 (virt), portable kernels at -O2 (riscv64-unknown-elf-gcc 12,
picolibc).

For each model the bundle is emitted for the board, built by SConstruct (emitter.target.build_firmware)
and run on the reference inputs of NAME_ref.npz (digits: the first 8 held-out images): the median
executed instructions per inference (the QEMU plugin between the harness's RISC-V markers), the
model's flash and RAM, the inference stack, and whether every output equals TFLM's `tflm_outputs`
(digits: the golden model). Prints a Markdown table (docs/riscv.md).

    python benchmarks/riscv.py [--board rv32imac] [--models tflm_hello_world,...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from emitter.boards import load_board  # noqa: E402
from emitter.compiler import compile_model, golden_run  # noqa: E402
from emitter.render.bundle import render_bundle  # noqa: E402
from emitter.render.write import write_bundle  # noqa: E402
from emitter.target.firmware import build_firmware  # noqa: E402
from emitter.target.qemu import run_qemu  # noqa: E402
from emitter.verify.harness import pack, unpack, write_glue  # noqa: E402
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS  # noqa: E402

DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"


def inputs_and_reference(name: str, c) -> tuple[list[list[np.ndarray]], list[np.ndarray]]:
    if name == "digits":
        from emitter.verify.run import quantize

        t = c.graph.t(c.graph.inputs[0])
        images = np.load(REPO / "examples" / "digits_heldout.npz")["images"][:8]
        samples = [[quantize(x.astype(np.float64), t.quant.s, t.quant.zp).reshape(t.shape)] for x in images]
        return samples, [golden_run(c, s)[0] for s in samples]
    ref = np.load(SHARED_MODELS / name / f"{name}_ref.npz")
    samples = [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"]]
    return samples, list(ref["tflm_outputs"])


def measure(name: str, board_name: str, work: Path) -> dict:
    board = load_board(board_name)
    model = DIGITS if name == "digits" else SHARED_MODELS / name / f"{name}.onnx"
    c = compile_model(model, name="net", board=board)
    samples, want = inputs_and_reference(name, c)
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), work / "bundle", force=True)
    write_glue(c, work / "glue")
    fw = build_firmware(work / "bundle", work / "glue", board, work / "fw", "-O2")
    run_dir = work / "run"
    run_dir.mkdir()
    (run_dir / "input.bin").write_bytes(pack(samples))
    run = run_qemu(fw.elf, board, run_dir, timeout=3600)
    got = unpack(c, (run.workdir / "output.bin").read_bytes(), len(samples))
    exact = all(np.array_equal(g[0].ravel(), np.asarray(w).ravel()) for g, w in zip(got, want, strict=True))
    return {"name": name, "instructions": int(statistics.median(run.instructions)), "flash": fw.model_flash,
            "ram": fw.model_ram, "stack": run.stack_bytes, "exact": exact, "samples": len(samples)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="rv32imac")
    parser.add_argument("--models", default=",".join(("digits", *MODEL_NAMES)))
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        if name != "digits" and not (SHARED_MODELS / name).is_dir():
            print(f"skipped {name}: {SHARED_MODELS / name} absent", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory(prefix="mcugen-riscv-") as tmp:
            row = measure(name, args.board, Path(tmp))
        print(f"{name}: {row['instructions']:,} instructions", file=sys.stderr)
        rows.append(row)
    print(f"| model ({args.board}, -O2, portable) | instructions per inference | model flash | model RAM "
          "| stack | bit-exact |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        ref = "golden" if r["name"] == "digits" else "tflm_outputs"
        print(f"| {r['name']} | {r['instructions']:,} | {r['flash']:,} | {r['ram']:,} | {r['stack']:,} "
              f"| {'yes' if r['exact'] else 'NO'} ({r['samples']} samples vs {ref}) |")
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
