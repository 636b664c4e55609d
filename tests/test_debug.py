"""`mcugen debug`: per-layer dumps from the host build and QEMU, compared with the golden model.

On the real MLPerf KWS DS-CNN of ../shared/models: every layer bit-exact; one weight of layer 5
corrupted in the emitted bundle's NAME_weights.c -> layer 5 is named as the first divergent layer
(host, and in QEMU on cortex-m7)."""
from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from emitter.cli import main
from emitter.compiler import compile_model
from emitter.errors import VerifyError
from emitter.target import missing_tools
from emitter.verify.debug import debug_layers, parse_layers
from emitter.verify.harness import write_glue
from tests.harness.bundles import SHARED_MODELS, emit, shared_model

MODEL = "mlperf_kws_dscnn"
CORRUPT = 5  # a pointwise conv in the middle of the network

needs_models = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")


def model_args() -> list[str]:
    return [str(shared_model(MODEL)), "--board=cortex-m7",
            "--inputs", str(SHARED_MODELS / MODEL / f"{MODEL}_ref.npz")]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = compile_model(shared_model(MODEL), name="net")
    return emit(c, tmp_path_factory.mktemp("debug") / "net")


def corrupt(src: Path, dst: Path, layer: int) -> tuple[int, int]:
    """Copy the bundle and change the first value of net_l<layer>_filter; returns (old, new)."""
    shutil.copytree(src, dst)
    weights = dst / "net_weights.c"
    text = weights.read_text()
    pattern = re.compile(rf"(const int8_t net_l{layer}_filter\[\d+\] NET_WEIGHTS_ATTRIBUTES NET_ALIGNED"
                         rf" = {{\s*)(-?\d+)")
    match = pattern.search(text)
    assert match is not None, f"no filter array for layer {layer}"
    old = int(match.group(2))
    new = 127 if old < 0 else -127
    weights.write_text(text[:match.start(2)] + str(new) + text[match.end(2):])
    return old, new


def layer_line(out: str, index: int) -> str:
    return next(line for line in out.splitlines() if line.split()[:1] == [str(index)])


@needs_models
def test_all_layers_bit_exact_on_host(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["debug", *model_args()] + ["--no-qemu", "--samples", "2"]) == 0
    out = capsys.readouterr().out
    assert "all 12 layers are bit-exact with the golden model on host (2 samples)" in out
    # every kernel call has an ONNX counterpart here, compared with onnxruntime
    for lay in debug_layers(compile_model(shared_model(MODEL), name="net")):
        assert lay.onnx_tensor is not None
        line = layer_line(out, lay.index)
        assert line.split()[3] == lay.kernel and "bit-exact" in line
        assert not line.rstrip().endswith(" -")


@needs_models
def test_corrupted_weight_is_named_on_host(bundle: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    corrupt(bundle, tmp_path / "net", CORRUPT)
    assert main(["debug", *model_args()] + ["--no-qemu", "--bundle", str(tmp_path / "net")]) == 1
    out = capsys.readouterr().out
    assert f"first divergent layer: #{CORRUPT} " in out
    for index in range(1, CORRUPT):
        assert "bit-exact" in layer_line(out, index)
    assert re.split(r"\s{2,}", layer_line(out, CORRUPT))[4] != "bit-exact"  # host vs golden


@needs_models
@pytest.mark.qemu
def test_corrupted_weight_is_named_in_qemu(bundle: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    missing = missing_tools()
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))
    corrupt(bundle, tmp_path / "net", CORRUPT)
    work = tmp_path / "work"
    assert main(["debug", *model_args()] + ["--bundle", str(tmp_path / "net"), "--work", str(work)]) == 1
    out = capsys.readouterr().out
    assert f"first divergent layer: #{CORRUPT} " in out and "QEMU cortex-m7 vs golden: " in out
    cells = re.split(r"\s{2,}", layer_line(out, CORRUPT))
    assert cells[4] != "bit-exact" and cells[5] != "bit-exact"  # host and QEMU both diverge
    assert cells[4] == cells[5]  # ... identically
    assert (work / "qemu_run" / "layers.bin").read_bytes() == (work / "host_run" / "layers.bin").read_bytes()


@needs_models
def test_bundle_of_another_model_is_refused(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [str(shared_model("tflm_micro_speech")), "--no-qemu", "--bundle", str(bundle)]
    assert main(["debug", *args]) == 2
    assert "emitted from another model" in capsys.readouterr().err


@needs_models
def test_cmsis_nn_bundle_is_refused_with_a_way_out(bundle: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A cmsis-nn bundle (its report.json says so) is not a per-layer debug target: exit 2, and the
    message says what to do instead."""
    import json

    cmsis = tmp_path / "cmsis_bundle"
    shutil.copytree(bundle, cmsis)
    report = json.loads((cmsis / "report.json").read_text())
    (cmsis / "report.json").write_text(json.dumps(report | {"backend": "cmsis-nn"}))
    assert main(["debug", str(shared_model(MODEL)), "--no-qemu", "--bundle", str(cmsis)]) == 2
    err = capsys.readouterr().err
    assert "uses the cmsis-nn backend" in err and "mcugen verify --profile" in err


@needs_models
def test_glue_hook_only_in_debug_mode(tmp_path: Path) -> None:
    from emitter.verify.debug import write_layer_glue

    c = compile_model(shared_model("tflm_micro_speech"), name="net")
    write_glue(c, tmp_path / "plain")
    write_layer_glue(c, tmp_path / "layers")
    plain = (tmp_path / "plain" / "model_glue.h").read_text()
    layers = (tmp_path / "layers" / "model_glue.h").read_text()
    assert "AFTER_LAYER" not in plain and "__attribute__" not in plain
    assert "#define NET_AFTER_LAYER(index, output, bytes) harness_after_layer(" in layers


@needs_models
def test_parse_layers_records() -> None:
    layers = debug_layers(compile_model(shared_model("tflm_micro_speech"), name="net"))
    first = layers[0]
    data = np.arange(first.nbytes, dtype=np.int64).astype(np.int8)
    raw = struct.pack("<III", 0, first.index, first.nbytes) + data.tobytes()
    got = parse_layers(raw + struct.pack("<III", 0, layers[1].index, layers[1].nbytes) + b"\x01",
                       layers, 1, "host")
    assert list(got) == [(0, first.index)]  # the record cut short is dropped
    np.testing.assert_array_equal(got[(0, first.index)], data)
    with pytest.raises(VerifyError, match="unexpected record"):
        parse_layers(struct.pack("<III", 0, first.index, first.nbytes + 1), layers, 1, "host")
