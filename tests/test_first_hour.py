"""A new user's first hour (issue #15): the errors and printouts they meet first."""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

from emitter.cli import main
from tests.harness.bundles import REPO

EXAMPLES = REPO / "examples"


def test_float_model_error_names_the_quantize_command_that_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Item 6: a float model -> exit 2, nothing written, and the exact `mcugen quantize` command;
    that command (with a real CALIB.npz) then makes a model mcugen compiles."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "digits_cnn_fp32.onnx", "digits.onnx")
    assert main(["digits.onnx", "-o", "out"]) == 2
    err = capsys.readouterr().err
    assert "'digits.onnx' is a float model (float input 'input'" in err
    assert err.count("\n") <= 6 and "unsupported node" not in err  # one error, not one per node
    command = next(line.strip() for line in err.splitlines() if line.strip().startswith("mcugen quantize"))
    assert command == "mcugen quantize digits.onnx --calibration CALIB.npz -o digits_int8.onnx"
    assert not Path("out").exists()
    np.savez("CALIB.npz", images=np.load(EXAMPLES / "digits_heldout.npz")["images"][:64])
    assert main([*shlex.split(command)[1:], "--no-qemu"]) == 0
    then = next(line.split("then: ")[1] for line in err.splitlines() if line.startswith("then: "))
    assert then == "mcugen digits_int8.onnx --board=<your board>"
    assert main(["digits_int8.onnx", "--board=cortex-m4", "-o", "out", "--quiet"]) == 0
