"""Bit-exact numpy goldens of the portable int8 kernels, one module per kernel, one function named
exactly like the C function it mirrors (mcu_runtime/kernels/<function>.c)."""
