"""ldmatrix / stmatrix chosen from the offsets map (codegen/matrix_memory.py), on the layouts of
Triton's test_local_load_store_dot / test_local_load_store_mma / test_local_load_store:

* `matrix_mode` says plain, `.trans` or neither from the map alone (16-byte rows or not);
* tiles go through a shared buffer and come back exact on the SIMT evaluator, which checks
  every access's alignment (an ldmatrix row at an 8-byte boundary is "misaligned address" on
  the GPU: the H200 failure of a `vec = 4` swizzle) and bounds (4 warps over a 16-row operand);
* the PTX has ldmatrix / stmatrix exactly where the map allows them, and ptxas takes it.
"""
from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.codegen.matrix_memory import matrix_mode
from compiler.compiler import compile as compile_kernel
from compiler.dialects import ttg  # noqa: F401  (registers the layout parsers)
from compiler.ir import parse_module
from compiler.ir.parser import Parser
from compiler.ir.types import FloatType, TensorType

from . import simt
from .test_convert_layout_simt import LOAD
from .test_local_memory_simt import round_trip_kernel

V2 = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>"
V2_ROWS = ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 4], "
           "instrShape = [16, 8]}>")
V3 = ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
      "instrShape = [16, 64, 16]}>")


def dot(op_idx: int, k_width: int, parent: str = V2) -> str:
    return f"#ttg.dot_op<{{opIdx = {op_idx}, parent = {parent}, kWidth = {k_width}}}>"


def swizzled(vec: int, per_phase: int, max_phase: int, order) -> str:
    return (f"#ttg.swizzled_shared<{{vec = {vec}, perPhase = {per_phase}, maxPhase = "
            f"{max_phase}, order = {list(order)}}}>")


NVMMA128 = "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>"


def _encoding(text: str):
    return Parser(text).encoding_ref()


def _mode(shared: str, layout: str, shape, element: str = "f16"):
    t = TensorType(tuple(shape), FloatType(element), _encoding(layout))
    return matrix_mode(_encoding(shared), t)


@pytest.mark.parametrize("layout,shared,shape,expected", [
    (dot(1, 2), swizzled(8, 1, 8, [0, 1]), (16, 32), False),   # K contiguous: rows along K
    (dot(1, 2), swizzled(8, 1, 8, [1, 0]), (16, 32), True),    # N contiguous: .trans
    (dot(0, 2), swizzled(8, 1, 8, [1, 0]), (16, 32), False),
    (dot(1, 2), swizzled(4, 2, 4, [0, 1]), (16, 32), None),    # 8-byte groups: no 16-byte rows
    (dot(1, 4), swizzled(16, 1, 16, [1, 0]), (16, 32), True),  # kWidth 4: pairs along K too
    (dot(0, 4), swizzled(16, 1, 16, [1, 0]), (16, 32), None),  # 4 registers along K: not a pair
    (V2, swizzled(8, 1, 1, [1, 0]), (64, 64), False),          # the accumulator, plain
    (V3, NVMMA128, (128, 128), False),
    (V3, swizzled(8, 1, 8, [0, 1]), (128, 128), True),         # M contiguous: .trans
    (V3, swizzled(4, 1, 8, [0, 1]), (128, 128), None),         # 8-byte groups
])
def test_matrix_mode_is_read_from_the_offsets_map(layout, shared, shape, expected):
    assert _mode(shared, layout, shape) is expected


def test_matrix_mode_needs_16_bit_elements():
    assert _mode(swizzled(8, 1, 8, [0, 1]), dot(1, 1), (16, 32), "f32") is None


NUMPY = {"f16": np.float16, "f32": np.float32}

# (name, shape, type, writer, reader, shared, store_op, warps, ldmatrix?, stmatrix?)
CASES = [
    # test_local_load_store_dot's H200 failures: a vec-4 swizzle (misaligned ldmatrix rows)...
    ("dot_b_vec4", (16, 32), "f16", LOAD, dot(1, 2), swizzled(4, 2, 4, [0, 1]), False, 4,
     False, False),
    ("dot_b_k1_vec4", (16, 32), "f16", LOAD, dot(1, 1), swizzled(4, 2, 4, [0, 1]), False, 4,
     False, False),
    # ... and kWidth 4 (an IndexError in the lowering), in f16 and f32
    ("dot_b_k4_f16", (16, 32), "f16", LOAD, dot(1, 4), swizzled(16, 1, 16, [1, 0]), False, 4,
     True, False),
    ("dot_a_k4_f16", (16, 32), "f16", LOAD, dot(0, 4), swizzled(16, 1, 16, [1, 0]), False, 4,
     False, False),
    ("dot_b_k4_f32", (16, 32), "f32", LOAD, dot(1, 4), swizzled(4, 2, 4, [0, 1]), False, 4,
     False, False),
    # ldmatrix where the rows are whole: plain, .trans, and 4 warps over a 16-row A operand
    ("dot_b_plain", (16, 32), "f16", LOAD, dot(1, 2), swizzled(8, 1, 8, [0, 1]), False, 4,
     True, False),
    ("dot_b_trans", (16, 32), "f16", LOAD, dot(1, 2), swizzled(8, 1, 8, [1, 0]), False, 4,
     True, False),
    ("dot_a_warps_wrap", (16, 32), "f16", LOAD, dot(0, 2), swizzled(8, 1, 8, [1, 0]), False, 4,
     True, False),
    # stmatrix from mma accumulators (test_local_load_store_mma), ldmatrix back into them
    ("mma_v2_store", (64, 64), "f16", V2_ROWS, V2_ROWS, swizzled(8, 1, 1, [1, 0]), True, 4,
     True, True),
    ("mma_v3_nvmma", (128, 128), "f16", V3, LOAD, NVMMA128, False, 4, False, True),
    ("mma_v3_m_major", (128, 128), "f16", V3, LOAD, swizzled(8, 1, 8, [0, 1]), False, 4,
     False, True),
    ("mma_v3_vec4", (128, 128), "f16", V3, V3, swizzled(4, 1, 8, [0, 1]), True, 4,
     False, False),
]


def _case_text(case) -> str:
    name, shape, *rest = case[:8]
    return round_trip_kernel(*shape, *rest)


@pytest.mark.parametrize("name,shape,ty,writer,reader,shared,store_op,warps,ld,st", CASES,
                         ids=[c[0] for c in CASES])
def test_tile_comes_back_aligned_and_in_bounds(name, shape, ty, writer, reader, shared,
                                               store_op, warps, ld, st):
    text = _case_text(next(c for c in CASES if c[0] == name))
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
    data = (np.arange(shape[0] * shape[1]) % 2048).reshape(shape).astype(NUMPY[ty])
    out = np.zeros_like(data)
    memory = simt.run_kernel(kernel, (1,), [data, out])
    np.testing.assert_array_equal(memory.read(1, out), data)
    assert ("ldmatrix" in kernel.llvm_ir) is ld
    assert ("stmatrix" in kernel.llvm_ir) is st


@pytest.mark.parametrize("name", ["dot_b_trans", "mma_v2_store", "mma_v3_nvmma"])
def test_ptxas_takes_the_matrix_instructions(name, tmp_path):
    case = next(c for c in CASES if c[0] == name)
    path = tmp_path / "kernel.ttgir"
    path.write_text(_case_text(case))
    compiled = compile_kernel(str(path))
    assert compiled.asm["cubin"]
    if case[9]:
        assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in compiled.asm["ptx"]
    if case[8]:
        assert "ldmatrix.sync.aligned.m8n8.x4" in compiled.asm["ptx"]


def test_no_stmatrix_before_sm_90():
    case = next(c for c in CASES if c[0] == "mma_v2_store")
    kernel = lower_module(parse_module(_case_text(case)),
                          LoweringOptions(optimize=False, arch=80))
    assert "stmatrix" not in kernel.llvm_ir and "ldmatrix" in kernel.llvm_ir


RANK3 = ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1, 1], "
         "instrShape = [1, 16, 8]}>")


def test_rank3_mma_v2_maps_its_batch_dim_to_registers():
    """test_local_load_store's rank-3 mma (8x16x32): lanes and registers of each 16x8 tile as
    in rank 2, the batch dim spread over the warps, then repeated by registers; every element
    held exactly once."""
    ll = to_linear_layout(_encoding(RANK3), (8, 16, 32))
    tile = to_linear_layout(_encoding(V2.replace("[4, 1]", "[1, 1]")), (16, 32))
    assert [v[1:] for v in ll.bases("lane")] == list(tile.bases("lane"))
    assert all(v[0] == 0 for v in ll.bases("lane"))
    assert [v for v in ll.bases("warp")] == [(1, 0, 0), (2, 0, 0)]
    assert ll.is_invertible()


def test_rank3_mma_v3_accumulator_is_refused_by_name():
    from compiler.analysis.layout_to_linear import LayoutConversionError
    v3 = V3.replace("[4, 1]", "[4, 1, 1]").replace("[16, 64, 16]", "[16, 64, 16]")
    with pytest.raises(LayoutConversionError, match="wgmma.* accumulator has rank 2"):
        to_linear_layout(_encoding(v3), (1, 64, 64))


def test_evaluator_reports_a_misaligned_vector_access():
    """The SIMT evaluator's alignment check: a 16-byte vector load at 8 bytes past an aligned
    shared address is what the GPU reports as a misaligned address."""
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), name="k")
    b = ir.IRBuilder(fn.append_basic_block())
    smem = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), 64), "global_smem", 3)
    ptr = b.gep(smem, [ir.IntType(32)(0), ir.IntType(32)(8)])
    vec = b.bitcast(ptr, ir.PointerType(ir.VectorType(ir.HalfType(), 8), 3))
    b.load(vec, align=16)
    b.ret_void()
    with pytest.raises(simt.Misaligned, match="not aligned to 16 bytes"):
        simt.CTA(fn, 1, simt.Memory(), (0, 0, 0), (1, 1, 1), [], 64).run()


@pytest.mark.parametrize("layout", ["mma_v2", "mma_v3", "dot_a_v2", "dot_b_v2", "dot_a_v3",
                                    "blocked_row", "linear"])
def test_layout_matrix_shared_cells_use_the_matrix_instructions(layout):
    """The layout matrix's `shared` cells (a 16-byte-row buffer): every tensor-core layout
    goes both ways by stmatrix / ldmatrix; other layouts by vector loads and stores."""
    from tests.cpu import layout_matrix
    case = layout_matrix.case(f"{layout}-shared")
    llvm = lower_module(parse_module(case.text), LoweringOptions(optimize=False)).llvm_ir
    tensor_core = not layout.startswith(("blocked", "linear"))
    assert ("ldmatrix" in llvm) is tensor_core and ("stmatrix" in llvm) is tensor_core
