"""The default memory plan takes free savings (emitter/plan/search.py, Goal.free): with --memory auto
and no explicit budget (none, or the board's own RAM), the smallest plan whose estimated overhead is
at most FREE_OVERHEAD; `--memory layer` keeps whole layers; an explicit --ram-budget keeps the
fastest plan that fits; the summary says which plan and why."""
from __future__ import annotations

from pathlib import Path

import pytest

from emitter.boards import load_board
from emitter.cli import main
from emitter.compiler import compile_model
from emitter.plan import search
from emitter.plan.search import FREE_OVERHEAD, activation_ram

REPO = Path(__file__).resolve().parents[1]
DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"


def board_src(core: str) -> str:
    return f"board {core} RAM"  # as emitter/cli.ram_budget names the board's own RAM


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m7", "cortex-m55"])
def test_board_budget_takes_the_smallest_free_plan(core: str) -> None:
    board = load_board(core)
    c = compile_model(DIGITS, board=board, memory="auto", ram_budget=board.ram_bytes, budget_src=board_src(core))
    assert c.memory is not None and c.memory.free
    layer = c.memory.candidates[0]
    assert layer.kind == "layer"
    assert all(x.kind != "stream" for x in c.memory.candidates)  # free savings plan no streamed chain
    free = [x for x in c.memory.candidates if x.overhead <= FREE_OVERHEAD * c.memory.base]
    assert activation_ram(c.graph, c.plan) == min(activation_ram(c.graph, x.plan) for x in free)
    assert activation_ram(c.graph, c.plan) < activation_ram(c.graph, layer.plan)  # digits: inplace saves
    assert c.memory.ratio(c.memory.chosen) <= FREE_OVERHEAD
    assert c.plan.schedule.kind != "layer"
    assert c.memory.why.startswith("free savings")


def test_no_budget_takes_free_savings_too() -> None:
    c = compile_model(DIGITS, board=load_board("cortex-m4"), memory="auto", ram_budget=None)
    assert c.memory is not None and c.memory.free and c.plan.schedule.kind != "layer"
    assert c.memory.ratio(c.memory.chosen) <= FREE_OVERHEAD


def test_explicit_budget_keeps_the_fastest_plan_that_fits() -> None:
    c = compile_model(DIGITS, board=load_board("cortex-m4"), memory="auto", ram_budget=1 << 20,
                      budget_src="--ram-budget")
    assert c.memory is not None and not c.memory.free
    assert c.plan.schedule.kind == "layer"
    reserve = compile_model(DIGITS, board=load_board("cortex-m4"), memory="auto", ram_budget=1 << 20,
                            budget_src="board cortex-m4 RAM minus --ram-reserve")
    assert reserve.plan.schedule.kind == "layer"


def test_memory_layer_keeps_whole_layers() -> None:
    c = compile_model(DIGITS, board=load_board("cortex-m4"), memory="layer")
    assert c.plan.schedule.kind == "layer" and c.memory is None


def test_board_too_small_for_a_free_plan_takes_the_fastest_that_fits() -> None:
    board = load_board("cortex-m4")
    probe = compile_model(DIGITS, board=board, memory="auto", ram_budget=None)
    assert probe.memory is not None
    free_ram = activation_ram(probe.graph, probe.plan)
    cands = probe.memory.candidates
    smaller = [x for x in cands if activation_ram(probe.graph, x.plan) < free_ram]
    assert smaller, "digits has a plan below the free one"
    budget = max(activation_ram(probe.graph, x.plan) for x in smaller)
    c = compile_model(DIGITS, board=board, memory="auto", ram_budget=budget, budget_src=board_src("cortex-m4"))
    assert c.memory is not None and not c.memory.free
    assert activation_ram(c.graph, c.plan) <= budget
    goal = search.Goal("auto", budget, "--ram-budget", c.memory.base)
    fits = goal.eligible(c.graph, list(c.memory.candidates))
    assert goal.key(c.graph, c.memory.chosen) == min(goal.key(c.graph, x) for x in fits)
    assert c.memory.why.startswith("the fastest plan within board cortex-m4 RAM")


def test_goal_names() -> None:
    assert search.board_own("board cortex-m7 RAM")
    assert not search.board_own("board cortex-m7 RAM minus --ram-reserve")
    assert not search.board_own("--ram-budget")
    assert search.Goal("auto", 1000, "board x RAM", 1).free
    assert search.Goal("auto", None, "--ram-budget", 1).free
    assert search.Goal("auto", 1000, "--ram-budget", 1).fastest
    assert not search.Goal("inplace", None, "board x RAM", 1).free


def test_summary_says_which_plan_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emit", str(DIGITS), "--board", "cortex-m4", "-o", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("plan:"))
    assert line.startswith("plan:  overlap, activation RAM 1,290 bytes vs 1,546 whole-layer, +0.8% estimated "
                           "instructions (free savings: the smallest plan within 2% estimated instructions; "
                           "--memory layer keeps whole layers)"), line
    assert main(["emit", str(DIGITS), "--board", "cortex-m4", "--memory", "layer", "-o", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("plan:"))
    assert line.startswith("plan:  whole layers") and "free savings" not in line
    assert main(["emit", str(DIGITS), "--board", "cortex-m4", "--ram-budget", "64K", "-o", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("plan:"))
    assert line.startswith("plan:  whole layers") and "the fastest plan within --ram-budget" in line
