"""The one error hierarchy. Every message names the node or tensor and says what to do.

The CLI turns any McugenError into one clear message and the exit code its class carries
(exit_status() below is the whole mapping, docs/ci.md its table); anything else is a bug and keeps
its traceback:

    0  verified (or: done)
    1  a real mismatch: the generated C differs from the golden model or the reference outputs
    2  bad input or use: model, flags, --inputs, --audio, --frontend, budgets, output folder
    3  a missing or failing tool: compiler, QEMU, a CMSIS-NN tree
"""
from __future__ import annotations

from typing import ClassVar

EXIT_MISMATCH = 1  # verification: the generated C differs from the golden model
EXIT_ERROR = 2  # usage, model, unsupported node, quantization, budget, output errors
EXIT_TOOL = 3  # a missing or failing external tool: compiler, QEMU, CMSIS-NN tree
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
EXIT_BROKEN_PIPE = 141  # stdout closed early (`mcugen boards | head`), as a shell reports SIGPIPE


def printable(text: str) -> str:
    """Names in messages come from the model file: control characters (terminal escapes, carriage
    returns) are shown escaped, so a message can only ever print as the text it says."""
    return "".join(ch if ch == "\n" or ch.isprintable() else repr(ch)[1:-1] for ch in text)


def exit_status(exc: BaseException) -> int | None:
    """The CLI's exit status for an exception it reports without a traceback; None: a bug."""
    if isinstance(exc, McugenError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    return None


class McugenWarning(UserWarning):
    """Something mcugen repaired or ignored in a model and went on (issued with warnings.warn; the
    CLI prints it as `mcugen: warning: ...` on stderr)."""


class McugenError(Exception):
    """Base of every error mcugen reports to a user; exit_code is the CLI's exit status for it."""

    exit_code: ClassVar[int] = EXIT_ERROR
    # a verification that stopped part way: the figures of the checks that ran (emitter/verify/ci_report.py)
    verify_figures: dict | None = None

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (printable(args[0]),) + args[1:]
        super().__init__(*args)


class NodeUnsupported(Exception):
    """Raised while lowering or preparing one node (an op's lower()/prepare(), a lowering rule);
    collected with the node's name, op and opset into one UnsupportedError. Not a McugenError: it
    never reaches the user on its own."""


class UsageError(McugenError):
    """Bad command-line usage: unknown board, bad option value, conflicting options."""


class ModelError(McugenError):
    """The model file cannot be read or is not valid ONNX."""


class ShapeError(McugenError):
    """A dynamic, zero, negative or oversized dimension."""


class QuantError(McugenError):
    """Quantization parameters mcugen cannot honour (bad scales, zero points, asymmetric weights)."""


class UnsupportedError(McugenError):
    """One or more nodes mcugen cannot compile; the message lists every one of them."""

    def __init__(self, problems: list[tuple[str, str, int, str]]):
        self.problems = problems
        lines = [f"{len(problems)} unsupported node(s):"]
        for name, op, opset, reason in problems:
            lines.append(f"  - node '{name}' ({op}, opset {opset}): {reason}")
        lines.append("Nothing was written. Replace or remove these nodes, or file an issue with the model.")
        super().__init__("\n".join(lines))


class BudgetError(McugenError):
    """The model does not fit the board's RAM or flash budget."""


class ToolchainError(McugenError):
    """A required external tool (compiler, QEMU, a CMSIS-NN tree) is missing or failed."""

    exit_code = EXIT_TOOL


class VerifyError(McugenError):
    """Verification found outputs that differ from the golden model."""

    exit_code = EXIT_MISMATCH


class OutputError(McugenError):
    """The output folder cannot be written as asked."""
