"""The host reference of the front end: CMSIS-DSP's own C functions through the `cmsisdsp` package.

For each frame: frame_length samples from the PCM (int16), zero-padded to fft_length, converted
to the arithmetic (q15 as is, q31 = pcm << 16, f32 = pcm / 32768), then arm_mfcc_<arith> with the
tables of tables.py (mfcc, logmel), or for a spectrogram arm_mult_<arith> (window), arm_rfft_<arith>
(arm_rfft_fast_f32) and arm_cmplx_mag_<arith> over bins 0..fft_length/2 (f32: bins 1..N/2-1 from
the packed output, |DC| and |Nyquist| from its first two values). The raw outputs (mfcc/logmel:
q8.7 int16, q8.23 int32, float32; spectrogram: 2.14 int16, 2.30 int32, float32) are then quantized
to the model input's int8 scale and zero point:

    fixed point: q = sat8(requantize(raw, M, shift) + zp), M * 2^(shift-31) = 2^-frac / scale
                 (quant.py's TFLite multiplier and CMSIS-NN double rounding, as mcu_requantize)
    f32:         t = raw * inv_scale (float32, inv_scale = float32(1 / scale));
                 q = sat8((int)(t + (t >= 0 ? 0.5f : -0.5f)) + zp)

and laid into the model input in the spec's layout. The generated C does exactly these steps.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from emitter.errors import UsageError
from emitter.features.dsp import cmsisdsp
from emitter.features.spec import FrontendSpec
from emitter.features.tables import DTYPES, Tables, fraction_bits, make_tables
from emitter.quant import quantize_multiplier, requantize


@dataclass(frozen=True)
class FeatureQuant:
    """How raw features become the model input's int8: scale/zero point and the build-time
    constants (multiplier/shift for fixed point, the float32 reciprocal for f32)."""

    scale: float
    zero_point: int
    multiplier: int
    shift: int
    inv_scale: float  # float32 value; f32 arithmetic only


def feature_quant(spec: FrontendSpec, scale: float, zero_point: int) -> FeatureQuant:
    if not scale > 0:
        raise UsageError(f"the model input's scale {scale!r} must be > 0 to take features")
    if spec.arithmetic == "f32":
        return FeatureQuant(scale, zero_point, 0, 0, float(np.float32(1.0 / scale)))
    frac = fraction_bits(spec)
    mult, shift = quantize_multiplier(2.0 ** -frac / scale)
    if spec.arithmetic == "q31" and shift > 0:
        raise UsageError(f"{spec.source}: the model input's scale {scale:g} is finer than the q31 features' "
                         f"resolution (2^-{frac}): use arithmetic q15, or a model input scale >= 2^-{frac}")
    return FeatureQuant(scale, zero_point, mult, shift, 0.0)


@functools.lru_cache(maxsize=8)
def _instance(spec: FrontendSpec) -> tuple[Any, Tables]:
    dsp = cmsisdsp()

    t = make_tables(spec)
    a = spec.arithmetic
    if spec.kind == "spectrogram":
        if a == "f32":
            inst = dsp.arm_rfft_fast_instance_f32()
            status = dsp.arm_rfft_fast_init_f32(inst, spec.fft_length)
        else:
            inst = getattr(dsp, f"arm_rfft_instance_{a}")()
            status = getattr(dsp, f"arm_rfft_init_{a}")(inst, spec.fft_length, 0, 1)
        if status != 0:
            raise UsageError(f"{spec.source}: CMSIS-DSP's real FFT refused fft_length {spec.fft_length}")
        return inst, t
    inst = getattr(dsp, f"arm_mfcc_instance_{spec.arithmetic}")()
    status = getattr(dsp, f"arm_mfcc_init_{spec.arithmetic}")(
        inst, spec.fft_length, spec.n_mels, spec.coeffs, t.dct, t.filter_pos, t.filter_lengths,
        t.filter_coefs, t.window)
    if status != 0:
        raise UsageError(f"{spec.source}: CMSIS-DSP's arm_mfcc_init_{spec.arithmetic} refused "
                         f"fft_length {spec.fft_length} (status {status})")
    return inst, t


def tables_of(spec: FrontendSpec) -> Tables:
    return _instance(spec)[1]


def frame_input(spec: FrontendSpec, frame_pcm: np.ndarray) -> np.ndarray:
    """One frame's FFT input in the arithmetic: frame_length samples, zero-padded to fft_length."""
    x = np.zeros(spec.fft_length, dtype=np.int64)
    x[:spec.frame_length] = np.asarray(frame_pcm, dtype=np.int64)
    if spec.arithmetic == "q15":
        return x.astype(np.int16)
    if spec.arithmetic == "q31":
        return (x << 16).astype(np.int32)
    return x.astype(np.float32) * np.float32(1.0 / 32768.0)


def frame_features(spec: FrontendSpec, frame_pcm: np.ndarray) -> np.ndarray:
    """arm_mfcc_<arith> of one frame (frame_length int16 samples): raw features [coeffs]."""
    dsp = cmsisdsp()

    if len(frame_pcm) != spec.frame_length:
        raise UsageError(f"a frame has {spec.frame_length} samples, got {len(frame_pcm)}")
    inst, t = _instance(spec)
    dtype = DTYPES[spec.arithmetic]
    if spec.kind == "spectrogram":
        return _spectrum(spec, inst, t, frame_input(spec, frame_pcm)).astype(dtype)
    tmp = np.zeros(2 * spec.fft_length, dtype=np.float32 if spec.arithmetic == "f32" else np.int32)
    result = getattr(dsp, f"arm_mfcc_{spec.arithmetic}")(inst, frame_input(spec, frame_pcm), tmp)
    if spec.arithmetic == "f32":
        return np.asarray(result, dtype=dtype)
    status, out = result
    if status != 0:
        raise UsageError(f"arm_mfcc_{spec.arithmetic} returned status {status}")
    return np.asarray(out, dtype=dtype)


def _spectrum(spec: FrontendSpec, inst: Any, t: Tables, x: np.ndarray) -> np.ndarray:
    """Window, real FFT and magnitude of bins 0..N/2, as the generated C calls them."""
    dsp = cmsisdsp()

    a, n = spec.arithmetic, spec.fft_length
    w = getattr(dsp, f"arm_mult_{a}")(x, t.window)
    if a == "f32":
        packed = np.asarray(dsp.arm_rfft_fast_f32(inst, w, 0), dtype=np.float32)
        mag = np.empty(n // 2 + 1, dtype=np.float32)
        mag[1:n // 2] = dsp.arm_cmplx_mag_f32(packed[2:])
        mag[0], mag[n // 2] = np.abs(packed[0]), np.abs(packed[1])
        return mag
    spectrum = getattr(dsp, f"arm_rfft_{a}")(inst, w)
    return np.asarray(getattr(dsp, f"arm_cmplx_mag_{a}")(spectrum[:n + 2]))


def features_raw(spec: FrontendSpec, pcm: np.ndarray, frames: int) -> np.ndarray:
    """Raw features [frames, coeffs] of a whole window (spec.window_samples(frames) samples)."""
    need = spec.window_samples(frames)
    pcm = np.asarray(pcm)
    if pcm.dtype != np.int16 or pcm.ndim != 1 or len(pcm) != need:
        raise UsageError(f"a window of {frames} frames is {need} int16 samples; got "
                         f"{pcm.shape} {pcm.dtype}")
    return np.stack([frame_features(spec, pcm[t * spec.frame_step:t * spec.frame_step + spec.frame_length])
                     for t in range(frames)])


def quantize_raw(spec: FrontendSpec, q: FeatureQuant, raw: np.ndarray) -> np.ndarray:
    """Raw features -> int8, as the generated C does it (see the module docstring)."""
    if spec.arithmetic == "f32":
        t = np.asarray(raw, dtype=np.float32) * np.float32(q.inv_scale)
        t = np.clip(t, np.float32(-256.0), np.float32(255.0))  # as the C: saturate before the int conversion
        half = np.where(t >= 0, np.float32(0.5), np.float32(-0.5)).astype(np.float32)
        v = np.trunc((t + half).astype(np.float32)).astype(np.int64)
    else:
        v = requantize(np.asarray(raw, dtype=np.int64), q.multiplier, q.shift)
    return np.clip(v + q.zero_point, -128, 127).astype(np.int8)


def quantize_real(spec: FrontendSpec, q: FeatureQuant, real: np.ndarray) -> np.ndarray:
    """Real-valued features (e.g. `mcugen features`' `features`, or a user's training features) ->
    int8 by the device's own rule: onto the raw fixed-point grid (real * 2^frac, rounded to the
    nearest and saturated to the raw type; f32 features are raw already), then quantize_raw. The
    naive round(real / scale) + zp differs from the device's requantization (a 31-bit multiplier
    and double rounding) by one quantum on values near a rounding tie (2.7 % of the keyword
    example's coefficients), so --features-ref compares the features, not two rounding rules: fed
    `mcugen features`' own output it gives 0 differences."""
    if spec.arithmetic == "f32":
        return quantize_raw(spec, q, np.asarray(real, dtype=np.float32))
    info = np.iinfo(DTYPES[spec.arithmetic])
    raw = np.clip(np.round(np.asarray(real, dtype=np.float64) * 2.0 ** fraction_bits(spec)), info.min, info.max)
    return quantize_raw(spec, q, raw.astype(np.int64))


def to_layout(spec: FrontendSpec, rows: np.ndarray) -> np.ndarray:
    """int8 [frames, coeffs] -> the model input's flat order."""
    return (rows if spec.layout == "frames_coeffs" else rows.T).ravel()


def from_layout(spec: FrontendSpec, flat: np.ndarray, frames: int) -> np.ndarray:
    """The model input's flat order -> int8 [frames, coeffs]."""
    if spec.layout == "frames_coeffs":
        return np.asarray(flat).reshape(frames, spec.coeffs)
    return np.asarray(flat).reshape(spec.coeffs, frames).T


def compute_features(spec: FrontendSpec, pcm: np.ndarray, frames: int, scale: float,
                     zero_point: int) -> np.ndarray:
    """The model input (int8, flat, in the spec's layout) for one window of PCM: what the
    generated `<name>_features(pcm, input)` writes."""
    q = feature_quant(spec, scale, zero_point)
    return to_layout(spec, quantize_raw(spec, q, features_raw(spec, pcm, frames)))


def stream_features(spec: FrontendSpec, pcm: np.ndarray, frames: int, scale: float,
                    zero_point: int) -> list[np.ndarray]:
    """The model input after each hop of a stream: what `<name>_features_push(hop, input)` leaves
    after each hop, starting from a zeroed history and an input of zero points. `pcm` is a whole
    number of hops."""
    q = feature_quant(spec, scale, zero_point)
    step, hist = spec.frame_step, spec.frame_length - spec.frame_step
    if len(pcm) % step:
        raise UsageError(f"a stream is a whole number of hops of {step} samples; got {len(pcm)}")
    padded = np.concatenate([np.zeros(hist, dtype=np.int16), np.asarray(pcm, dtype=np.int16)])
    rows = np.full((frames, spec.coeffs), zero_point, dtype=np.int8)
    out = []
    for h in range(len(pcm) // step):
        frame = padded[h * step:h * step + spec.frame_length]
        rows = np.concatenate([rows[1:], quantize_raw(spec, q, frame_features(spec, frame))[None, :]])
        out.append(to_layout(spec, rows))
    return out
