"""What the front end's commands take in (issue 22): `--audio` reads `pcm` int16 or the keyword
example's `mulaw` + `table` (decoded with the table), and every wrong array is one exit-2 message
naming the key and what is expected, given before anything is written or built; without the
`cmsisdsp` package, `mcugen features` and `--frontend` are one exit-2 message saying how to
install it, never a traceback. (The example's own command, end to end in QEMU, is
test_example_clips_verify_in_qemu.)"""
from __future__ import annotations

import builtins
import sys
from pathlib import Path

import numpy as np
import pytest

from emitter.cli import main
from emitter.commands.frontend import read_audio, read_npz
from emitter.errors import ToolchainError, UsageError
from emitter.features.sources import VERSION, cmsis_dsp_path
from emitter.target import missing_tools
from tests.features_cases import EXAMPLE, KWS_MODEL, KWS_SPEC, speech_clips

HELDOUT = EXAMPLE / "heldout.npz"
WINDOW = 6400  # the example's front end: 256 + 48 x 128 samples


def test_example_clips_are_read_as_the_example_decodes_them():
    pcm, labels = read_npz(HELDOUT, 8000, WINDOW)
    data = np.load(HELDOUT)
    assert pcm.dtype == np.int16 and pcm.shape == (36, WINDOW)
    assert np.array_equal(pcm, data["table"][data["mulaw"]])
    assert np.array_equal(pcm, np.stack(speech_clips()))  # keyword_data.decode_mulaw
    assert labels is not None and labels.tolist() == data["labels"].tolist()


def test_pcm_and_mulaw_give_the_same_clips(tmp_path):
    data = np.load(HELDOUT)
    np.savez(tmp_path / "pcm.npz", pcm=data["table"][data["mulaw"]], labels=data["labels"], rate=8000)
    a, la = read_audio([str(tmp_path / "pcm.npz")], 8000, WINDOW)
    b, lb = read_audio([str(HELDOUT)], 8000, WINDOW)
    assert len(a) == len(b) == 36 and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert la is not None and lb is not None and np.array_equal(la, lb)


def wrong_files(tmp: Path) -> list[tuple[str, str]]:
    """(file, what its message must say) for every kind of wrong array."""
    d = np.load(HELDOUT)
    mulaw, table = d["mulaw"], d["table"]
    pcm = table[mulaw]
    cases = {
        "nokey": ({"clips": pcm}, "has no audio: it must hold `pcm` (int16 [clips, samples]), or `mulaw`"),
        "notable": ({"mulaw": mulaw}, "`mulaw` needs `table` (int16 [256]"),
        "table_dtype": ({"mulaw": mulaw, "table": table.astype(np.int32)},
                        "`table` must be int16 [256] (the PCM value of each mu-law code), got int32 [256]"),
        "table_len": ({"mulaw": mulaw, "table": table[:128]}, "`table` must be int16 [256]"),
        "mulaw_dtype": ({"mulaw": mulaw.astype(np.int16), "table": table},
                        "`mulaw` must be uint8 [clips, samples] (2-D, one row per clip), got int16 [36, 6400]"),
        "pcm_dtype": ({"pcm": pcm.astype(np.float32)},
                      "`pcm` must be int16 [clips, samples] (2-D, one row per clip), got float32 [36, 6400]"),
        "pcm_1d": ({"pcm": pcm[0]}, "`pcm` must be int16 [clips, samples] (2-D, one row per clip), got int16 [6400]"),
        "mulaw_1d": ({"mulaw": mulaw[0], "table": table}, "`mulaw` must be uint8 [clips, samples] (2-D"),
        "short": ({"pcm": pcm[:, :6000]}, "`pcm` clips are 6000 samples long; the front end takes windows of "
                                         "exactly 6400 samples (0.8 s at 8000 Hz)"),
        "long_mulaw": ({"mulaw": np.concatenate([mulaw, mulaw], axis=1), "table": table},
                       "`mulaw` clips are 12800 samples long; the front end takes windows of exactly 6400"),
        "both": ({"pcm": pcm, "mulaw": mulaw, "table": table}, "holds both `pcm` and `mulaw`"),
        "empty": ({"pcm": np.zeros((0, WINDOW), np.int16)}, "`pcm` holds no clips"),
        "rate": ({"pcm": pcm, "rate": 16000}, "is sampled at 16000 Hz (`rate`); the spec wants 8000 Hz"),
        "labels": ({"pcm": pcm, "labels": np.arange(3)}, "`labels` must hold one label per clip ([36]"),
    }
    out = []
    for name, (arrays, message) in cases.items():
        np.savez(tmp / f"{name}.npz", **arrays)
        out.append((f"{name}.npz", message))
    (tmp / "garbage.npz").write_bytes(b"not a zip")
    out.append(("garbage.npz", "cannot read"))
    return out


def test_wrong_arrays_are_one_message_before_anything_is_written(tmp_path, capsys):
    """Each wrong file: exit 2, one line naming the key and what is expected, no bundle written
    (the check runs before the bundle is written and long before any build or QEMU run)."""
    for name, message in wrong_files(tmp_path):
        out = tmp_path / f"out-{name}"
        status = main(["verify", str(KWS_MODEL), "--board=cortex-m4", "--frontend", str(KWS_SPEC),
                       "--audio", str(tmp_path / name), "-o", str(out)])
        err = capsys.readouterr().err
        assert status == 2, (name, err)
        assert err.startswith("mcugen: error: ") and message in err, (name, err)
        assert "Traceback" not in err and err.count("\n") == 1, (name, err)
        assert not out.exists(), name


def test_features_command_takes_the_example_clips(tmp_path, capsys):
    feats = tmp_path / "feats.npz"
    assert main(["features", str(KWS_SPEC), str(HELDOUT), "-o", str(feats)]) == 0
    data = np.load(feats)
    assert data["features"].shape == (36, 49, 10) and data["labels"].tolist() == np.load(HELDOUT)["labels"].tolist()
    capsys.readouterr()
    assert main(["features", str(KWS_SPEC), str(tmp_path / "nope.npz"), "-o", str(feats)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_audio_and_features_ref_need_a_front_end(tmp_path, capsys):
    out = tmp_path / "b"
    assert main(["verify", str(KWS_MODEL), "--audio", str(HELDOUT), "-o", str(out)]) == 2
    assert "--audio goes with --frontend SPEC.toml" in capsys.readouterr().err and not out.exists()


def test_features_ref_shape_is_checked_before_the_build(tmp_path, capsys):
    np.savez(tmp_path / "ref.npz", features=np.zeros((35, 49, 10), np.float32))
    out = tmp_path / "b"
    assert main(["verify", str(KWS_MODEL), "--frontend", str(KWS_SPEC), "--audio", str(HELDOUT),
                 "--features-ref", str(tmp_path / "ref.npz"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "`features` is float32 [35, 49, 10], expected real values [36, 49, 10]" in err and not out.exists()


def without_cmsisdsp(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """The package missing (how == "missing") or present but failing to load ("broken")."""
    from emitter.features import reference

    reference._instance.cache_clear()
    for name in [m for m in sys.modules if m == "cmsisdsp" or m.startswith("cmsisdsp.")]:
        monkeypatch.delitem(sys.modules, name)
    if how == "missing":
        monkeypatch.setitem(sys.modules, "cmsisdsp", None)  # import raises ModuleNotFoundError
        return
    real = builtins.__import__

    def fake(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name == "cmsisdsp" or name.startswith("cmsisdsp."):
            raise ImportError("libcmsisdsp.so: undefined symbol arm_mfcc_q15")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)


@pytest.fixture
def restore_reference():
    from emitter.features import reference

    yield
    reference._instance.cache_clear()  # tables made without the package must not linger


@pytest.mark.parametrize("how", ["missing", "broken"])
def test_without_cmsisdsp_one_message_says_how_to_install_it(tmp_path, capsys, monkeypatch, restore_reference, how):
    without_cmsisdsp(monkeypatch, how)
    from emitter.features.dsp import cmsisdsp

    with pytest.raises(ToolchainError) as exc:
        cmsisdsp()
    assert not isinstance(exc.value, UsageError) and exc.value.exit_code == 3
    hint = f"python -m pip install cmsisdsp=={VERSION}"
    runs = {
        "features": ["features", str(KWS_SPEC), str(HELDOUT), "-o", str(tmp_path / "f.npz")],
        "verify": ["verify", str(KWS_MODEL), "--frontend", str(KWS_SPEC), "--audio", str(HELDOUT),
                   "-o", str(tmp_path / "v")],
        "emit": [str(KWS_MODEL), "--frontend", str(KWS_SPEC), "-o", str(tmp_path / "e")],
    }
    for what, argv in runs.items():
        status = main(argv)
        err = capsys.readouterr().err
        assert status == 3, (what, err)  # a missing tool (docs/ci.md)
        assert err.startswith("mcugen: error: the feature front end computes its reference features with the "
                              "Python package `cmsisdsp`"), (what, err)
        assert hint in err and "Traceback" not in err, (what, err)
        assert ("`cmsisdsp` (CMSIS-DSP's Python API, release 1.10.3, the one its C sources are tested with), and "
                + ("it is not installed: install it with" if how == "missing" else
                   "it cannot be imported (libcmsisdsp.so: undefined symbol arm_mfcc_q15)")) in err, err
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.qemu
@pytest.mark.skipif(bool(missing_tools()) or cmsis_dsp_path(required=False) is None,
                    reason="needs gcc, arm-none-eabi-gcc, qemu-system-arm and CMSIS-DSP's sources")
def test_example_clips_verify_in_qemu(tmp_path, capsys, monkeypatch):
    """docs/frontend.md's command on the example's own clips: exit 0, features bit-exact on the
    host and in QEMU cortex-m4 for all 36 clips."""
    monkeypatch.chdir(tmp_path)
    status = main(["verify", str(KWS_MODEL), "--board=cortex-m4", "--frontend", str(KWS_SPEC),
                   "--audio", str(HELDOUT)])
    text = capsys.readouterr().out
    assert status == 0, text
    for where in ("host", "cortex-m4"):
        assert (f"front end on {where}: 36 clips; raw features vs cmsisdsp: bit-exact; model input mismatches 0; "
                "stream mismatches 0; network outputs vs golden mismatches 0") in text, text
