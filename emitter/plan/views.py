"""Free views: layers that move no byte (Reshape, Transpose the layout made free) share their
input's buffer. `roots()` names, for every tensor, the buffer it lives in."""
from __future__ import annotations

from emitter.ir import Graph


def roots(g: Graph) -> dict[str, str]:
    """tensor -> the tensor whose buffer it is (itself unless it is a view of another)."""
    from emitter.ops import VIEW_OPS

    root = {n: n for n in g.inputs}
    for node in g.nodes:
        for o in node.outputs:
            root[o] = root[node.inputs[0]] if node.op in VIEW_OPS else o
    return root
