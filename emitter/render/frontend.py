"""A bundle's front end: the FrontEnd a spec and a compiled model make, and its C files.

The scratch (frame, FFT/mel buffer, raw features) lives in the model's arena from offset 0: the
front end runs before the network, whose input is the caller's buffer, so the network's arena is
free then; the bundle's arena is max(network plan, front-end scratch). The streaming history and
CMSIS-DSP's instance struct are static state outside the arena (they outlive a call); both
figures are in the front end's header, the bundle summary and report.json.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from emitter.errors import UsageError
from emitter.features.reference import FeatureQuant, feature_quant, tables_of
from emitter.features.sources import VERSION, sources_for
from emitter.features.spec import FrontendSpec
from emitter.render.cfmt import C_TYPES, c_comment

if TYPE_CHECKING:
    from emitter.compiler import Compiled

ELEM = {"q15": ("q15_t", 2), "q31": ("q31_t", 4), "f32": ("float32_t", 4)}
TMP = {"q15": "q31_t", "q31": "q31_t", "f32": "float32_t"}
RAW_TEXT = {"q15": "int16 in q8.7 (value = raw / 2^7)", "q31": "int32 in q8.23 (value = raw / 2^23)",
            "f32": "float", "spectrogram q15": "int16 in 2.14 (value = raw / 2^14)",
            "spectrogram q31": "int32 in 2.30 (value = raw / 2^30)", "spectrogram f32": "float"}
CONVERT = {"q15": "(q15_t){src}", "q31": "(q31_t)(int32_t)((uint32_t)(int32_t){src} << 16)",
           "f32": "(float32_t){src} * 3.0517578125e-05f"}
CONVERT_TEXT = {"q15": "q15 as is", "q31": "q31 = pcm << 16", "f32": "f32 = pcm / 32768"}
# CMSIS-DSP's arm_mfcc_instance_* sizes on a 32-bit target (pointers and the FFT instances);
# an upper bound, used for the state figure only.
INSTANCE_BYTES = {"q15": 64, "q31": 64, "f32": 96}


def _align(n: int, to: int = 16) -> int:
    return (n + to - 1) // to * to


@dataclass(frozen=True)
class FrontEnd:
    """A spec bound to a compiled model: frames, quantization and memory figures."""

    spec: FrontendSpec
    frames: int
    input_size: int
    quant: FeatureQuant

    @property
    def coeffs(self) -> int:
        return self.spec.coeffs

    @property
    def window_samples(self) -> int:
        return self.spec.window_samples(self.frames)

    def offsets(self) -> dict[str, int]:
        elem = ELEM[self.spec.arithmetic][1]
        frame = self.spec.fft_length * elem
        tmp = 2 * self.spec.fft_length * 4
        raw = self.coeffs * elem
        tmp_off = _align(frame)
        raw_off = _align(tmp_off + tmp)
        return {"frame_off": 0, "frame_bytes": frame, "tmp_off": tmp_off, "tmp_bytes": tmp,
                "raw_off": raw_off, "raw_bytes": raw, "scratch_bytes": raw_off + raw}

    @property
    def scratch_bytes(self) -> int:
        return self.offsets()["scratch_bytes"]

    @property
    def history(self) -> int:
        return self.spec.frame_length - self.spec.frame_step

    @property
    def state_bytes(self) -> int:
        return 2 * max(self.history, 1) + INSTANCE_BYTES[self.spec.arithmetic] + 4

    @property
    def table_bytes(self) -> int:
        return tables_of(self.spec).nbytes

    def figures(self) -> dict[str, Any]:
        s = self.spec
        return {"kind": s.kind, "arithmetic": s.arithmetic, "frames": self.frames, "coeffs": self.coeffs,
                "window_samples": self.window_samples, "frame_step": s.frame_step,
                "scratch_bytes_in_arena": self.scratch_bytes, "state_bytes": self.state_bytes,
                "table_bytes": self.table_bytes, "cmsis_dsp": VERSION,
                "cmsis_dsp_sources": list(sources_for(s.kind, s.arithmetic))}


def bind(spec: FrontendSpec, c: Compiled) -> FrontEnd:
    """Check the spec against the model's input and fix frames and quantization."""
    g = c.graph
    if len(g.inputs) != 1:
        raise UsageError(f"a front end feeds a model with one input; {c.model.path.name} has {len(g.inputs)}")
    t = g.t(g.inputs[0])
    name = g.boundaries[g.inputs[0]].onnx_name
    if t.quant is None or t.dtype != "int8":
        raise UsageError(f"input '{name}' is {t.dtype}, not quantized int8: a front end writes int8 features")
    if t.size % spec.coeffs:
        raise UsageError(f"{spec.source}: input '{name}' {list(t.shape)} holds {t.size} values, not a whole "
                         f"number of frames of {spec.coeffs} {spec.kind} values: check n_mfcc / n_mels")
    frames = t.size // spec.coeffs
    if spec.frames is not None and spec.frames != frames:
        raise UsageError(f"{spec.source}: frames = {spec.frames}, but input '{name}' {list(t.shape)} holds "
                         f"{frames} frames of {spec.coeffs} values")
    return FrontEnd(spec, frames, t.size, feature_quant(spec, t.quant.s, t.quant.zp))


def _table(prefix: str, suffix: str, values: np.ndarray, what: str) -> dict[str, Any]:
    return {"ctype": C_TYPES[str(values.dtype)], "ident": f"{prefix}_fe_{suffix}", "count": int(values.size),
            "data": values, "comment": what}


def context(fe: FrontEnd, prefix: str) -> dict[str, Any]:
    s, q = fe.spec, fe.quant
    t = tables_of(s)
    arith = s.arithmetic
    what = (f"{s.kind}, {fe.coeffs} values per frame ({s.n_mels} mel bands {s.f_min:g}-{s.f_max:g} Hz), "
            f"{arith}" if s.kind != "spectrogram" else
            f"spectrogram, {fe.coeffs} magnitudes per frame (bins 0..{s.fft_length // 2}), {arith}")
    if arith == "f32":
        quant_text = f"q = sat8(round_half_away(raw * {q.inv_scale!r}) + {q.zero_point})"
    else:
        quant_text = f"q = sat8(mcu_requantize(raw, {q.multiplier}, {q.shift}) + {q.zero_point})"
    tables = [
        _table(prefix, "window", t.window, f"{s.window} window, {s.frame_length} samples, zero to {s.fft_length}"),
    ] + ([] if s.kind == "spectrogram" else [
        _table(prefix, "filter_pos", t.filter_pos, f"first FFT bin of each of the {s.n_mels} mel filters"),
        _table(prefix, "filter_lengths", t.filter_lengths, "FFT bins per mel filter"),
        _table(prefix, "filter_coefs", t.filter_coefs, "mel filter weights, packed"),
        _table(prefix, "dct", t.dct, f"DCT-II {s.n_mfcc} x {s.n_mels}" if s.kind == "mfcc"
               else f"identity {s.n_mels} x {s.n_mels} (logmel: no DCT)"),
    ])
    return {
        "what": c_comment(what), "source": c_comment(s.source), "dsp_version": VERSION, "arith": arith,
        "sample_rate": s.sample_rate, "frame_length": s.frame_length, "frame_step": s.frame_step,
        "fft_length": s.fft_length, "padded": s.frame_length < s.fft_length, "frames": fe.frames,
        "coeffs": fe.coeffs, "n_mels": s.n_mels,
        "window": s.window, "window_samples": fe.window_samples, "input_size": fe.input_size,
        "layout": s.layout, "layout_text": "frame t, value c at t * COEFFS + c" if s.layout == "frames_coeffs"
        else "value c, frame t at c * FRAMES + t",
        "scale_text": f"{q.scale!r}", "zero_point": q.zero_point, "multiplier": q.multiplier, "shift": q.shift,
        "inv_scale": q.inv_scale, "quant_text": c_comment(quant_text),
        "raw_text": RAW_TEXT[f"spectrogram {arith}" if s.kind == "spectrogram" else arith],
        "raw_ctype": ELEM[arith][0].replace("float32_t", "float").replace("q15_t", "int16_t")
        .replace("q31_t", "int32_t"),
        "elem_ctype": ELEM[arith][0], "tmp_ctype": TMP[arith], "convert_text": CONVERT_TEXT[arith],
        "convert_head": CONVERT[arith].format(src="head[i]"),
        "convert_tail": CONVERT[arith].format(src="tail[i - n_head]"),
        "dct_text": f"DCT to {s.n_mfcc} coefficients" if s.kind == "mfcc" else "identity (no DCT)",
        "pipeline": (f"arm_mult_{arith} ({s.window} window), arm_rfft{'_fast' if arith == 'f32' else ''}_{arith}, "
                     f"arm_cmplx_mag_{arith} of bins 0..{s.fft_length // 2}") if s.kind == "spectrogram" else
        (f"arm_mfcc_{arith}: absmax normalisation, {s.window} window, real FFT, magnitude, {s.n_mels} mel "
         "filters, log, " + (f"DCT to {s.n_mfcc} coefficients" if s.kind == "mfcc" else "identity (no DCT)")),
        "history": fe.history, "history_len": max(fe.history, 1),
        "history_src": fe.window_samples - fe.history, "history_keep": fe.history - s.frame_step,
        "hop_skip": s.frame_step - fe.history, "last_frame": fe.frames - 1,
        "shift_bytes": (fe.frames - 1) * fe.coeffs, "tables": tables, "table_bytes": t.nbytes,
        "scratch_bytes": fe.scratch_bytes, "state_bytes": fe.state_bytes, **fe.offsets(),
        "sources": sources_for(s.kind, arith), "kind": s.kind,
        "rfft_type": "arm_rfft_fast_instance_f32" if arith == "f32" else f"arm_rfft_instance_{arith}",
        "bins": s.fft_length // 2 + 1, "inner_bins": s.fft_length // 2 - 1, "nyquist": s.fft_length // 2,
    }


def render_frontend(fe: FrontEnd, prefix: str, base_ctx: dict[str, Any]) -> dict[str, str]:
    """The front end's files of a bundle (relative path -> text)."""
    from emitter.render.cfmt import environment

    ctx = base_ctx | {"fe": context(fe, prefix)}
    env = environment()
    return {
        f"{prefix}_frontend.h": env.get_template("frontend.h.j2").render(ctx),
        f"{prefix}_frontend.c": env.get_template("frontend.c.j2").render(ctx),
        "cmsis_dsp_sources.txt": "".join(f"{src}\n" for src in sources_for(fe.spec.kind, fe.spec.arithmetic)),
    }
