"""mcugen: INT8 ONNX models to statically planned C bundles for Cortex-M microcontrollers."""

__version__ = "0.1.0"
