"""Running a bundle's front end under the harness (host gcc or QEMU) and checking it.

templates/frontend_glue.h.j2 connects mcu_runtime/harness/harness_main.c to the front end in one
of four modes; one sample of input.bin is a window of PCM (or one hop in `push` mode):

    window    <name>_features() then <name>_run(): the model input and the network's output
    features  <name>_features() alone (its instructions are the front end's per window)
    raw       <name>_feature_frame() per frame: the raw CMSIS-DSP features, to compare with cmsisdsp
    push      <name>_features_push() per hop, samples in stream order (instructions per hop)

check() compares every mode with the reference (reference.py) and the golden model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from emitter.errors import VerifyError
from emitter.features.reference import features_raw, from_layout, quantize_raw, stream_features, to_layout
from emitter.features.tables import DTYPES
from emitter.render.frontend import FrontEnd

if TYPE_CHECKING:
    from emitter.boards import Board
    from emitter.compiler import Compiled

MODES = ("window", "features", "raw", "push")
# f32: the device's float rounding (compiler, libm's logf) is not the host package's. Raw features
# beyond F32_TOLERANCE (relative to max(1, |value|)) are counted and reported; what must hold is
# the int8 model input: never more than 1 quantum off, and on at most F32_INPUT_SHARE of the values.
F32_TOLERANCE = 1e-3
F32_INPUT_SHARE = 0.02


def glue_text(fe: FrontEnd, c: Compiled, mode: str) -> str:
    from emitter import __version__
    from emitter.render.cfmt import environment, upper_ident

    raw_bytes = fe.frames * fe.coeffs * DTYPES[fe.spec.arithmetic].itemsize
    out_size = int(np.prod(c.output_shapes[0]))
    sizes = {"window": [fe.input_size, out_size], "features": [fe.input_size], "raw": [raw_bytes],
             "push": [fe.input_size]}[mode]
    pcm = fe.spec.frame_step if mode == "push" else fe.window_samples
    return environment().get_template("frontend_glue.h.j2").render(
        version=__version__, prefix=c.name, PREFIX=upper_ident(c.name), mode=mode, input_bytes=2 * pcm,
        output_sizes=sizes, input_size=fe.input_size)


@dataclass
class Run:
    outputs: list[list[bytes]]  # per sample, per glue output
    instructions: tuple[int, ...]  # per sample (QEMU only)
    sizes: dict[str, int] = field(default_factory=dict)  # QEMU: the bundle's + CMSIS-DSP's share of the image


def run_mode(fe: FrontEnd, c: Compiled, bundle: Path, mode: str, pcm: list[np.ndarray], work: Path,
             board: Board | None = None) -> Run:
    """Build the harness with the `mode` glue and run it on the int16 PCM samples (host when
    board is None, else QEMU)."""
    from emitter.verify.harness import OUTPUT_FILE, run_in_qemu, run_on_host

    where = work / f"{mode}-{board.name if board else 'host'}"
    glue = where / "glue"
    glue.mkdir(parents=True, exist_ok=True)
    (glue / "model_glue.h").write_text(glue_text(fe, c, mode))
    samples = [[np.ascontiguousarray(p, dtype=np.int16).view(np.int8)] for p in pcm]
    counts: tuple[int, ...] = ()
    image: dict[str, int] = {}
    if board is None:
        run_dir, res = run_on_host(bundle, glue, where, samples, werror=True, cmsis_nn=c.cmsis_path)
        if res.returncode != 0:
            raise VerifyError(f"front end ({mode}) on the host exited {res.returncode}: "
                              f"{(res.stdout + res.stderr).strip()[-500:]}")
    else:
        fw, qrun = run_in_qemu(bundle, glue, board, where, samples, cmsis_nn=c.cmsis_path)
        run_dir, counts = qrun.workdir, qrun.instructions
        image = {"flash": fw.model_flash, "ram": fw.model_ram, "stack": qrun.stack_bytes or 0}
    raw = (run_dir / OUTPUT_FILE).read_bytes()
    sizes = [int(s) for s in glue_text(fe, c, mode).split("glue_output_sizes[GLUE_NUM_OUTPUTS] = { ")[1]
             .split(" }")[0].split(", ")]
    per = sum(sizes)
    if len(raw) != per * len(pcm):
        raise VerifyError(f"front end ({mode}): output.bin has {len(raw)} bytes, expected {per * len(pcm)}")
    outs = []
    for k in range(len(pcm)):
        row, off = [], k * per
        for s in sizes:
            row.append(raw[off:off + s])
            off += s
        outs.append(row)
    return Run(outs, counts, image)


@dataclass
class Check:
    where: str
    clips: int
    raw_mismatch: int = 0  # features (of all clips) that differ from cmsisdsp
    raw_max_diff: float = 0.0
    input_mismatch: int = 0  # int8 model-input values that differ from the reference
    input_max_diff: int = 0  # f32 may round a value at a .5 boundary the other way: 1 quantum
    stream_mismatch: int = 0
    output_mismatch: int = 0  # network outputs that differ from the golden model
    instructions: dict[str, int] = field(default_factory=dict)  # median per mode (QEMU)
    device_rows: list[np.ndarray] = field(default_factory=list)  # per clip, int8 [frames, coeffs]
    sizes: dict[str, int] = field(default_factory=dict)  # `features` image (QEMU): flash, ram, stack

    f32: bool = False
    values: int = 0  # int8 model-input values compared (whole windows)

    @property
    def ok(self) -> bool:
        if self.f32:
            return (self.input_max_diff <= 1 and self.input_mismatch <= F32_INPUT_SHARE * self.values
                    and self.output_mismatch == 0)
        return self.input_mismatch == self.stream_mismatch == self.raw_mismatch == self.output_mismatch == 0


def check(fe: FrontEnd, c: Compiled, bundle: Path, clips: list[np.ndarray], work: Path,
          board: Board | None = None, modes: tuple[str, ...] = MODES, hops: int | None = None) -> Check:
    """Run `modes` on the clips (each one window of int16 PCM) and compare: raw features with
    cmsisdsp (bit for bit; f32 within F32_TOLERANCE), the model input with the reference
    quantization, the stream (the first clip's hops) with stream_features, the network's output
    with the golden model run on the device's features. f32: see F32_TOLERANCE."""
    from emitter.compiler import golden_run

    spec, q = fe.spec, fe.quant
    res = Check(board.name if board else "host", len(clips), f32=spec.arithmetic == "f32",
                values=len(clips) * fe.frames * fe.coeffs)
    refs = [features_raw(spec, p, fe.frames) for p in clips]
    inputs = [to_layout(spec, quantize_raw(spec, q, r)) for r in refs]
    for mode in modes:
        if mode == "push":
            stream = np.concatenate(clips)[: (hops or fe.frames + 2) * spec.frame_step]
            hop_pcm = list(stream.reshape(-1, spec.frame_step))
            run = run_mode(fe, c, bundle, mode, hop_pcm, work, board)
            want = stream_features(spec, stream, fe.frames, q.scale, q.zero_point)
            for o, w in zip(run.outputs, want, strict=True):
                got = np.frombuffer(o[0], np.int8).astype(np.int16)
                res.stream_mismatch += int(np.count_nonzero(got != w))
                res.input_max_diff = max(res.input_max_diff, int(np.abs(got - w).max()))
        else:
            run = run_mode(fe, c, bundle, mode, clips, work, board)
            for k, outs in enumerate(run.outputs):
                if mode == "raw":
                    got = np.frombuffer(outs[0], DTYPES[spec.arithmetic]).reshape(refs[k].shape)
                    diff = np.abs(got.astype(np.float64) - refs[k].astype(np.float64))
                    if spec.arithmetic == "f32":
                        diff = diff / np.maximum(1.0, np.abs(refs[k].astype(np.float64)))
                        res.raw_mismatch += int(np.count_nonzero(diff > F32_TOLERANCE))
                    else:
                        res.raw_mismatch += int(np.count_nonzero(diff))
                    res.raw_max_diff = max(res.raw_max_diff, float(diff.max()))
                    continue
                got_in = np.frombuffer(outs[0], np.int8)
                res.input_mismatch += int(np.count_nonzero(got_in != inputs[k]))
                res.input_max_diff = max(res.input_max_diff,
                                         int(np.abs(got_in.astype(np.int16) - inputs[k]).max()))
                if mode == "features":
                    res.device_rows.append(from_layout(spec, got_in, fe.frames))
                if mode == "window":
                    gold = golden_run(c, [got_in.reshape(c.input_shapes[0])])[0]
                    res.output_mismatch += int(np.count_nonzero(np.frombuffer(outs[1], np.int8) != gold.ravel()))
        if run.instructions:
            res.instructions[mode] = int(np.median(run.instructions))
        if mode == "features" and run.sizes:
            res.sizes = run.sizes
    return res
