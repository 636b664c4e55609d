"""The test harness: every helper that builds or runs generated C for the tests, in one package.

    bundles.py     emit a bundle; build several into one host shared library and call them (ctypes);
                   the shared models (../shared/models) and the strict warning flags
    qemu.py        many small bundles in ONE QEMU firmware image, run once, split per case
    ckernels.py    the portable C kernels in one host library, called with the Python twins'
                   parameter dataclasses; cross-compiling a kernel; a hand-written bundle in QEMU
    zoo_runs.py    compile, emit and run the zoo's quantized variants (tests/models/zoo/)
    zoo_images.py  zoo variants in merged QEMU images with one instruction count per variant

The models the tests run are in tests/models/.
"""
