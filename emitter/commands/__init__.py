"""The subcommands and option groups of `mcugen` that are larger than a few lines.

In: parsed command-line arguments (emitter/cli.py builds the parser and dispatches).
Out: `mcugen quantize` (quantize.py: a float ONNX model -> an INT8 one, with an accuracy check),
the feature front end's options and `mcugen features` (frontend.py), and the checks of a
several-model `mcugen A.onnx B.onnx` (group.py).
Next: nothing; these run the whole pipeline (compiler, render, verify) for the user.
"""
