"""Front-end figures per core: instructions per window and per hop, RAM and flash, measured in QEMU.

    python scripts/frontend_figures.py [--arith q15 --arith q31 ...] [--board cortex-m4 ...]

Uses the keyword example (examples/keyword_audio: its model and frontend.toml, the arithmetic
replaced as asked) and 4 of its held-out clips; prints a Markdown table. Bundle and CMSIS-DSP at
-O2; instructions are the QEMU plugin's executed-instruction counts (median over the clips). RAM is
the bundle's .data + .bss in an image that runs only the front end: the whole arena (shared with
the network, sized for both) plus the front end's static state.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arith", action="append", help="q15 | q31 | f32 (repeatable; default all)")
    ap.add_argument("--board", action="append", help="boards (default cortex-m0plus, -m4, -m7, -m55)")
    args = ap.parse_args()

    from emitter.boards import load_board
    from emitter.compiler import compile_model
    from emitter.render.bundle import render_bundle
    from emitter.render.frontend import bind
    from emitter.render.write import write_bundle
    from emitter.verify.frontend import check
    from tests.features_cases import KWS_MODEL, kws_spec, speech_clips

    c = compile_model(KWS_MODEL, name="kws")
    clips = speech_clips()[:4]
    print("| core | arithmetic | per window (49 frames) | per hop (1 frame) | scratch in arena | RAM (arena + "
          "state) | flash (code + tables) | stack |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for arith in args.arith or ["q15", "q31", "f32"]:
        fe = bind(kws_spec(arithmetic=arith), c)
        for name in args.board or ["cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55"]:
            board = load_board(name)
            with tempfile.TemporaryDirectory() as tmp:
                bundle = Path(tmp) / "b"
                write_bundle(render_bundle(c, " ".join(board.cflags), board.name, fe), bundle)
                r = check(fe, c, bundle, clips, Path(tmp) / "w", board, modes=("features", "push"))
            if not r.ok:
                print(f"{name} {arith}: MISMATCH {r}", file=sys.stderr)
                return 1
            print(f"| {name} | {arith} | {r.instructions['features']:,} | {r.instructions['push']:,} | "
                  f"{fe.scratch_bytes:,} B | {r.sizes['ram']:,} B | {r.sizes['flash']:,} B | "
                  f"{r.sizes['stack']:,} B |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
