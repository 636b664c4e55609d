"""The front end's part of the command line (emitter/cli.py calls these).

    mcugen features SPEC.toml AUDIO... -o feats.npz [--model INT8.onnx] [--frames N]
    mcugen emit|verify MODEL.onnx --frontend SPEC.toml [--audio clips.npz] [--features-ref feats.npz]

AUDIO: 16-bit mono .wav files at the spec's sample rate, or .npz files holding `pcm` (int16,
[clips, samples]) or `mulaw` (uint8 [clips, samples]) with `table` (int16 [256]: pcm = table[mulaw],
the keyword example's form), optionally `labels` and `rate` (read_npz). --audio's .npz clips must be
one window of the front end long. feats.npz holds `features` (float32 [clips, frames,
coeffs], the real values: raw / 2^7 for q15, raw / 2^23 for q31 (spectrogram: 2^14, 2^30), as is
for f32), `raw` (the
arithmetic's integers), `labels` when the inputs had them, and with --model `inputs` (int8, the
model input exactly as the device's <name>_features() writes it).
"""
from __future__ import annotations

import argparse
import wave
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from emitter.errors import UsageError, VerifyError

if TYPE_CHECKING:
    from emitter.boards import Board
    from emitter.compiler import Compiled
    from emitter.features.spec import FrontendSpec
    from emitter.render.frontend import FrontEnd


def add_features_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("features", prog="mcugen features",
                       help="compute front-end features of audio through cmsisdsp (training data)",
                       description="Compute the features of a front-end spec for audio clips through the "
                                   "cmsisdsp package: the same numbers the generated C computes on the device.")
    p.add_argument("spec", help="the front-end spec (TOML, see docs/frontend.md)")
    p.add_argument("audio", nargs="+", help="16-bit mono .wav files, or .npz files with `pcm` int16 [clips, "
                                            "samples], or `mulaw` uint8 [clips, samples] and `table` int16 [256]")
    p.add_argument("-o", "--output", required=True, metavar="FEATS.npz", help="where to write the features")
    p.add_argument("--frames", type=int, help="frames per clip (clips are cut or zero-padded to that window); "
                                              "default: the model input's, else as many as the shortest clip holds")
    p.add_argument("--model", help="INT8 ONNX model: also write `inputs`, the int8 model inputs")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    p.set_defaults(run=cmd_features)


def add_frontend_options(p: argparse.ArgumentParser, verify: bool) -> None:
    p.add_argument("--frontend", metavar="SPEC.toml",
                   help="compile this feature front end (docs/frontend.md) into the bundle")
    if verify:
        p.add_argument("--audio", metavar="CLIPS.npz",
                       help="with --frontend: clips to verify PCM -> features -> network with: an .npz "
                            "holding `pcm` int16 [clips, samples], or `mulaw` uint8 [clips, samples] with "
                            "`table` int16 [256] (the keyword example's heldout.npz), samples = one window "
                            "of the front end; or a 16-bit mono .wav (default: noise and tones)")
        p.add_argument("--features-ref", metavar="FEATS.npz",
                       help="with --frontend: the features you trained on (`features` [clips, frames, "
                            "coeffs], real values, same clips as --audio); report the device's mismatch "
                            "per coefficient in quanta")


NPZ_FORMS = ("`pcm` (int16 [clips, samples]), or `mulaw` (uint8 [clips, samples]) with `table` "
             "(int16 [256], the value of each code)")


def read_npz(path: Path, rate: int, samples: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """int16 clips [clips, samples] of an .npz file and its `labels` (or None). It holds `pcm`
    int16 [clips, samples], or mu-law `mulaw` uint8 [clips, samples] with `table` int16 [256]
    (the example's form, decoded exactly: pcm = table[mulaw]); optionally `labels` [clips] and
    `rate` (Hz). With `samples`, every clip must be that long (one window of the front end). Any
    other content is one UsageError naming the key and what is expected."""
    try:
        data = np.load(path)
    except (OSError, ValueError, EOFError) as exc:
        raise UsageError(f"cannot read '{path}' as an .npz file: {exc}") from None
    if not hasattr(data, "files"):
        raise UsageError(f"'{path}' holds one bare array, not named arrays: it must hold {NPZ_FORMS}")
    keys = data.files

    def arr(key: str) -> np.ndarray:
        try:
            return np.asarray(data[key])
        except (OSError, ValueError) as exc:  # e.g. an object array (allow_pickle is off)
            raise UsageError(f"'{path}': cannot read `{key}`: {exc}") from None

    def shape(a: np.ndarray) -> str:
        return f"{a.dtype} {list(a.shape)}"

    if "pcm" in keys and "mulaw" in keys:
        raise UsageError(f"'{path}' holds both `pcm` and `mulaw`: keep one of them ({NPZ_FORMS})")
    if "pcm" in keys:
        key, pcm = "pcm", arr("pcm")
        if pcm.dtype != np.int16 or pcm.ndim != 2:
            raise UsageError(f"'{path}': `pcm` must be int16 [clips, samples] (2-D, one row per clip), "
                             f"got {shape(pcm)}")
    elif "mulaw" in keys:
        key, codes = "mulaw", arr("mulaw")
        if codes.dtype != np.uint8 or codes.ndim != 2:
            raise UsageError(f"'{path}': `mulaw` must be uint8 [clips, samples] (2-D, one row per clip), "
                             f"got {shape(codes)}")
        if "table" not in keys:
            raise UsageError(f"'{path}': `mulaw` needs `table` (int16 [256], the PCM value of each code) "
                             f"beside it; keys: {keys}")
        table = arr("table")
        if table.dtype != np.int16 or table.shape != (256,):
            raise UsageError(f"'{path}': `table` must be int16 [256] (the PCM value of each mu-law code), "
                             f"got {shape(table)}")
        pcm = table[codes.astype(np.intp)]
    else:
        raise UsageError(f"'{path}' has no audio: it must hold {NPZ_FORMS}; keys: {keys}")
    if len(pcm) == 0:
        raise UsageError(f"'{path}': `{key}` holds no clips")
    if samples is not None and pcm.shape[1] != samples:
        raise UsageError(f"'{path}': `{key}` clips are {pcm.shape[1]} samples long; the front end takes "
                         f"windows of exactly {samples} samples ({samples / rate:g} s at {rate} Hz): "
                         f"cut or pad the clips to [clips, {samples}]")
    if "rate" in keys:
        r = arr("rate")
        if r.size != 1 or not np.issubdtype(r.dtype, np.number):
            raise UsageError(f"'{path}': `rate` must be one number (Hz), got {shape(r)}")
        if int(r.item()) != rate:
            raise UsageError(f"'{path}' is sampled at {int(r.item())} Hz (`rate`); the spec wants {rate} Hz")
    labels = None
    if "labels" in keys:
        labels = arr("labels")
        if labels.ndim == 0 or len(labels) != len(pcm):
            raise UsageError(f"'{path}': `labels` must hold one label per clip ([{len(pcm)}] for its "
                             f"{len(pcm)} clips), got {shape(labels)}")
    return pcm.astype(np.int16, copy=False), labels


def read_audio(paths: list[str], rate: int, samples: int | None = None) -> tuple[list[np.ndarray], np.ndarray | None]:
    """int16 clips from .wav / .npz files (read_npz), and the labels of .npz files that carry them.
    `samples`: the length every .npz clip must have (.wav files are cut or padded by the caller)."""
    clips: list[np.ndarray] = []
    labels: list[np.ndarray] = []
    for path in paths:
        p = Path(path)
        if p.suffix.lower() == ".npz":
            pcm, lab = read_npz(p, rate, samples)
            clips += list(pcm)
            if lab is not None:
                labels.append(lab)
            continue
        try:
            with wave.open(str(p), "rb") as w:
                if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != rate:
                    raise UsageError(f"'{p}' is {w.getnchannels()} channel(s), {8 * w.getsampwidth()}-bit, "
                                     f"{w.getframerate()} Hz; the front end takes 16-bit mono at {rate} Hz")
                clips.append(np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16))
        except (OSError, EOFError, wave.Error) as exc:
            raise UsageError(f"cannot read '{p}' as a .wav file: {exc}") from None
    lab = np.concatenate(labels) if labels and sum(len(x) for x in labels) == len(clips) else None
    return clips, lab


def fit(clip: np.ndarray, samples: int) -> np.ndarray:
    """A clip cut or zero-padded (at the end) to `samples`."""
    out = np.zeros(samples, dtype=np.int16)
    out[:min(samples, len(clip))] = clip[:samples]
    return out


def real_features(spec: FrontendSpec, raw: np.ndarray) -> np.ndarray:
    from emitter.features.tables import fraction_bits

    if spec.arithmetic == "f32":
        return raw.astype(np.float32)
    return (raw.astype(np.float64) / 2.0 ** fraction_bits(spec)).astype(np.float32)


def cmd_features(args: argparse.Namespace) -> int:
    from emitter.features.dsp import cmsisdsp
    from emitter.features.reference import features_raw, quantize_raw, to_layout
    from emitter.features.spec import load_spec

    spec = load_spec(args.spec)
    cmsisdsp()  # one clear message when the package is missing, before any work
    clips, labels = read_audio(args.audio, spec.sample_rate)
    if not clips:
        raise UsageError("no audio clips given")
    fe = None
    if args.model:
        from emitter.compiler import compile_model
        from emitter.render.frontend import bind

        fe = bind(spec, compile_model(args.model))
    frames = args.frames or (fe.frames if fe else None) or spec.frames
    if frames is None:
        shortest = min(len(c) for c in clips)
        if shortest < spec.frame_length:
            raise UsageError(f"the shortest clip has {shortest} samples, less than one frame ({spec.frame_length})")
        frames = 1 + (shortest - spec.frame_length) // spec.frame_step
    if fe is not None and frames != fe.frames:
        raise UsageError(f"--frames {frames}, but the model input holds {fe.frames} frames")
    raw = np.stack([features_raw(spec, fit(c, spec.window_samples(frames)), frames) for c in clips])
    out: dict[str, np.ndarray] = {"features": real_features(spec, raw), "raw": raw}
    if labels is not None:
        out["labels"] = labels
    if fe is not None:
        out["inputs"] = np.stack([to_layout(spec, quantize_raw(spec, fe.quant, r)) for r in raw])
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.output, **out)  # type: ignore[arg-type]
    print(f"wrote {args.output}: {len(clips)} clips x {frames} frames x {spec.coeffs} {spec.kind} "
          f"({spec.arithmetic}, via cmsisdsp)" + (f"; int8 model inputs for {fe.input_size} values" if fe else ""))
    return 0


def bind_frontend(args: argparse.Namespace, c: Compiled) -> FrontEnd | None:
    """The front end of --frontend bound to the model, and every input it will use checked now,
    before anything is written or built: the `cmsisdsp` package, CMSIS-DSP's sources (verify),
    the clips of --audio (args.audio_clips, one window each) and the shape of --features-ref."""
    if not getattr(args, "frontend", None):
        for flag in ("audio", "features_ref"):
            if getattr(args, flag, None):
                raise UsageError(f"--{flag.replace('_', '-')} goes with --frontend SPEC.toml (the front end "
                                 "whose features it checks)")
        return None
    from emitter.features.dsp import cmsisdsp
    from emitter.features.sources import cmsis_dsp_path
    from emitter.features.spec import load_spec
    from emitter.render.frontend import bind

    spec = load_spec(args.frontend)
    cmsisdsp()  # one clear message when the package is missing
    fe = bind(spec, c)
    clips = default_clips(fe)
    if getattr(args, "audio", None):
        got, _ = read_audio([args.audio], spec.sample_rate, fe.window_samples)
        if not got:
            raise UsageError(f"--audio '{args.audio}' holds no clips")
        clips = [fit(x, fe.window_samples) for x in got]  # .wav: cut or zero-padded to one window
    args.audio_clips = clips
    if getattr(args, "features_ref", None):
        read_features_ref(fe, args.features_ref, len(clips))
    if getattr(args, "verify", False):
        cmsis_dsp_path()  # fail early when CMSIS-DSP's sources are missing
    return fe


def check_budget(fe: FrontEnd, c: Compiled, weight_bytes: int, ram: int, flash: int, ram_src: str,
                 flash_src: str) -> None:
    """The RAM and flash budgets with the front end: the arena grows to its scratch, its state and
    tables come on top (CMSIS-DSP's code is not counted, as the kernels' code is not)."""
    from emitter.errors import BudgetError
    from emitter.report.budget import ram_needed

    arena = max(c.plan.arena_size, fe.scratch_bytes)
    need = ram_needed(c) - c.plan.arena_size + arena + fe.state_bytes
    problems = []
    if need > ram:
        problems.append(f"RAM: with the front end the bundle needs {need:,} bytes (arena {arena:,}, of which "
                        f"front-end scratch {fe.scratch_bytes:,}; front-end state {fe.state_bytes:,}) but the "
                        f"budget ({ram_src}) is {ram:,} bytes: use a shorter fft_length or a bigger board")
    if weight_bytes + fe.table_bytes > flash:
        problems.append(f"flash: weights {weight_bytes:,} + front-end tables {fe.table_bytes:,} bytes exceed the "
                        f"budget ({flash_src}) of {flash:,} bytes")
    if problems:
        raise BudgetError("the model and its front end do not fit:\n  " + "\n  ".join(problems)
                          + "\nNothing was written.")


def summary_line(fe: FrontEnd) -> str:
    s = fe.spec
    return (f"front end: {s.kind} {s.arithmetic}, {fe.frames} frames x {fe.coeffs} from "
            f"{fe.window_samples} samples (hop {s.frame_step}); scratch {fe.scratch_bytes} bytes in the "
            f"arena, static state {fe.state_bytes} bytes, tables {fe.table_bytes} bytes")


def default_clips(fe: FrontEnd, count: int = 8, seed: int = 0) -> list[np.ndarray]:
    """Noise at several levels and pure tones, one window each."""
    rng = np.random.default_rng(seed)
    n = fe.window_samples
    t = np.arange(n) / fe.spec.sample_rate
    clips = []
    for k in range(count):
        if k % 2:
            x = (8000 / (k + 1)) * np.sin(2 * np.pi * (100 + 450 * k) * t)
        else:
            x = rng.normal(0, 4000 / (k + 1), n)
        clips.append(np.clip(np.round(x), -32768, 32767).astype(np.int16))
    return clips


def verify_frontend(args: argparse.Namespace, fe: FrontEnd, c: Compiled, bundle: Path, board: Board) -> dict:
    """PCM -> features -> network on the host and in QEMU, compared with cmsisdsp and the golden;
    with --features-ref, the device's features against the user's. Returns the figures."""
    import tempfile

    from emitter.verify.frontend import F32_TOLERANCE, check

    clips = getattr(args, "audio_clips", None) or default_clips(fe)  # bind_frontend read --audio
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="mcugen-fe-") as tmp:
        targets: list[Board | None] = [None] + ([] if args.no_qemu or not board.qemu_machine else [board])
        ok, device = True, []
        for target in targets:
            r = check(fe, c, bundle, clips, Path(tmp), target)
            ok &= r.ok
            if fe.spec.arithmetic == "f32":
                diff = (f"max relative |diff| {r.raw_max_diff:.3g}, {r.raw_mismatch} of {r.values} beyond "
                        f"{F32_TOLERANCE:g}; int8 inputs at most {r.input_max_diff} quantum off")
            else:
                diff = "bit-exact" if r.raw_mismatch == 0 else f"{r.raw_mismatch} differ"
            print(f"front end on {r.where}: {r.clips} clips; raw features vs cmsisdsp: {diff}; model input "
                  f"mismatches {r.input_mismatch}; stream mismatches {r.stream_mismatch}; network outputs vs "
                  f"golden mismatches {r.output_mismatch}")
            if r.instructions:
                print(f"  instructions ({r.where}, median): whole window {r.instructions['features']:,}, "
                      f"per hop {r.instructions['push']:,}, features + network {r.instructions['window']:,}")
            if r.sizes:
                print(f"  front end alone ({r.where}, bundle + CMSIS-DSP objects): flash {r.sizes['flash']:,}, "
                      f"RAM {r.sizes['ram']:,} bytes (arena {fe.scratch_bytes:,} of it scratch), "
                      f"stack {r.sizes['stack']:,} bytes")
            figures[r.where] = {"clips": r.clips, "ok": r.ok, "instructions": r.instructions, "sizes": r.sizes}
            device = r.device_rows
        if args.features_ref:
            print(compare_reference(fe, args.features_ref, device))
    if not ok:
        raise VerifyError("verification failed: the front end's features or outputs differ (see above)")
    return figures


def read_features_ref(fe: FrontEnd, path: str, clips: int) -> np.ndarray:
    """`features` of --features-ref: float [clips, frames, coeffs], the clips of --audio in order."""
    try:
        data = np.load(path)
        ref = np.asarray(data["features"])
    except (OSError, ValueError, EOFError, KeyError, IndexError, TypeError) as exc:
        raise UsageError(f"cannot read `features` from --features-ref '{path}': {exc}") from None
    want = (clips, fe.frames, fe.coeffs)
    if ref.shape != want or not np.issubdtype(ref.dtype, np.number):
        raise UsageError(f"--features-ref '{path}': `features` is {ref.dtype} {list(ref.shape)}, expected real "
                         f"values {list(want)} (clips x frames x coefficients, the clips of --audio in order)")
    return ref.astype(np.float64)


def compare_reference(fe: FrontEnd, path: str, device: list[np.ndarray]) -> str:
    """The device's int8 features (per clip [frames, coeffs], from the last run: QEMU when it ran)
    vs the user's training features quantized to the model input's scale and zero point by the
    device's own rule (features.reference.quantize_real), per coefficient, in quanta."""
    from emitter.features.reference import quantize_real

    ref = read_features_ref(fe, path, len(device))
    user = quantize_real(fe.spec, fe.quant, ref).astype(np.int64)  # the device's rounding, not round(x/scale)
    dev = np.stack(device).astype(np.int64)
    d = np.abs(dev - user)
    lines = ["device features vs --features-ref, per coefficient (quanta of the model input):",
             "  coef  max|diff|  mean|diff|  differing"]
    for k in range(fe.coeffs):
        col = d[:, :, k]
        lines.append(f"  {k:4d}  {int(col.max()):9d}  {col.mean():10.3f}  {np.mean(col > 0):8.1%}")
    lines.append(f"  all   {int(d.max()):9d}  {d.mean():10.3f}  {np.mean(d > 0):8.1%}"
                 + ("  (identical)" if d.max() == 0 else "  <- the device computes other features than "
                    "you trained on" if d.max() > 1 else ""))
    return "\n".join(lines)
