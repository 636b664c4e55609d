"""The contract of a kernel twin: what the planner, the renderer and the backend chooser may ask of
a C kernel, each capability declared with its default.

Every twin module (emitter/kernels/mcu_<k>.py) ends with `KERNEL = Kernel("mcu_<k>", ...)`, naming
the functions and constants it offers; a capability it does not name takes the default below.
Later stages ask the record (emitter.kernels.kernel(name)) and never probe the module.

  band        (params, o0, o1) -> (params of output rows [o0, o1), input rows lo, hi): the layer
              may run a band of rows at a time (plan/stream.py), through BAND_C
  row_band    (params, row_size, o0, o1) -> the same for an element-wise kernel whose rows are
              `row_size` elements of whole same-size operands (add)
  band_c      the C function of one band (mcu_runtime/support/mcu_band.c)
  sink        (params, row_bytes) -> int32 accumulators, or None: the layer may end a segment by
              adding each input row as it is made (mcu_runtime/support/mcu_sink.h); sink_c
              (params, row_bytes) -> SinkC, the data of its C (templates/stream_segment.c.j2)
  lean_c      a call needing little scratch (the generic path, or a lean variant of the fast one);
              lean_buffer_size (params, bias, isa) its scratch
  exact_in_place  element i is read before element i is written: the output may lie exactly on
              an input; exact_in_place_inputs the node inputs it may lie on (empty: any)
  in_place    (params, bias, isa) -> bytes or None: one whole call of the kernel may write its output
              over its main input (node input 0, same size) when the output starts at least that many
              bytes below it (0: exactly on it); None: it may not (this call's code path reads input
              that its writes have reached); in_place_exact: exactly that many bytes below, no
              other start (a kernel that runs groups of channels over the whole output)
  in_place_c  another C function that writes the output exactly over its main input (at a cost:
              copies, more calls); in_place_buffer_size (params, bias, isa) -> its scratch, None
              where it does not apply; in_place_c_calls (params) -> the kernel calls it makes
  buffer_size (params, bias, isa) -> scratch bytes; None: the layer's own Prepared.scratch stands
  path        (params, bias, isa) -> the code path the C dispatcher takes; None: one path
  runtime_deps    other kernels whose C ships with this one (a fused kernel's or a wrapper's parts)
  to_cmsis    (Converter, Prepared) -> its CMSIS-NN call, or None; None here: no CMSIS-NN kernel

Two questions are asked of the params themselves, through the classes they declare: a params class
deriving from Windowed answers window() (its input and output dims and filter size: the row planner
and its cost estimate read them), one deriving from Rounded answers rounding_mode() (quant.ROUND_*;
every other params rounds as TFLite).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emitter.calls import is_portable

Band = Callable[[Any, int, int], tuple[Any, int, int]]
RowBand = Callable[[Any, int, int, int], tuple[Any, int, int]]
Sink = Callable[[Any, int], "int | None"]
Scratch = Callable[[Any, Any, str], int]
LeanScratch = Callable[[Any, Any, str], int]
Path = Callable[[Any, Any, str], str]
InPlace = Callable[[Any, Any, str], "int | None"]
InPlaceScratch = Callable[[Any, Any, str], "int | None"]
ToCmsis = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class SinkC:
    """The C calls of a sink (templates/stream_segment.c.j2 writes them): `add` adds one input row,
    `finish` makes the output from the accumulators.
    form "channels": add(row, sizes[0] pixels, sizes[1] channels, acc); finish(&params, acc, output)
    form "features": add(&params, row, y * sizes[0], sizes[0], operands[0], acc);
                     finish(&params, acc, operands[1:]..., output)"""
    form: str
    add: str
    finish: str
    sizes: tuple[int, ...]
    operands: tuple[str, ...] = ()


SinkData = Callable[[Any, int], SinkC]


@dataclass(frozen=True)
class Window:
    """A window kernel's geometry: its input and output dims ([N, H, W, C], common.Dims) and the
    elements of its filter (0: no weights, a pool)."""
    input: Any
    output: Any
    weights: int = 0


class Windowed:
    """Params of a window kernel (conv2d, depthwise, pools): window() is its geometry."""

    def window(self) -> Window:
        raise NotImplementedError


class Rounded:
    """Params carrying a rounding mode: rounding_mode() is quant.ROUND_TFLITE, ROUND_NEAREST_EVEN
    or ROUND_NEAREST_NO_TIE."""

    def rounding_mode(self) -> int:
        raise NotImplementedError


@dataclass(frozen=True)
class Kernel:
    """One C kernel's declared capabilities (the defaults: none)."""
    name: str
    band: Band | None = None
    row_band: RowBand | None = None
    band_c: str = ""
    sink: Sink | None = None
    sink_c: SinkData | None = None
    lean_c: str = ""
    lean_buffer_size: LeanScratch | None = None
    lean_wide_buffer_size: LeanScratch | None = None  # the lean call's scratch for its faster variant
    exact_in_place: bool = False
    exact_in_place_inputs: tuple[int, ...] = ()
    in_place: InPlace | None = None
    in_place_exact: bool = False
    lean_in_place: InPlace | None = None  # as in_place, of the lean call (lean_c)
    # (params, bias, isa, room) -> whether lean_c with `room` bytes of scratch runs the fast call (stream.fed)
    lean_fast: Callable[[Any, Any, str, int], bool] | None = None
    # (params, filter, bias) -> the params of a layer called band by band: build-time constants the C
    # would otherwise recompute on every call (mcu_conv2d_s8's kernel_sums and channels_fast)
    band_constants: Callable[[Any, Any, Any], Any] | None = None
    in_place_c: str = ""
    in_place_buffer_size: InPlaceScratch | None = None
    in_place_c_calls: Callable[[Any], int] | None = None
    buffer_size: Scratch | None = None
    path: Path | None = None
    runtime_deps: tuple[str, ...] = ()
    to_cmsis: ToCmsis | None = None

    @property
    def is_portable(self) -> bool:
        """Ours (an mcu_ kernel of mcu_runtime/), not a CMSIS-NN function."""
        return is_portable(self.name)

    @property
    def by_rows(self) -> bool:
        """The layer may run a band of output rows at a time (a segment stage)."""
        return self.band is not None or self.row_band is not None

    @property
    def can_stream(self) -> bool:
        """The layer may run by rows or end a streamed segment as a sink."""
        return self.by_rows or self.sink is not None

