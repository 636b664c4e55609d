"""The plan search ranks with one cost key (emitter/plan/search.py, Goal.key): the plan it keeps is
the eligible candidate of the lowest key, for --memory auto with and without a RAM budget and for
a plan kind, and across the execution orders the same key decides."""
from __future__ import annotations

from pathlib import Path

import pytest

from emitter.compiler import compile_model
from emitter.plan import search
from emitter.plan.order import orders, reorder

REPO = Path(__file__).resolve().parents[2]
DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"


@pytest.mark.parametrize(("memory", "budget"), [("auto", None), ("stream", None), ("overlap", None)])
def test_the_kept_plan_has_the_lowest_key(memory: str, budget: int | None) -> None:
    c = compile_model(DIGITS, memory=memory, ram_budget=budget)
    assert c.memory is not None
    goal = search.Goal(memory, budget, "--ram-budget", c.memory.base)
    cands = list(c.memory.candidates)
    best = min(goal.eligible(c.graph, cands), key=lambda x: goal.key(c.graph, x))
    assert goal.key(c.graph, c.memory.chosen) == goal.key(c.graph, best)
    assert c.memory.why.startswith(goal.why())


def test_a_budget_takes_the_fastest_plan_that_fits() -> None:
    layer = compile_model(DIGITS, memory="auto")
    assert layer.memory is not None
    small = min(search.activation_ram(layer.graph, x.plan) for x in layer.memory.candidates)
    c = compile_model(DIGITS, memory="auto", ram_budget=small)
    assert c.memory is not None
    goal = search.Goal("auto", small, "--ram-budget", c.memory.base)
    assert goal.fastest and goal.key(c.graph, c.memory.chosen)[1] <= small
    fits = goal.eligible(c.graph, list(c.memory.candidates))
    assert c.memory.chosen in fits
    assert goal.key(c.graph, c.memory.chosen) == min(goal.key(c.graph, x) for x in fits)


def test_orders_are_ranked_by_the_same_key() -> None:
    c = compile_model(DIGITS, memory="stream")
    prepared = tuple(c.prepared)
    order, choice = search.search_orders(c.graph, prepared, 4, "any", "stream", None, "--ram-budget")
    goal = search.Goal("stream", None, "--ram-budget", 0)
    keys = []
    for o in orders(c.graph):
        g2, p2 = reorder(c.graph, o), tuple(prepared[i] for i in o)
        keys.append(goal.key(g2, search.search(g2, p2, [p.scratch for p in p2], 4, "any", "stream", None,
                                               "--ram-budget").chosen))
    assert goal.key(reorder(c.graph, order), choice.chosen) == min(keys)
