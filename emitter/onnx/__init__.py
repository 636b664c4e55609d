"""Stage 1, the ONNX file.

In: a path to an ONNX file (and, for dynamic dimensions, the user's --input-shape values).
Out: an `OnnxModel` (load.py): the checked, shape-inferred ModelProto with its initializers,
value shapes and opset; constants folded (fold.py); opsets newer than our rules read only where
their schema says nothing changed (opsets.py); a float model refused with the `mcugen quantize`
command that fixes it (float_model.py).
Next: emitter/lower/ turns the OnnxModel into the IR Graph.
"""
