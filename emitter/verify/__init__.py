"""Stage 9, proof and measurement: build a bundle and run it.

In: `Compiled` and its rendered bundle, the board, the inputs (given or random).
Out: host gcc and QEMU builds and runs of the bundle (harness.py, on emitter/target/), their
outputs compared with the golden and onnxruntime (run.py, its checks; ci_report.py turns them into
JUnit/JSON), per-layer cycles (profile.py), layer-by-layer diffs (debug/), the feature front end's
checks (frontend.py), and the cost of kernel candidates measured in QEMU for --tune (tuning.py).
Next: the CLI and emitter/commands/ print the verdicts and exit with their status.
"""
