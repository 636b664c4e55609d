"""onnxruntime's value of every layer's ONNX tensor, for the "golden vs onnxruntime" column."""
from __future__ import annotations

import numpy as np

from emitter.compiler import Compiled
from emitter.layout import index_map
from emitter.verify.debug.layers import DebugLayer
from emitter.verify.harness import Samples


def ort_layers(c: Compiled, layers: list[DebugLayer], samples: Samples) -> list[dict[str, np.ndarray]]:
    """Per sample, onnxruntime's value of every layer's ONNX tensor, as our int8 codes (int16 if
    out of range) in our physical order.

    A copy of the model gets those tensors as extra graph outputs; graph optimizations are off so
    that every QuantizeLinear output still exists."""
    import onnx
    import onnxruntime as ort

    from emitter.verify.run import quantize, unsigned_feed

    g, m = c.graph, c.model
    wanted = [(lay, lay.onnx_tensor) for lay in layers if lay.onnx_tensor is not None]
    model = onnx.ModelProto()
    model.CopyFrom(m.model)
    present = {o.name for o in model.graph.output}
    for _, name in wanted:
        if name in present:
            continue
        dtype = m.dtypes.get(name)
        if dtype is not None:
            elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
            vi = onnx.helper.make_tensor_value_info(name, elem, None)
        else:  # e.g. the output of a com.microsoft QLinear op: onnxruntime infers the type
            vi = onnx.ValueInfoProto(name=name)
        model.graph.output.append(vi)
        present.add(name)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    fetch = sorted({name for _, name in wanted})
    results = []
    for sample in samples:
        feed = {}
        for name, x in zip(g.inputs, sample, strict=True):
            b, t = g.boundaries[name], g.t(name)
            assert t.quant is not None and t.layout is not None
            logical = np.empty(t.size, t.dtype)  # the caller's bytes (e.g. NHWC) in ONNX order
            logical[index_map(t.layout)] = np.asarray(x, t.dtype).ravel()
            x = logical.reshape(t.shape)
            if b.float_io:
                feed[b.onnx_name] = ((x.astype(np.float32) - t.quant.zp)
                                     * np.float32(t.quant.s)).astype(np.float32)
            elif b.from_uint8:  # uint8 (uint16) in ONNX: the C API's int8 (int16) + 128 (+ 32768)
                feed[b.onnx_name] = unsigned_feed(x)
            else:
                feed[b.onnx_name] = x.astype(t.dtype)
        values = dict(zip(fetch, sess.run(fetch, feed), strict=True))
        row = {}
        for lay, name in wanted:
            y = np.asarray(values[name])
            t = g.t(lay.tensor)
            assert t.quant is not None and lay.onnx_order is not None
            if y.size != t.size:
                continue
            if y.dtype == np.uint8:
                # uint8 -> int8 as the lowering did: zero point - 128 when the model declares the
                # type; an untyped tensor (com.microsoft op output) kept its zero point, so values
                # above 127 cannot be represented: kept as int16 to show up in the difference
                shift = 128 if m.dtypes.get(name) == np.dtype(np.uint8) else 0
                y = y.astype(np.int16) - shift
            elif y.dtype == np.uint16:  # uint16 with zero point 32768: int16 (lower/state.py)
                y = y.astype(np.int32) - 32768
            elif y.dtype != np.dtype(t.dtype):
                y = quantize(y.astype(np.float64), t.quant.s, t.quant.zp, t.dtype)
            row[lay.tensor] = y.ravel()[lay.onnx_order]
        results.append(row)
    return results


