"""Stage 6, the memory plan.

In: the prepared IR Graph (every layer's `Prepared` call record, with its scratch bytes) and the
board's RAM budget.
Out: an execution order (order.py), the buffers that are views of others (views.py), the
row-band segments that may stream (stream.py), and the arena offsets of every buffer and scratch
(arena.py); search.py lists the plan candidates (layer by layer, in place, overlap, streamed; the
segments proposed by propose.py) of every execution order and ranks them with one cost key
(Goal.key), keeping the one the budget asks for.
Next: emitter/compiler.py bundles graph and plan into `Compiled`; emitter/render/ writes the C.
"""
