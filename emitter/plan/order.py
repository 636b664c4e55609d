"""Memory-aware execution orders of a branching graph (residual, inception/concat).

The order of the layers decides which tensors are alive together, so for a graph with branches
it is part of the memory search (emitter/plan/search.search_orders): each order below is planned and
the plan of the lowest cost key wins. A chain has one order; the file's order is always one of them.

  file     the order of the ONNX file (after lowering);
  greedy   at each step, of the layers whose inputs are made, the one that adds the fewest bytes
           (its output minus the inputs it reads for the last time), ties to the file's order;
  depth    at each step, the ready layer reading the most recently made tensor (finish a branch
           before starting the next), ties to the file's order.
"""
from __future__ import annotations

from collections.abc import Callable

from emitter.ir import Graph

Pick = Callable[[list[int], list[int]], int]  # (ready steps, made so far) -> the step to run


def topological(g: Graph, pick: Pick) -> list[int]:
    """An order of g's steps: repeatedly `pick` among the steps whose inputs are made."""
    made = set(g.inputs) | {n for n, t in g.tensors.items() if t.is_const}
    need = [{i for i in node.inputs if i and i not in made} for node in g.nodes]
    producer = {o: k for k, node in enumerate(g.nodes) for o in node.outputs}
    left, done = set(range(len(g.nodes))), list[int]()
    while left:
        ready = sorted(k for k in left if all(producer.get(i, -1) in done or i in made for i in need[k]))
        k = pick(ready, done)
        done.append(k)
        left.remove(k)
    return done


def greedy(g: Graph) -> Pick:
    readers: dict[str, set[int]] = {}
    for k, node in enumerate(g.nodes):
        for i in node.inputs:
            if i and not g.t(i).is_const:
                readers.setdefault(i, set()).add(k)

    def added(k: int, done: list[int]) -> int:
        node = g.nodes[k]
        freed = sum(g.t(i).nbytes for i in set(node.inputs)
                    if i and i in readers and readers[i] <= {*done, k} and i not in g.outputs)
        return sum(g.t(o).nbytes for o in node.outputs) - freed

    return lambda ready, done: min(ready, key=lambda k: (added(k, done), k))


def depth(g: Graph) -> Pick:
    producer = {o: k for k, node in enumerate(g.nodes) for o in node.outputs}

    def recency(k: int, done: list[int]) -> int:
        at = [done.index(producer[i]) for i in g.nodes[k].inputs if i in producer and producer[i] in done]
        return -max(at, default=-1)

    return lambda ready, done: min(ready, key=lambda k: (recency(k, done), k))


def orders(g: Graph) -> list[list[int]]:
    """The distinct candidate orders, the file's first."""
    out = [list(range(len(g.nodes)))]
    if all(len(v) <= 1 for v in g.consumers().values()):  # a chain: one order
        return out
    for pick in (greedy(g), depth(g)):
        order = topological(g, pick)
        if order not in out:
            out.append(order)
    return out


def reorder(g: Graph, order: list[int]) -> Graph:
    return g.with_nodes([g.nodes[k] for k in order])
