"""Shared inputs of the front-end tests: the keyword example's model and spec, a tiny logmel model,
and >= 100 PCM clips (the example's held-out speech, noise at many levels, tones and chirps)."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

from emitter.features import FrontendSpec, load_spec

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "keyword_audio"
KWS_MODEL = EXAMPLE / "keyword_int8.onnx"
KWS_SPEC = EXAMPLE / "frontend.toml"


def kws_spec(**changes: object) -> FrontendSpec:
    return dataclasses.replace(load_spec(KWS_SPEC), **changes)  # type: ignore[arg-type]


def speech_clips() -> list[np.ndarray]:
    sys.path.insert(0, str(EXAMPLE))
    from keyword_data import decode_mulaw  # type: ignore[import-not-found]

    data = np.load(EXAMPLE / "heldout.npz")
    return list(decode_mulaw(data["mulaw"], data["table"]))


def synthetic_clips(samples: int, rate: int, count: int, seed: int = 7) -> list[np.ndarray]:
    """Noise from silence to clipping, tones and chirps across the band, square waves."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / rate
    clips = [np.zeros(samples, np.int16), np.full(samples, 32767, np.int16), np.full(samples, -32768, np.int16)]
    while len(clips) < count:
        kind = len(clips) % 4
        level = 10 ** rng.uniform(0, 4.6)
        if kind == 0:
            x = rng.normal(0, level, samples)
        elif kind == 1:
            x = level * np.sin(2 * np.pi * rng.uniform(20, rate / 2) * t + rng.uniform(0, 6))
        elif kind == 2:
            f0, f1 = rng.uniform(20, rate / 2, 2)
            x = level * np.sin(2 * np.pi * (f0 + (f1 - f0) * t / t[-1] / 2) * t)
        else:
            x = level * np.sign(np.sin(2 * np.pi * rng.uniform(50, 1000) * t))
        clips.append(np.clip(np.round(x), -32768, 32767).astype(np.int16))
    return clips


def all_clips(samples: int, rate: int) -> list[np.ndarray]:
    """>= 100 clips of `samples`: speech (cut or zero-padded) then synthetic ones."""
    speech = [np.resize(np.concatenate([c, np.zeros(max(0, samples - len(c)), np.int16)]), samples)
              for c in speech_clips()]
    return speech + synthetic_clips(samples, rate, 100 - len(speech) + 6)


def tiny_model(path: Path, frames: int, coeffs: int, real: np.ndarray) -> Path:
    """A float Reshape -> Gemm(4) model on [1, frames * coeffs] features, quantized by mcugen's
    quantize_for_mcugen with `real` ([N, frames * coeffs] feature values) as calibration."""
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper as H
    from onnx import numpy_helper as NH

    from emitter.commands.quantize import quantize_for_mcugen

    n = frames * coeffs
    w = np.random.default_rng(2).normal(0, 0.05, (n, 4)).astype(np.float32)
    g = H.make_graph([H.make_node("Gemm", ["x", "w", "b"], ["y"])], "tiny",
                     [H.make_tensor_value_info("x", TP.FLOAT, [1, n])],
                     [H.make_tensor_value_info("y", TP.FLOAT, [1, 4])],
                     [NH.from_array(w, "w"), NH.from_array(np.zeros(4, np.float32), "b")])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return quantize_for_mcugen(m, {"x": real.reshape(-1, 1, n).astype(np.float32)}, path)


SPECTROGRAM = {"kind": "spectrogram", "sample_rate": 8000, "frame_length": 200, "frame_step": 100,
               "fft_length": 256, "layout": "coeffs_frames"}


def spectrogram_case(tmp_path: Path, arith: str, board_name: str | None = None) -> tuple:
    """(FrontEnd, Compiled, bundle, clips): a tiny model on 8 frames x 129 magnitudes."""
    from emitter.boards import load_board
    from emitter.commands.frontend import real_features
    from emitter.compiler import compile_model
    from emitter.features import features_raw, parse_spec
    from emitter.render.bundle import render_bundle
    from emitter.render.frontend import bind
    from emitter.render.write import write_bundle

    spec = parse_spec(SPECTROGRAM | {"arithmetic": arith})
    clips = all_clips(spec.window_samples(8), 8000)
    real = np.stack([real_features(spec, features_raw(spec, c, 8)).T.ravel() for c in clips[30:50]])
    c = compile_model(tiny_model(tmp_path / "sp.onnx", 8, 129, real), name="sp")
    fe = bind(spec, c)
    board = load_board(board_name) if board_name else None
    write_bundle(render_bundle(c, " ".join(board.cflags) if board else "", board_name or "host", fe), tmp_path / "b")
    return fe, c, tmp_path / "b", clips
