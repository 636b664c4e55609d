"""The feature front end on the host: spec checks, tables shared by reference and C, generated C
(gcc, strict warnings) bit-exact with cmsisdsp over >= 100 clips, streaming, the CLI."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emitter.cli import main
from emitter.compiler import compile_model
from emitter.errors import UsageError
from emitter.features import compute_features, parse_spec, stream_features
from emitter.features.reference import features_raw, tables_of
from emitter.features.sources import SOURCES, cmsis_dsp_path, sources_for
from emitter.render.bundle import render_bundle
from emitter.render.frontend import bind
from emitter.target import missing_tools
from emitter.verify.frontend import check
from tests.features_cases import KWS_MODEL, KWS_SPEC, all_clips, kws_spec, spectrogram_case, tiny_model

pytest.importorskip("cmsisdsp", reason="the front end's reference is the cmsisdsp package (scripts/setup.sh)")
DSP = cmsis_dsp_path(required=False)
HOST = missing_tools(("gcc", "scons"))
needs_host = pytest.mark.skipif(bool(HOST) or DSP is None,
                                reason="needs gcc, scons and CMSIS-DSP's sources (python -m "
                                       "emitter.features.sources fetch)")

BASE = {"kind": "mfcc", "sample_rate": 16000, "frame_length": 400, "frame_step": 160, "fft_length": 512,
        "n_mels": 32, "n_mfcc": 10, "arithmetic": "q15"}


@pytest.mark.parametrize("change, message", [
    ({"kind": "stft"}, "'kind' = 'stft': expected one of mfcc, logmel"),
    ({"fft_length": 500}, "'fft_length' = 500: expected a power of two"),
    ({"frame_length": 1024}, "'frame_length' = 1024: expected an integer in [16, 512]"),
    ({"frame_step": 0}, "'frame_step' = 0"),
    ({"arithmetic": "q7"}, "'arithmetic' = 'q7': expected one of q15, q31, f32"),
    ({"window": "kaiser"}, "'window' = 'kaiser'"),
    ({"f_max": 9000.0}, "'f_max' = 9000.0: expected a number in"),
    ({"n_mfcc": 40}, "'n_mfcc' = 40: expected an integer in [1, 32]"),
    ({"hop": 3}, "unknown key(s) hop"),
    ({"kind": "logmel"}, "'n_mfcc' is for kind 'mfcc'"),
    ({"n_mels": 120}, "too narrow for fft_length 512"),
    ({"kind": "spectrogram"}, "n_mels, n_mfcc are for mfcc and logmel; a spectrogram gives fft_length / 2 + 1 = 257"),
])
def test_spec_errors_name_the_key(change, message):
    with pytest.raises(UsageError) as err:
        tables_of(parse_spec(BASE | change, "s.toml"))
    assert message in str(err.value)
    assert str(err.value).startswith("s.toml: ")


def test_spec_missing_key_cli_exit_2(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text("[frontend]\nkind = 'mfcc'\nsample_rate = 16000\n")
    assert main(["features", str(spec), str(tmp_path / "x.wav"), "-o", str(tmp_path / "f.npz")]) == 2
    assert "missing key(s) frame_length, frame_step, fft_length, arithmetic" in capsys.readouterr().err
    assert not (tmp_path / "f.npz").exists()


def test_model_input_must_hold_whole_frames():
    c = compile_model(KWS_MODEL)
    with pytest.raises(UsageError, match=r"holds 490 values, not a whole number of frames of 24 logmel"):
        bind(kws_spec(kind="logmel", n_mfcc=24), c)
    with pytest.raises(UsageError, match="frames = 50, but input 'mfcc'"):
        bind(kws_spec(frames=50), c)


def test_stream_equals_whole_window():
    spec = kws_spec()
    pcm = all_clips(spec.window_samples(49), 8000)[3]
    want = compute_features(spec, pcm, 49, 0.05, -3)
    got = stream_features(spec, pcm, 49, 0.05, -3)  # 50 hops: 128 zeros of history, then the window
    assert len(got) == 50 and np.array_equal(got[-1], want)


def test_logmel_is_mfcc_pipeline_with_identity():
    s = parse_spec({k: v for k, v in BASE.items() if k != "n_mfcc"} | {"kind": "logmel", "arithmetic": "f32"})
    t = tables_of(s)
    assert t.dct.reshape(32, 32).tolist() == np.eye(32, dtype=np.float32).tolist()


@needs_host
def test_tables_in_c_are_the_reference_tables_and_render_is_deterministic():
    c = compile_model(KWS_MODEL, name="kws")
    fe = bind(kws_spec(), c)
    files = render_bundle(c, "", "host", fe)
    assert files == render_bundle(c, "", "host", fe)
    text = files["kws_frontend.c"].decode()
    t = tables_of(fe.spec)
    for name, arr in (("window", t.window), ("filter_coefs", t.filter_coefs), ("dct", t.dct),
                      ("filter_pos", t.filter_pos), ("filter_lengths", t.filter_lengths)):
        body = re.search(rf"kws_fe_{name}\[\d+\][^=]*= {{(.*?)}};", text, re.S)
        assert body is not None, name
        values = [int(v.replace("(-2147483647 - 1)", "-2147483648")) for v in
                  re.findall(r"\(-2147483647 - 1\)|-?\d+", body.group(1))]
        assert values == arr.astype(np.int64).tolist(), name
    assert files["cmsis_dsp_sources.txt"].decode().split() == list(SOURCES["q15"])
    header = files["kws.h"].decode()
    arena = int(re.search(r"#define KWS_ARENA_SIZE (\d+)", header).group(1))
    assert arena >= fe.scratch_bytes


def _clips(spec):
    return all_clips(spec.window_samples(49), spec.sample_rate)


@needs_host
@pytest.mark.parametrize("arith", ["q15", "q31", "f32"])
def test_host_bit_exact_over_100_clips(arith, tmp_path):
    c = compile_model(KWS_MODEL, name="kws")
    fe = bind(kws_spec(arithmetic=arith), c)
    bundle = tmp_path / "b"
    from emitter.render.write import write_bundle

    write_bundle(render_bundle(c, "", "host", fe), bundle)
    clips = _clips(fe.spec)
    assert len(clips) >= 100
    r = check(fe, c, bundle, clips, tmp_path / "w", modes=("raw", "features", "push"))
    assert r.ok, r
    if arith == "f32":  # the documented tolerance: the int8 input at most 1 quantum off, rarely
        assert r.input_max_diff <= 1 and r.input_mismatch <= 0.02 * r.values
    else:
        assert r.raw_mismatch == 0 and r.raw_max_diff == 0 and r.input_mismatch == 0 and r.stream_mismatch == 0
    w = check(fe, c, bundle, clips[:8], tmp_path / "w", modes=("window",))
    assert w.ok and w.output_mismatch == 0


@needs_host
def test_logmel_coeffs_frames_layout_host(tmp_path):
    spec = parse_spec({k: v for k, v in BASE.items() if k != "n_mfcc"}
                      | {"kind": "logmel", "n_mels": 16, "layout": "coeffs_frames", "arithmetic": "q31",
                         "frame_step": 200})
    frames = 6
    rng = np.random.default_rng(4)
    pcm = [rng.normal(0, 10 ** rng.uniform(1, 4), spec.window_samples(frames)).astype(np.int16) for _ in range(12)]
    real = np.stack([features_raw(spec, p, frames).T.ravel() / 2.0 ** 23 for p in pcm])
    model = tiny_model(tmp_path / "logmel.onnx", frames, 16, real)
    c = compile_model(model, name="lm")
    fe = bind(spec, c)
    assert fe.frames == frames
    from emitter.render.write import write_bundle

    write_bundle(render_bundle(c, "", "host", fe), tmp_path / "b")
    r = check(fe, c, tmp_path / "b", pcm, tmp_path / "w")
    assert r.ok and r.input_mismatch == 0 and r.stream_mismatch == 0 and r.output_mismatch == 0, r


@needs_host
@pytest.mark.parametrize("arith", ["q15", "q31", "f32"])
def test_spectrogram_host_over_100_clips(arith, tmp_path):
    fe, c, bundle, clips = spectrogram_case(tmp_path, arith)
    assert fe.coeffs == 129 and len(clips) >= 100
    assert bundle.joinpath("cmsis_dsp_sources.txt").read_text().split() == list(sources_for("spectrogram", arith))
    r = check(fe, c, bundle, clips, tmp_path / "w")
    assert r.ok, (r.raw_mismatch, r.raw_max_diff, r.input_max_diff, r.stream_mismatch, r.output_mismatch)
    if arith != "f32":
        assert r.raw_mismatch == r.input_mismatch == r.stream_mismatch == r.output_mismatch == 0


@needs_host
def test_cli_features_then_verify_with_reference(tmp_path, capsys):
    spec = kws_spec()
    clips = np.stack(_clips(spec)[:6])
    audio = tmp_path / "clips.npz"
    np.savez(audio, pcm=clips, labels=np.arange(6))
    feats = tmp_path / "feats.npz"
    assert main(["features", str(KWS_SPEC), str(audio), "-o", str(feats), "--model", str(KWS_MODEL)]) == 0
    data = np.load(feats)
    assert data["features"].shape == (6, 49, 10) and data["labels"].tolist() == list(range(6))
    assert np.array_equal(data["features"], data["raw"] / np.float32(128))
    c = compile_model(KWS_MODEL)
    q = c.graph.t(c.graph.inputs[0]).quant
    assert np.array_equal(data["inputs"][2], compute_features(spec, clips[2], 49, q.s, q.zp))
    capsys.readouterr()
    out = tmp_path / "bundle"
    status = main(["verify", str(KWS_MODEL), "--board", "cortex-m4", "--no-qemu", "-o", str(out), "--quiet",
                   "--samples", "2", "--frontend", str(KWS_SPEC), "--audio", str(audio), "--features-ref", str(feats)])
    text = capsys.readouterr().out
    assert status == 0, text
    assert "front end on host: 6 clips; raw features vs cmsisdsp: bit-exact; model input mismatches 0" in text
    assert "device features vs --features-ref, per coefficient" in text
    assert "front end: mfcc q15, 49 frames x 10 from 6400 samples (hop 128)" in text


@needs_host
def test_cli_features_ref_reports_a_preprocessing_mismatch(tmp_path, capsys):
    clips = np.stack(_clips(kws_spec())[:4])
    audio = tmp_path / "clips.npz"
    np.savez(audio, pcm=clips)
    wrong = np.stack([features_raw(kws_spec(window="hamming"), x, 49) for x in clips]) / 128.0
    np.savez(tmp_path / "wrong.npz", features=wrong.astype(np.float32))
    assert main(["verify", str(KWS_MODEL), "--no-qemu", "-o", str(tmp_path / "b"), "--quiet", "--samples", "1",
                 "--frontend", str(KWS_SPEC), "--audio", str(audio),
                 "--features-ref", str(tmp_path / "wrong.npz")]) == 0
    assert "the device computes other features than you trained on" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("make") is None or bool(HOST) or DSP is None, reason="needs make, gcc, CMSIS-DSP")
def test_bundle_makefile_builds_front_end_with_strict_flags(tmp_path):
    from emitter.render.write import write_bundle

    c = compile_model(KWS_MODEL, name="kws")
    write_bundle(render_bundle(c, "", "host", bind(kws_spec(), c)), tmp_path / "b")
    strict = "-std=c99 -Wall -Wextra -Wshadow -Wconversion -Wstrict-prototypes -Wmissing-prototypes -Werror"
    res = subprocess.run(["make", "-s", f"CMSIS_DSP_PATH={DSP}", f"WARN_FLAGS={strict}"], cwd=tmp_path / "b",
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    objs = {p.name for p in Path(tmp_path / "b" / "build").rglob("*.o") if "cmsis_dsp" in p.parts}
    assert objs == {Path(s).with_suffix(".o").name for s in SOURCES["q15"]}


def test_budget_counts_the_front_end(tmp_path, capsys):
    out = tmp_path / "b"
    assert main([str(KWS_MODEL), "--frontend", str(KWS_SPEC), "--ram-budget", "3300", "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "the model and its front end do not fit" in err and "front-end state" in err
    assert not out.exists()


CMAKE_MAIN = """#include <stdio.h>
#include "kws.h"
#include "kws_frontend.h"
static int16_t pcm[KWS_FE_WINDOW_SAMPLES];
static int8_t input[KWS_FE_FRAMES * KWS_FE_COEFFS];
int main(void)
{
    if (fread(pcm, sizeof pcm, 1, stdin) != 1 || kws_features(pcm, input) != 0) {
        return 1;
    }
    fwrite(input, sizeof input, 1, stdout);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("cmake") is None or bool(HOST) or DSP is None, reason="needs cmake, gcc, CMSIS-DSP")
def test_bundle_cmake_builds_front_end(tmp_path):
    from emitter.render.write import write_bundle

    c = compile_model(KWS_MODEL, name="kws")
    fe = bind(kws_spec(), c)
    write_bundle(render_bundle(c, "", "host", fe), tmp_path / "kws")
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(app C)\n"
                                        "add_subdirectory(../kws kws)\nadd_executable(app main.c)\n"
                                        "target_link_libraries(app PRIVATE kws m)\n")
    (app / "main.c").write_text(CMAKE_MAIN)
    build = app / "build"
    for cmd in (["cmake", "-S", str(app), "-B", str(build), f"-DCMSIS_DSP_PATH={DSP}"],
                ["cmake", "--build", str(build)]):
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stdout + res.stderr
    pcm = _clips(fe.spec)[5]
    res = subprocess.run([str(build / "app")], input=pcm.tobytes(), capture_output=True, check=False)
    assert res.returncode == 0
    q = fe.quant
    assert np.array_equal(np.frombuffer(res.stdout, np.int8), compute_features(fe.spec, pcm, 49, q.scale, q.zero_point))


def test_cli_features_reads_wav_and_checks_its_format(tmp_path, capsys):
    import wave

    pcm = all_clips(6400, 8000)[40]

    def write(path: Path, rate: int) -> Path:
        with wave.open(str(path), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(pcm.astype("<i2").tobytes())
        return path

    out = tmp_path / "f.npz"
    assert main(["features", str(KWS_SPEC), str(write(tmp_path / "a.wav", 8000)), "-o", str(out)]) == 0
    data = np.load(out)
    assert np.array_equal(data["raw"][0], features_raw(kws_spec(), pcm, 49))
    assert main(["features", str(KWS_SPEC), str(write(tmp_path / "b.wav", 16000)), "-o", str(tmp_path / "g.npz")]) == 2
    assert "b.wav' is 1 channel(s), 16-bit, 16000 Hz; the front end takes 16-bit mono at 8000 Hz" in \
        capsys.readouterr().err
