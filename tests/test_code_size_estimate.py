"""The flash budget counts code (issue #15, item 5): mcu_runtime/code_sizes.json (bytes per shipped
runtime file and per kernel call, per core; written by scripts/code_sizes.py) is current, covers
every file on every board's core, and its estimate matches a real cross build of a bundle."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from emitter.boards import list_boards
from emitter.cli import main
from emitter.report.codesize import code_bytes, table
from emitter.target import missing_tools
from tests.harness.bundles import REPO
from tests.models.tiny import HELLO, tiny_qdq_conv

sys.path.insert(0, str(REPO / "scripts"))
import code_sizes  # noqa: E402

needs_arm = pytest.mark.skipif(bool(missing_tools(("arm-none-eabi-gcc",))), reason="arm-none-eabi-gcc missing")


def test_table_covers_every_runtime_file_on_every_core() -> None:
    cores = table()["cores"]
    assert set(cores) == {b.core for b in list_boards()}
    for core, sizes in cores.items():
        assert sorted(sizes["files"]) == code_sizes.sources(), core
        assert sum(sizes["files"].values()) > 10_000 and sizes["per_kernel_call"] > 0  # path files outside their #if: 0


@needs_arm
def test_table_is_what_the_script_measures_now() -> None:
    """One core re-measured (all of them: python scripts/code_sizes.py --check)."""
    fresh = code_sizes.table(only="cortex-m4")
    if fresh["compiler"] != table()["compiler"]:
        pytest.skip(f"the table was measured with {table()['compiler']}, this machine has {fresh['compiler']}")
    assert fresh["cores"]["cortex-m4"] == table()["cores"]["cortex-m4"], "run python scripts/code_sizes.py"


@needs_arm
def test_estimate_matches_a_cross_build(tmp_path: Path) -> None:
    import onnx

    onnx.save(tiny_qdq_conv(), tmp_path / "conv.onnx")
    out = tmp_path / "b"
    assert main([str(tmp_path / "conv.onnx"), "--board=cortex-m4", "-o", str(out), "--name", "net", "--quiet"]) == 0
    subprocess.run(["make", "-C", str(out), "-j2", "CC=arm-none-eabi-gcc"], capture_output=True, check=True)
    sizes = subprocess.run(["arm-none-eabi-size", str(out / "libnet.a")], capture_output=True, text=True,
                           check=True).stdout.splitlines()[1:]
    real = sum(int(cols[0]) + int(cols[1]) for cols in (line.split() for line in sizes)
               if cols[-1] != "net_weights.o")
    files = [p.relative_to(out).as_posix() for p in out.rglob("*.c")]
    calls = sum(1 for layer in json.loads((out / "report.json").read_text())["layers"] if layer["kernel"])
    estimate, per_file = code_bytes(files, calls, "cortex-m4")
    print(f"tiny_qdq_conv on cortex-m4: code estimate {estimate:,} bytes, measured {real:,}")
    assert per_file and abs(estimate - real) <= 0.15 * real, (estimate, real)


def test_flash_budget_counts_code_and_help_says_what_is_counted(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(HELLO), "--board=cortex-m4", "-o", str(tmp_path / "ok"), "--quiet"]) == 0
    weights = json.loads((tmp_path / "ok" / "report.json").read_text())["weight_bytes"]
    assert main([str(HELLO), "--board=cortex-m4", "-o", str(tmp_path / "o"), "--flash-budget", str(weights + 100)]) == 2
    err = capsys.readouterr().err
    assert f"weights and parameters {weights:,} + kernel and schedule code about" in err
    assert not (tmp_path / "o").exists()
    assert main([str(HELLO), "--board=cortex-m4", "-o", str(tmp_path / "s")]) == 0
    assert f"weights and parameters {weights:,} bytes + code " in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["emit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "RAM = arena + the caller's input/output buffers" in text
    assert "flash = weights and parameters + code" in text
