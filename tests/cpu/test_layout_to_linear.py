"""Every ttg encoding as a linear layout (compiler.analysis.layout_to_linear), checked against
an independent model: the element -> (warp, lane, register) model of compiler.analysis.layouts,
the PTX ISA's fragment figures for mma.m16n8k16 and wgmma.m64nNk16 accumulators, bases that
Triton's own LinearLayoutConversionsTest expects (rewritten here as our cases), and the
layouts of Triton 3.6's reference ttgir for the H200."""
from __future__ import annotations

import pathlib
import re

import pytest

from compiler.analysis import layouts
from compiler.analysis.layout_to_linear import (LayoutConversionError, to_linear_encoding,
                                                to_linear_layout)
from compiler.analysis.linear_layout import LinearLayout
from compiler.dialects.ttg import (BlockedEncoding, DotOperandEncoding, LinearEncoding,
                                   NVMMASharedEncoding, NvidiaMmaEncoding, SliceEncoding,
                                   SwizzledSharedEncoding)
from compiler.ir.parser import Parser

REFERENCE = pathlib.Path("/work/shared/reference/triton-3.6-h200")


def _ll_elements(ll, warp, lane):
    return [ll.apply_tuple(register=r, lane=lane, warp=warp)
            for r in range(ll.in_dim_size("register"))]


BLOCKED = [BlockedEncoding((1, 4), (4, 8), (2, 2), (1, 0)),
           BlockedEncoding((2, 1), (8, 4), (1, 4), (0, 1)),
           BlockedEncoding((1, 1), (1, 32), (4, 1), (1, 0))]
SHAPES = [(16, 16), (64, 32), (8, 128), (2, 4)]
MMA_V2 = [NvidiaMmaEncoding(2, 0, w, (16, 8)) for w in [(1, 1), (2, 2), (4, 1), (1, 4)]]


def _model_cases():
    for b in BLOCKED:
        for s in SHAPES:
            yield b, s, True
            for d in (0, 1):
                yield SliceEncoding(d, b), tuple(x for i, x in enumerate(s) if i != d), True
            for op in (0, 1):
                # FMA operands: same elements per thread, registers in another order when
                # K is not the parent's fastest dim
                yield DotOperandEncoding(op, b), s, b.order[0] == 1 - op
    yield BlockedEncoding((4,), (32,), (4,), (0,)), (1024,), True
    yield BlockedEncoding((4,), (32,), (4,), (0,)), (16,), True
    for m in MMA_V2:
        for s in [(16, 8), (32, 32), (64, 128), (128, 64)]:
            yield m, s, True
        yield DotOperandEncoding(0, m, 2), (64, 32), True
        yield DotOperandEncoding(1, m, 2), (32, 64), True


@pytest.mark.parametrize("enc,shape,same_order", list(_model_cases()),
                         ids=lambda x: str(x)[:48])
def test_matches_the_ownership_model(enc, shape, same_order):
    ll = to_linear_layout(enc, shape)
    assert ll.in_dim_size("register") == layouts.elements_per_thread(enc, shape)
    for warp in range(layouts.num_warps_of(enc)):
        for lane in range(32):
            want = layouts.thread_elements(enc, shape, warp, lane)
            got = _ll_elements(ll, warp, lane)
            assert (got == want) if same_order else (sorted(got) == sorted(want)), (warp, lane)


def test_mma_m16n8k16_accumulator_follows_the_ptx_fragment():
    # PTX ISA "mma.m16n8k16 ... C/D fragment": groupID g = lane >> 2, t = lane % 4;
    # c0, c1 at (g, 2t + i), c2, c3 at (g + 8, 2t + i)
    ll = to_linear_layout(NvidiaMmaEncoding(2, 0, (1, 1), (16, 8)), (16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        assert _ll_elements(ll, 0, lane) == [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t),
                                             (g + 8, 2 * t + 1)]


def test_mma_m16n8k16_operands_follow_the_ptx_fragments():
    m = NvidiaMmaEncoding(2, 0, (1, 1), (16, 8))
    a = to_linear_layout(DotOperandEncoding(0, m, 2), (16, 16))
    b = to_linear_layout(DotOperandEncoding(1, m, 2), (16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        assert _ll_elements(a, 0, lane) == [
            (g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1),
            (g, 2 * t + 8), (g, 2 * t + 9), (g + 8, 2 * t + 8), (g + 8, 2 * t + 9)]
        assert _ll_elements(b, 0, lane) == [(2 * t, g), (2 * t + 1, g), (2 * t + 8, g),
                                            (2 * t + 9, g)]


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_m64nNk16_accumulator_follows_the_ptx_fragment(n):
    # PTX ISA "wgmma .m64nNk16 D fragment": warp w of the warp group owns rows 16w..16w+15;
    # d[4i + j]: row 16w + g + 8 * (j >> 1), column 8i + 2t + (j & 1)
    ll = to_linear_layout(NvidiaMmaEncoding(3, 0, (4, 1), (16, n, 16)), (64, n))
    for warp in range(4):
        for lane in range(32):
            g, t = lane >> 2, lane % 4
            want = [(16 * warp + g + 8 * (j >> 1), 8 * i + 2 * t + (j & 1))
                    for i in range(n // 8) for j in range(4)]
            assert _ll_elements(ll, warp, lane) == want


def _L(register, lane, warp, rank=2):
    return LinearLayout({"register": register, "lane": lane, "warp": warp, "block": []},
                        [f"dim{i}" for i in range(rank)])


# Expected bases from Triton's unittest/Dialect/TritonGPU/LinearLayoutConversionsTest.cpp
# (the single-CTA cases), written as our own cases.
LANES_MMA = [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]
TRITON_CASES = [
    ("SimpleBlocked", BlockedEncoding((1,), (4,), (4,), (0,)), (16,),
     _L([], [1, 2], [4, 8], 1)),
    ("ShapeLargerThanLayout", BlockedEncoding((1,), (4,), (4,), (0,)), (128,),
     _L([16, 32, 64], [1, 2], [4, 8], 1)),
    ("ShapeLargerThanLayout2DDegenerate", BlockedEncoding((1, 1), (4, 1), (4, 1), (0, 1)),
     (128, 1), _L([(16, 0), (32, 0), (64, 0)], [(1, 0), (2, 0)], [(4, 0), (8, 0)])),
    ("ShapeSmallerThanLayout", BlockedEncoding((4,), (4,), (4,), (0,)), (8,),
     _L([1, 2], [4, 0], [0, 0], 1)),
    ("ReversedOrder", BlockedEncoding((1, 1), (32, 1), (1, 8), (0, 1)), (1, 64),
     _L([(0, 8), (0, 16), (0, 32)], [(0, 0)] * 5, [(0, 1), (0, 2), (0, 4)])),
    ("ReplicateInRegisterDim", BlockedEncoding((2,), (4,), (1,), (0,)), (32,),
     _L([1, 8, 16], [2, 4], [], 1)),
    ("Blocked4D", BlockedEncoding((1, 1, 1, 4), (2, 1, 1, 16), (1, 2, 4, 1), (3, 0, 1, 2)),
     (2, 1, 1, 1), _L([(0, 0, 0, 0)] * 2, [(0, 0, 0, 0)] * 4 + [(1, 0, 0, 0)],
                      [(0, 0, 0, 0)] * 3, 4)),
    ("MMAv2_32x32", NvidiaMmaEncoding(2, 0, (1, 1), (16, 8)), (32, 32),
     _L([(0, 1), (8, 0), (0, 8), (0, 16), (16, 0)], LANES_MMA, [])),
    ("MMAv2_ExtendDim2", NvidiaMmaEncoding(2, 0, (1, 1), (16, 8)), (16, 128),
     _L([(0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (0, 64)], LANES_MMA, [])),
    ("MMAv3_64x16", NvidiaMmaEncoding(3, 0, (4, 1), (16, 8, 8)), (64, 16),
     _L([(0, 1), (8, 0), (0, 8)], LANES_MMA, [(16, 0), (32, 0)])),
    ("MMAv3_128x16", NvidiaMmaEncoding(3, 0, (4, 1), (16, 16, 8)), (128, 16),
     _L([(0, 1), (8, 0), (0, 8), (64, 0)], LANES_MMA, [(16, 0), (32, 0)])),
    ("MMAv3_1024x1024", NvidiaMmaEncoding(3, 0, (4, 1), (16, 16, 8)), (1024, 1024),
     _L([(0, 1), (8, 0)] + [(0, 8 << i) for i in range(7)] + [(64 << i, 0) for i in range(4)],
        LANES_MMA, [(16, 0), (32, 0)])),
    ("MMAv3_4x2Warps_64x32", NvidiaMmaEncoding(3, 0, (4, 2), (16, 32, 16)), (64, 32),
     _L([(0, 1), (8, 0), (0, 8), (0, 16)], LANES_MMA, [(16, 0), (32, 0), (0, 0)])),
    ("MMAv3_4x2Warps_256x64", NvidiaMmaEncoding(3, 0, (4, 2), (16, 32, 16)), (256, 64),
     _L([(0, 1), (8, 0), (0, 8), (0, 16), (64, 0), (128, 0)], LANES_MMA,
        [(16, 0), (32, 0), (0, 32)])),
    ("MMAv3_4x4Warps_16x16", NvidiaMmaEncoding(3, 0, (4, 4), (16, 16, 8)), (16, 16),
     _L([(0, 1), (8, 0), (0, 8)], LANES_MMA, [(0, 0)] * 4)),
    ("MMAv3_4x4Warps_32x32", NvidiaMmaEncoding(3, 0, (4, 4), (16, 16, 8)), (32, 32),
     _L([(0, 1), (8, 0), (0, 8)], LANES_MMA, [(16, 0), (0, 0), (0, 16), (0, 0)])),
]


@pytest.mark.parametrize("name,enc,shape,expected", TRITON_CASES, ids=[c[0] for c in TRITON_CASES])
def test_triton_expected_bases(name, enc, shape, expected):
    assert to_linear_layout(enc, shape) == expected


def test_slice_drops_the_dim_and_zero_registers():
    parent = BlockedEncoding((2, 4), (4, 8), (1, 1), (1, 0))
    # dim1 has 4 registers but the slice along dim 0 keeps only size 2: the register basis
    # that wrapped to zero is removed, as Triton does
    ll = to_linear_layout(SliceEncoding(0, parent), (2,))
    assert ll.bases("register") == ((1,),)
    assert ll.bases("lane") == ((0,),) * 5


def test_swizzled_shared_xors_columns_by_row_phase():
    enc = SwizzledSharedEncoding(8, 1, 8, (1, 0))
    ll = to_linear_layout(enc, (32, 64))
    assert ll.in_dims == ("offset", "block")
    for offset in range(32 * 64):
        row, col = offset // 64, offset % 64
        assert ll.apply(offset=offset) == {"dim0": row, "dim1": col ^ (8 * (row % 8))}
    assert ll.is_invertible()
    plain = to_linear_layout(SwizzledSharedEncoding(1, 1, 1, (0, 1)), (4, 8))
    assert plain.apply(offset=5) == {"dim0": 1, "dim1": 1}


@pytest.mark.parametrize("swizzle", [32, 64, 128])
def test_nvmma_shared_swizzles_16_byte_chunks(swizzle):
    enc = NVMMASharedEncoding(swizzle, False, 16)
    cols = swizzle // 2                   # fp16 elements per swizzle row
    ll = to_linear_layout(enc, (64, 128))
    assert ll.is_invertible()
    per_phase, max_phase = 128 // swizzle, swizzle // 16
    for offset in range(64 * 128):
        block, within = divmod(offset, 64 * cols)
        row, col = divmod(within, cols)
        chunk = (col // 8) ^ ((row // per_phase) % max_phase)
        assert ll.apply(offset=offset) == {"dim0": row, "dim1": block * cols + chunk * 8 + col % 8}


def test_nvmma_shared_unswizzled_and_transposed():
    flat = to_linear_layout(NVMMASharedEncoding(0, False, 16), (16, 32))
    assert [flat.apply_tuple(offset=o) for o in (1, 32, 33)] == [(0, 1), (1, 0), (1, 1)]
    t = to_linear_layout(NVMMASharedEncoding(128, True, 16), (64, 64))
    assert t.is_invertible()
    assert [t.apply_tuple(offset=o) for o in (1, 64)] == [(1, 0), (8, 1)]


def test_linear_encoding_round_trips_as_triton_writes_it():
    text = ("#ttg.linear<{register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], "
            "[4, 0]], warp = [[16, 0]], block = []}>")
    enc = Parser(text).encoding_ref()
    assert isinstance(enc, LinearEncoding) and str(enc) == text
    ll = to_linear_layout(enc, (32, 8))
    assert to_linear_encoding(ll) == enc
    mma = to_linear_layout(NvidiaMmaEncoding(2, 0, (2, 1), (16, 8)), (32, 8))
    assert ll == mma


def test_bad_layouts_raise_conversion_errors():
    m3 = NvidiaMmaEncoding(3, 0, (4, 1), (16, 64, 16))
    with pytest.raises(LayoutConversionError, match="shared memory"):
        to_linear_layout(DotOperandEncoding(1, m3, 2), (64, 64))
    with pytest.raises(LayoutConversionError, match="kWidth"):
        to_linear_layout(DotOperandEncoding(0, m3), (64, 64))
    with pytest.raises(LayoutConversionError, match="rank"):
        to_linear_layout(BlockedEncoding((1,), (32,), (1,), (0,)), (4, 4))
    with pytest.raises(LayoutConversionError, match="powers of two"):
        to_linear_layout(BlockedEncoding((1,), (32,), (1,), (0,)), (48,))


@pytest.mark.skipif(not REFERENCE.exists(), reason="Triton reference ttgir not present")
def test_reference_ttgir_layouts_convert():
    # Every layout alias in Triton 3.6's H200 ttgir parses and converts; the mma v3 accumulator
    # of the matmul covers its 128x256 tile exactly once per element.
    seen = 0
    for path in sorted(REFERENCE.glob("*.ttgir")):
        for line in path.read_text().splitlines():
            alias = re.match(r"#\w+ = (#ttg\.(blocked|nvidia_mma|nvmma_shared)<.*)$", line)
            if not alias:
                continue
            enc = Parser(alias[1]).encoding_ref()
            if isinstance(enc, NvidiaMmaEncoding):
                ll = to_linear_layout(enc, (128, 256))
                assert ll.is_injective() and ll.is_surjective()
            elif isinstance(enc, BlockedEncoding):
                ll = to_linear_layout(enc, (1024,) * enc.rank)
                assert ll.is_surjective()
            else:
                assert to_linear_layout(enc, (128, 64)).is_invertible()
            seen += 1
    assert seen >= 5


def test_nvmma_shared_round_trips_as_triton_writes_it():
    text = "#ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = true, elementBitWidth = 16}>"
    enc = Parser(text).encoding_ref()
    assert enc == NVMMASharedEncoding(64, True, 16) and str(enc) == text
