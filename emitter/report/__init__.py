"""Stage 7, the figures of a compiled model.

In: `Compiled` from emitter/compiler.py (graph, plan, kernel choices) and the board.
Out: report.json's data (data.py) and its HTML page (html.py), the summary printed after
generation (summary.py), the code-size estimate (codesize.py), the RAM/flash budget check with its
largest consumers (budget.py), and one way to shorten layer names in tables (names.py).
Next: emitter/render/ writes report.json and report.html into the bundle; the CLI prints the summary.
"""
