"""Stage 8, the C bundle.

In: `Compiled` (graph, call records, plan) from emitter/compiler.py, the report data from
emitter/report/, and the feature front end when there is one.
Out: the bundle's files as {relative path: bytes}: model.h/.c, weights, Makefile, CMakeLists.txt,
the runtime sources it needs, report.json/.html, README.md (bundle.py, all C text from
templates/ through the filters of cfmt.py, comment blocks from cdoc.py, streamed segments from
segments.py through templates/stream_segment.c.j2, the front end from frontend.py); several models
in one bundle with one runtime and one shared arena (group.py); write.py puts them on disk.
Next: emitter/verify/ builds and runs a bundle; the CLI writes it for the user.
"""
