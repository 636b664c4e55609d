"""Memory pools (issue 25): board `[[ram]]`/`[[flash]]` regions, `--pool`, placement by access
counts, one C array per pool."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import Pool, _load_all, load_board, parse_pool_option, pools_with_overrides
from emitter.cli import main
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.errors import QuantError, UsageError
from emitter.plan.arena import Plan
from emitter.plan.pools import access_counts, addresses, coalesce, main_reads
from emitter.render.bundle import render_bundle
from emitter.render.group import render_group
from emitter.render.write import write_bundle
from emitter.target.toolchain import missing_tools
from tests.harness.bundles import build_library, emit, run_c, shared_model
from tests.models.tiny import HELLO

# ---- boards --------------------------------------------------------------------------------------


def test_board_regions() -> None:
    m55 = load_board("cortex-m55")
    assert m55.ram_pools == (Pool("dtcm", 512 << 10, 0, 0x30000000), Pool("isram", 4 << 20, 1, 0x31000000))
    h7 = load_board("nucleo-h743zi2")
    assert h7.name == "stm32h743" and h7.core == "cortex-m7"
    assert [p.name for p in h7.ram_pools] == ["dtcm", "axisram", "sram123", "sram4"]
    assert sum(p.size for p in h7.ram_pools) == h7.ram_bytes
    assert h7.flash_regions == (Pool("flash", 2 << 20, 0, 0x08000000),)
    rt = load_board("imxrt1060")
    assert [(p.name, p.size >> 10, p.origin) for p in rt.ram_pools] == [
        ("dtcm", 128, 0x20000000), ("ocram", 256, 0x20200000), ("ocram2", 512, 0x20280000)]
    # no [[ram]]: one implicit pool of ram_bytes
    f411 = load_board("blackpill-f411")
    assert f411.ram_pools == (Pool("ram", 128 << 10, 0),)
    assert f411.flash_regions == (Pool("flash", 512 << 10, 0),)


def _write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.toml").write_text(text)


_CORE = """name = "core-x"
aliases = []
description = "x"
core = "core-x"
cflags = []
has_dsp = false
has_mve = false
has_fpu = false
ram_bytes = 0x10000
flash_bytes = 0x10000
[qemu]
machine = "m"
args = []
code = [0, 0x10000]
data = [0x20000000, 0x10000]
"""


def test_named_board_inherits_or_states_regions(tmp_path: Path) -> None:
    _write(tmp_path, "core-x", _CORE + '[[ram]]\nname = "fast"\nsize = 1024\nrank = 0\n'
           '[[ram]]\nname = "slow"\nsize = 4096\nrank = 1\n')
    _write(tmp_path, "inherits", 'name = "inherits"\naliases = []\ndescription = "i"\ncore = "core-x"\n')
    _write(tmp_path, "own", 'name = "own"\naliases = []\ndescription = "o"\ncore = "core-x"\n'
           '[[ram]]\nname = "tcm"\nsize = 2048\nrank = 0\norigin = 0x1000\n')
    boards = {b.name: b for b in _load_all(tmp_path)}
    assert [p.name for p in boards["inherits"].ram_pools] == ["fast", "slow"]
    assert boards["own"].ram_pools == (Pool("tcm", 2048, 0, 0x1000),)


@pytest.mark.parametrize(("ram", "message"), [
    ('[[ram]]\nname = "a"\nsize = 1\nrank = 0\nspeed = 3\n', "unknown key 'speed'"),
    ('[[ram]]\nname = "a"\nsize = 1\nrank = 0\n[[ram]]\nname = "a"\nsize = 2\nrank = 1\n', "listed twice"),
    ('[[ram]]\nname = "DTCM"\nsize = 1\nrank = 0\n', "lower-case C identifier"),
    ('[[ram]]\nname = "9a"\nsize = 1\nrank = 0\n', "lower-case C identifier"),
    ('[[ram]]\nname = "a"\nsize = "1"\nrank = 0\n', "'size' must be int"),
    ('[[ram]]\nname = "a"\nsize = 0\nrank = 0\n', "size must be positive"),
    ('[[ram]]\nname = "a"\nrank = 0\n', "missing size"),
    ('ram = 3\n', "'ram' must be list"),
])
def test_region_errors_name_the_file(tmp_path: Path, ram: str, message: str) -> None:
    core = _CORE.replace("[qemu]", ram + "[qemu]") if ram.startswith("ram") else _CORE + ram
    _write(tmp_path, "core-x", core)
    with pytest.raises(UsageError, match=message) as error:
        _load_all(tmp_path)
    assert "core-x.toml" in str(error.value)


# ---- --pool --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("dtcm=32768", ("dtcm", 32768)), ("dtcm=32K", ("dtcm", 32768)), ("dtcm=32k", ("dtcm", 32768)),
    ("dtcm=0x8000", ("dtcm", 32768)), ("sram_2=1M", ("sram_2", 1 << 20)), (" a = 16 ", ("a", 16)),
])
def test_pool_option(text: str, expected: tuple[str, int]) -> None:
    assert parse_pool_option(text) == expected


@pytest.mark.parametrize("text", ["dtcm", "dtcm=", "=32K", "DTCM=1", "dtcm=32KB", "dtcm=-1", "dtcm=0",
                                  "dtcm=0x", "dtcm=1.5K"])
def test_pool_option_errors(text: str) -> None:
    with pytest.raises(ValueError):
        parse_pool_option(text)


def test_pool_overrides() -> None:
    m55 = load_board("cortex-m55")
    pools = pools_with_overrides(m55.ram_pools, (("dtcm", 32768), ("extra", 1024), ("dtcm", 65536)))
    assert pools == (Pool("dtcm", 65536, 0, 0x30000000), Pool("isram", 4 << 20, 1, 0x31000000),
                     Pool("extra", 1024, 2))
    assert pools_with_overrides(load_board("cortex-m4").ram_pools, (("ram", 100),)) == (Pool("ram", 100, 0),)
    assert pools_with_overrides((), (("a", 100), ("b", 200))) == (Pool("a", 100, 0), Pool("b", 200, 1))


# ---- placement -----------------------------------------------------------------------------------


def _kws() -> Path:
    path = shared_model("mlperf_kws_dscnn")
    if not path.is_file():
        pytest.skip("../shared/models is not present")
    return path


def _check_placement(c: Compiled, pools: tuple[Pool, ...]) -> None:
    """Every buffer in one listed pool, inside it, and no two live buffers of a pool overlap."""
    placement = c.pools
    assert placement is not None
    size = {p.name: p.size for p in pools}
    used = {u.pool.name: u.used for u in placement.pools}
    assert sum(used.values()) == c.plan.arena_size
    spots = []
    for b in c.plan.buffers:
        pool, at = placement.split(b.offset)
        assert placement.where[b.name] == pool
        assert 0 <= at and at + b.size <= used[pool] <= size[pool], (b, pool)
        spots.append((pool, at, b))
    for i, (pool, at, a) in enumerate(spots):
        for pool2, at2, b in spots[:i]:
            live = a.first <= b.last and b.first <= a.last
            if pool == pool2 and live and at < at2 + b.size and at2 < at + a.size:
                # only where the one-arena plan let them overlap too (a layer in place)
                single = compile_model(c.model.path, board=c.options.board, memory=c.options.memory)
                ofs = {x.name: x.offset for x in single.plan.buffers}
                assert ofs[a.name] - ofs[b.name] == at - at2, (a, b)


@pytest.mark.parametrize("memory", ["layer", "stream", "inplace"])
def test_two_pools_place_every_buffer(memory: str) -> None:
    m55 = load_board("cortex-m55")
    single = compile_model(_kws(), board=m55, memory=memory)
    half = single.plan.arena_size // 2
    c = compile_model(_kws(), board=m55, memory=memory, pools=(("dtcm", half),))
    pools = pools_with_overrides(m55.ram_pools, (("dtcm", half),))
    assert c.pools is not None and c.pools.multi
    _check_placement(c, pools)
    # placement changes no instruction: the same schedule, kernels and run modes
    def shape(p: Plan) -> tuple[object, ...]:
        sch = p.schedule
        return (sch.kind, sch.exact, sch.host_inputs, p.modes,
                [(s.first, s.last, s.caps, s.scratch, s.lean) for s in sch.segments])
    assert shape(c.plan) == shape(single.plan)
    assert [p.kernel for p in c.prepared] == [p.kernel for p in single.prepared]
    assert c.pools.single_size == single.plan.arena_size
    # the densest buffer that fits the fastest pool alone is in it
    counts = c.pools.accesses
    fits = [b for b in c.plan.buffers if b.size <= half]
    densest = max(fits, key=lambda b: (counts[b.name] / b.size, counts[b.name]))
    assert c.pools.where[densest.name] == "dtcm"
    dtcm = c.pools.pools[0]
    assert dtcm.pool.name == "dtcm" and dtcm.accesses / c.pools.total_accesses > 0.5


def test_coalesce_reuses_addresses() -> None:
    """Four layers' outputs, each live two steps, packed at three addresses: coalescing ping-pongs
    them between two (the run function then keeps both in registers), same pool size."""
    spans = [(100, 0, 1), (100, 1, 2), (100, 2, 3), (100, 3, 4)]
    starts = [[0]] * 4
    packed = [0, 100, 200, 0]
    moved = coalesce(spans, packed, 300, starts, 4, 0)
    assert moved == [0, 100, 0, 100]
    assert len(addresses(moved, starts, 0)) == 2 < len(addresses(packed, starts, 0))
    # already two addresses: unchanged; guard bytes before each unit are kept
    assert coalesce(spans, [0, 100, 0, 100], 300, starts, 4, 0) == [0, 100, 0, 100]
    assert coalesce(spans, [16, 148, 280, 16], 396, starts, 4, 16) == [16, 148, 16, 148]


def test_coalesce_keeps_pool_size_lifetimes_and_alignment() -> None:
    """Random units: the coalesced offsets stay in the pool, aligned, with no two units that are
    live at once overlapping, and never more distinct addresses than the packing."""
    from emitter.plan.arena import place

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 9))
        spans = []
        for _ in range(n):
            first = int(rng.integers(0, 8))
            spans.append((int(rng.integers(1, 64)) * 4, first, first + int(rng.integers(0, 3))))
        starts = [[0] if rng.random() < 0.8 else [0, 4] for _ in range(n)]
        guard = int(rng.choice([0, 16]))
        packed, size = place(spans, 16, guard)
        moved = coalesce(spans, packed, size, starts, 16, guard)
        assert len(addresses(moved, starts, guard)) <= len(addresses(packed, starts, guard))
        padded = [e + 2 * guard for e, _, _ in spans]
        for u, at in enumerate(moved):
            assert (at - guard) % 16 == 0 and 0 <= at - guard and at - guard + padded[u] <= size
            for v in range(u):
                live = spans[u][1] <= spans[v][2] and spans[v][1] <= spans[u][2]
                assert not (live and at < moved[v] + padded[v] and moved[v] < at + padded[u]), (spans, moved)


def test_access_counts_model_windows() -> None:
    """A depthwise layer reads each window byte once, a conv once per two output channels (from
    its scratch where it gathers windows there); outputs are written once."""
    c = compile_model(_kws(), board=load_board("cortex-m55"), memory="layer", pools=(("dtcm", 8192),))
    assert c.pools is not None
    k = next(k for k, p in enumerate(c.prepared) if p.kernel == "mcu_depthwise_conv2d_s8")
    call, params = c.prepared[k], c.prepared[k].params
    w = params.window()
    nbytes = c.graph.t(c.graph.nodes[k].inputs[0]).nbytes
    reads, win = main_reads(call, nbytes)
    assert reads == win == w.output.n * w.output.h * w.output.w * params.filter.h * params.filter.w * w.input.c
    assert reads > 8 * nbytes  # a 3x3 window: each byte read about 9 times
    k = next(k for k, p in enumerate(c.prepared) if p.kernel == "mcu_conv2d_s8" and p.params.filter.h == 1)
    call = c.prepared[k]
    reads, win = main_reads(call, c.graph.t(c.graph.nodes[k].inputs[0]).nbytes)
    assert win == c.graph.t(c.graph.nodes[k].inputs[0]).nbytes and reads == call.macs // 2 == win * 64 // 2
    softmax = c.prepared[len(c.prepared) - 1]
    assert main_reads(softmax, 12) == (12, 0)
    counts = access_counts(c.graph, c.prepared, c.plan)
    assert sum(counts.values()) == c.pools.total_accesses > 0


def test_one_pool_output_unchanged(tmp_path: Path) -> None:
    """The plan fits the fastest pool: byte-identical to the one-arena bundle."""
    m55 = load_board("cortex-m55")
    for path, memory in ((HELLO, "layer"), (_kws(), "stream")):
        c = compile_model(path, board=m55, memory=memory)
        assert c.pools is not None and not c.pools.multi and c.pools.pools[0].pool.name == "dtcm"
        plain = replace(c, pools=None)
        assert render_bundle(c, "", "cortex-m55") == render_bundle(plain, "", "cortex-m55")
        big = compile_model(path, board=m55, memory=memory, pools=(("dtcm", 1 << 20), ("extra", 4096)))
        assert render_bundle(big, "", "cortex-m55") == render_bundle(plain, "", "cortex-m55")
    # a board without [[ram]]: one implicit pool, the arena as always
    c4 = compile_model(HELLO, board=load_board("cortex-m4"))
    assert c4.pools is not None and c4.pools.pools[0].pool.name == "ram"
    assert render_bundle(c4, "", "cortex-m4") == render_bundle(replace(c4, pools=None), "", "cortex-m4")


def test_pools_too_small_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([str(_kws()), "--board", "m55", "--pool", "dtcm=1K", "--pool", "isram=2K", "-o",
                 str(tmp_path / "b"), "--quiet", "--memory", "layer"])
    err = capsys.readouterr().err
    assert code == 2 and "dtcm (1,024 bytes)" in err and "isram (2,048 bytes)" in err and "--pool" in err
    with pytest.raises(SystemExit) as exit_:
        main([str(_kws()), "--board", "m55", "--pool", "dtcm=12KB", "-o", str(tmp_path / "c")])
    assert exit_.value.code == 2 and "--pool" in capsys.readouterr().err


def _bundle_c(tmp_path: Path, c: Compiled) -> str:
    return (emit(c, tmp_path / c.name) / f"{c.name}.c").read_text()


def test_two_pool_bundles_run_bit_exact_on_host(tmp_path: Path) -> None:
    """Layer, streamed (rings in both pools), in-place (input in the arena) and guard builds."""
    m55 = load_board("cortex-m55")
    cases = [compile_model(_kws(), name=f"p_{memory}{int(guard)}", board=m55, memory=memory, guard=guard,
                           pools=(("dtcm", size),), isa="c")
             for memory, guard, size in (("layer", False, 6000), ("stream", False, 3000), ("inplace", False, 6000),
                                         ("layer", True, 6000))]
    bundles = []
    for c in cases:
        assert c.pools is not None and c.pools.multi
        text = _bundle_c(tmp_path, c)
        assert f"{c.name}_arena_dtcm[" in text and f"{c.name}_arena_isram[" in text
        assert 'section(".bss.mcugen_dtcm")' in text and f"{c.name}_arena[" not in text
        header = (tmp_path / c.name / f"{c.name}.h").read_text()
        assert f"{c.name.upper()}_POOL_DTCM_SIZE {c.pools.pools[0].used}" in header
        weights = (tmp_path / c.name / f"{c.name}_weights.c").read_text()
        assert f"{c.name.upper()}_WEIGHTS_L1_ATTRIBUTES" in weights
        rep = json.loads((tmp_path / c.name / "report.json").read_text())
        assert [p["name"] for p in rep["memory"]["pools"]] == ["dtcm", "isram"]
        html = (tmp_path / c.name / "report.html").read_text()
        assert 'id="memory-pool-dtcm"' in html and 'id="memory-pool-isram"' in html
        bundles.append(tmp_path / c.name)
    lib = build_library(bundles, tmp_path / "libpools.so")
    rng = np.random.default_rng(0)
    for c in cases:
        for _ in range(2):
            xs = [rng.integers(-128, 128, s).astype(np.int8) for s in c.input_shapes]
            for got, want in zip(run_c(lib, c, xs), golden_run(c, xs), strict=True):
                np.testing.assert_array_equal(got, want)


def test_group_bundle_shares_one_array_per_pool(tmp_path: Path) -> None:
    """Two models, one needing two pools: one shared array per pool, the largest need, both bit-exact."""
    m55 = load_board("cortex-m55")
    kws = compile_model(_kws(), name="kws", board=m55, pools=(("dtcm", 6000),), isa="c", memory="layer")
    hello = compile_model(HELLO, name="hello", board=m55, pools=(("dtcm", 6000),), isa="c")
    assert kws.pools is not None and kws.pools.multi and hello.pools is not None and not hello.pools.multi
    files, figures = render_group([kws, hello], "", "cortex-m55")
    write_bundle(files, tmp_path / "g")
    arena_h = files["kws_hello_arena.h"].decode()
    need = {u.pool.name: u.used for u in kws.pools.pools}
    assert f"#define KWS_HELLO_POOL_DTCM_SIZE {max(need['dtcm'], hello.plan.arena_size)}" in arena_h
    assert f"#define KWS_HELLO_POOL_ISRAM_SIZE {need['isram']}" in arena_h
    assert "#define hello_arena_dtcm kws_hello_arena_dtcm" in files["hello.h"].decode()
    assert "kws_hello_arena_isram" in figures.lines()[0]
    lib = build_library([tmp_path / "g"], tmp_path / "libgroup.so")
    rng = np.random.default_rng(1)
    for c in (kws, hello, kws):
        xs = [rng.integers(-128, 128, s).astype(np.int8) for s in c.input_shapes]
        for got, want in zip(run_c(lib, c, xs), golden_run(c, xs), strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.mark.qemu
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_two_pools_qemu_cortex_m55(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Host and QEMU bit-exact with two pools on cortex-m55 (the generic linker script takes both
    .bss.mcugen_* sections into ISRAM; a pool-aware one puts dtcm in the DTCM)."""
    code = main(["verify", str(_kws()), "--board", "cortex-m55", "--pool", "dtcm=8K", "--samples", "1",
                 "--quiet", "-o", str(tmp_path / "kws")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "QEMU cortex-m55 vs golden          bit-exact" in out
    assert "mlperf_kws_dscnn_arena_dtcm[" in (tmp_path / "kws" / "mlperf_kws_dscnn.c").read_text()


@pytest.mark.slow
def test_zoo_two_pools_bit_exact_on_host(tmp_path: Path) -> None:
    """Every int8 zoo model, whole-layer and streamed plans, with a fastest pool a third of the
    plan: bit-exact with the golden model on the host."""
    m55 = load_board("cortex-m55")
    compiled, bundles = [], []
    for path in sorted((Path(__file__).parent / "models" / "zoo" / "models").glob("*.onnx")):
        for memory in ("layer", "stream"):
            name = f"z_{path.stem}_{memory}"
            try:
                whole = compile_model(path, name=name, board=m55, memory=memory, isa="c")
            except QuantError:
                continue  # a float model
            c = compile_model(path, name=name, board=m55, memory=memory, isa="c",
                              pools=(("dtcm", max(64, whole.plan.arena_size // 3)),))
            compiled.append(c)
            bundles.append(emit(c, tmp_path / name))
    assert sum(1 for c in compiled if c.pools is not None and c.pools.multi) >= len(compiled) // 2
    lib = build_library(bundles, tmp_path / "libzoo.so")
    rng = np.random.default_rng(2)
    for c in compiled:
        xs = [rng.integers(-128, 128, s).astype(c.graph.t(n).dtype) for s, n in zip(c.input_shapes, c.graph.inputs,
                                                                                   strict=True)]
        for got, want in zip(run_c(lib, c, xs), golden_run(c, xs), strict=True):
            np.testing.assert_array_equal(got, want, err_msg=c.name)
