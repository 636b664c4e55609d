"""Board budgets: a model that does not fit fails at generation with the numbers and the largest
consumers (the peak-memory step and its live tensors, the biggest weight arrays)."""
from __future__ import annotations

from emitter.compiler import Compiled
from emitter.errors import BudgetError


def peak_step(c: Compiled) -> tuple[int, list[tuple[str, int]]]:
    """The step with the most live arena bytes and the buffers live there, largest first."""
    best = 0
    live: list[tuple[str, int]] = []
    for s in range(len(c.graph.nodes)):
        here = [(b.name, b.size) for b in c.plan.buffers if b.first <= s <= b.last]
        total = sum(size for _, size in here)
        if total > sum(size for _, size in live) or not live:
            best, live = s, here
    return best, sorted(live, key=lambda x: -x[1])


def biggest_weights(c: Compiled, n: int = 3) -> list[tuple[str, int]]:
    consts = [(t.name, t.nbytes) for t in c.graph.tensors.values() if t.is_const]
    return sorted(consts, key=lambda x: (-x[1], x[0]))[:n]


def ram_needed(c: Compiled) -> int:
    """Activation RAM: the arena + the caller's input/output buffers (inputs in the arena count once)."""
    from emitter.plan.search import activation_ram

    return activation_ram(c.graph, c.plan)


def check(c: Compiled, weight_bytes: int, ram: int, flash: int, ram_src: str, flash_src: str,
          code_bytes: int = 0) -> None:
    """RAM = arena + the caller's input/output buffers; flash = weights and parameters + code
    (`code_bytes`: emitter.report.codesize's estimate of the kernels and the schedule)."""
    problems = []
    need = ram_needed(c)
    if need > ram:
        step, live = peak_step(c)
        node = c.graph.nodes[step]
        tensors = ", ".join(f"'{name}' {size:,} B" for name, size in live[:4])
        problems.append(
            f"RAM: needs {need:,} bytes (arena {c.plan.arena_size:,} + input/output buffers "
            f"{need - c.plan.arena_size:,}) but the budget ({ram_src}) is {ram:,} bytes. Peak at layer "
            f"{step} '{node.name}' ({node.op}), live there: {tensors}. Shrink those activations "
            "(fewer channels, a stride earlier, smaller input) or choose a board with more RAM")
    if weight_bytes + code_bytes > flash:
        big = ", ".join(f"'{name}' {size:,} B" for name, size in biggest_weights(c))
        problems.append(
            f"flash: needs {weight_bytes + code_bytes:,} bytes (weights and parameters {weight_bytes:,} + "
            f"kernel and schedule code about {code_bytes:,}) but the budget ({flash_src}) is {flash:,} "
            f"bytes. Largest weights: {big}. Prune or shrink those layers, or choose a board with more flash")
    if problems:
        raise BudgetError("the model does not fit:\n  " + "\n  ".join(problems) + "\nNothing was written.")
