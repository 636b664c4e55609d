"""Stage 3, graph passes: pure functions Graph -> Graph, run in order by emitter/compiler.py.

In: the IR Graph of quantized ops from emitter/lower/.
Out: the same graph with activations fused into their producer's clamp range and residual Adds
into their convolution (fuse.py), and every tensor given a physical layout, Transposes cancelled or
made free views (layout.py). Graph.verify() holds after each.
Next: each op's prepare() (emitter/ops/) builds the layer's call record.
"""
