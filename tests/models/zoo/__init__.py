"""The model zoo: small PyTorch-exported float models (models/*.onnx, made by make_zoo.py and listed
in catalog.py) and the quantization variants the tests and scripts/zoo_report.py run (variants.py)."""
