"""Every model the tests build, in one place (the real models are in ../shared/models).

    tiny.py  small hand-built ONNX graphs (onnx.helper): fuzz seeds, golden-file models, the bases
             of the hostile models, models with unsupported nodes
    ops.py   one float model per op case, quantized by onnxruntime to QDQ and QOperator form
    zoo/     small PyTorch-exported float models (make_zoo.py writes zoo/models/*.onnx; catalog.py
             lists them) and their quantized variants (variants.py)
"""
