"""`ttg.convert_layout` between layouts of one shape, lowered from the two linear layouts and run
on the CPU SIMT evaluator (tests/cpu/simt.py): a tile is loaded in a blocked layout, converted
to X, then to Y, then back, and stored; the result must be the input. The chosen strategy is
visible as a comment in the LLVM IR, and a sample of the kernels goes through ptxas."""
from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.ir import parse_module

from .simt import run_kernel

LOAD = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
V2 = ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
      "instrShape = [16, 8]}>")
V3 = ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
      "instrShape = [16, 32, 16]}>")
LAYOUTS = {
    "rows": LOAD,
    "cols": "#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>",
    "square": "#ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], order = [0, 1]}>",
    "one": "#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [0, 1]}>",
    "mma_v2": V2,
    "mma_v3": V3,
    "dot_a_v2": f"#ttg.dot_op<{{opIdx = 0, parent = {V2}, kWidth = 2}}>",
    "dot_b_v2": f"#ttg.dot_op<{{opIdx = 1, parent = {V2}, kWidth = 2}}>",
    "dot_a_v3": f"#ttg.dot_op<{{opIdx = 0, parent = {V3}, kWidth = 2}}>",
    "dot_b_rows": f"#ttg.dot_op<{{opIdx = 1, parent = {LOAD}, kWidth = 0}}>",
    "linear": ("#ttg.linear<{register = [[0, 1], [8, 0], [0, 8], [32, 0]], lane = [[0, 2], "
               "[0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [0, 16]], block = []}>"),
}
M = N = 64


def tile_offsets(ty: str, m: int = M, n: int = N) -> str:
    """ttgir lines (continuation lines indented 8) making %off = row * n + column in #b (an
    m x n tile, #b0/#b1 its slices) and %sptr = %src + %off, for a kernel that loads its tile
    from %src."""
    M, N = m, n  # noqa: N806  (the tile's shape, named as in the module's default)
    lines = [
        f"%n = arith.constant dense<{N}> : tensor<{M}x1xi32, #b>",
        f"%r = tt.make_range {{end = {M} : i32, start = 0 : i32}} : tensor<{M}xi32, #b1>",
        f"%c = tt.make_range {{end = {N} : i32, start = 0 : i32}} : tensor<{N}xi32, #b0>",
        f"%r2 = tt.expand_dims %r {{axis = 1 : i32}} : tensor<{M}xi32, #b1> -> "
        f"tensor<{M}x1xi32, #b>",
        f"%rs = arith.muli %r2, %n : tensor<{M}x1xi32, #b>",
        f"%c2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<{N}xi32, #b0> -> "
        f"tensor<1x{N}xi32, #b>",
        f"%rb = tt.broadcast %rs : tensor<{M}x1xi32, #b> -> tensor<{M}x{N}xi32, #b>",
        f"%cb = tt.broadcast %c2 : tensor<1x{N}xi32, #b> -> tensor<{M}x{N}xi32, #b>",
        f"%off = arith.addi %rb, %cb : tensor<{M}x{N}xi32, #b>",
        f"%sp = tt.splat %src : !tt.ptr<{ty}> -> tensor<{M}x{N}x!tt.ptr<{ty}>, #b>",
        f"%sptr = tt.addptr %sp, %off : tensor<{M}x{N}x!tt.ptr<{ty}>, #b>, "
        f"tensor<{M}x{N}xi32, #b>",
    ]
    return "\n        ".join(lines)


def _kernel(x: str, y: str, ty: str) -> str:
    t = lambda name: f"tensor<{M}x{N}x{ty}, #{name}>"  # noqa: E731
    return textwrap.dedent(f"""
    #b = {LOAD}
    #b0 = #ttg.slice<{{dim = 0, parent = #b}}>
    #b1 = #ttg.slice<{{dim = 1, parent = #b}}>
    #x = {LAYOUTS[x]}
    #y = {LAYOUTS[y]}
    module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
      tt.func public @convert(%src: !tt.ptr<{ty}> {{tt.divisibility = 16 : i32}}, %dst: !tt.ptr<{ty}> {{tt.divisibility = 16 : i32}}) {{
        {tile_offsets(ty)}
        %v = tt.load %sptr : tensor<{M}x{N}x!tt.ptr<{ty}>, #b>
        %vx = ttg.convert_layout %v : {t("b")} -> {t("x")}
        %vy = ttg.convert_layout %vx : {t("x")} -> {t("y")}
        %back = ttg.convert_layout %vy : {t("y")} -> {t("b")}
        %dp = tt.splat %dst : !tt.ptr<{ty}> -> tensor<{M}x{N}x!tt.ptr<{ty}>, #b>
        %dptr = tt.addptr %dp, %off : tensor<{M}x{N}x!tt.ptr<{ty}>, #b>, tensor<{M}x{N}xi32, #b>
        tt.store %dptr, %back : tensor<{M}x{N}x!tt.ptr<{ty}>, #b>
        tt.return
      }}
    }}
    """)


NAMES = list(LAYOUTS)
# each layout converted to the next three (so each is a source and a destination against several
# kinds); tests/cpu/test_bank_conflicts.py checks the plans of every pair thread by thread
PAIRS = [(x, NAMES[(i + k) % len(NAMES)]) for i, x in enumerate(NAMES) for k in (1, 3, 6)]


@pytest.mark.parametrize("x,y", PAIRS)
def test_conversion_moves_every_element(x, y):
    ty = "f16" if (x + y).count("dot") else "f32"
    kernel = lower_module(parse_module(_kernel(x, y, ty)), LoweringOptions(optimize=False))
    data = np.arange(M * N).reshape(M, N).astype(np.float16 if ty == "f16" else np.float32)
    out = np.zeros_like(data)
    memory = run_kernel(kernel, (1,), [data, out])
    np.testing.assert_array_equal(memory.read(1, out), data)
    assert len(re.findall(r"; convert_layout: ", str(kernel.llvm_ir))) == 3


def test_strategies_are_recorded_in_the_llvm_ir():
    ir_text = str(lower_module(parse_module(_kernel("rows", "mma_v2", "f32")),
                               LoweringOptions(optimize=False)).llvm_ir)
    assert "; convert_layout: noop" in ir_text
    assert "; convert_layout: shared (swizzled" in ir_text


PTXAS_PAIRS = [("rows", "cols"), ("mma_v2", "rows"), ("mma_v3", "one"), ("dot_a_v2", "square"),
               ("linear", "dot_b_v2"), ("dot_a_v3", "mma_v3"), ("dot_b_rows", "rows")]


@pytest.mark.parametrize("x,y", PTXAS_PAIRS)
def test_conversion_ptx_is_accepted_by_ptxas(x, y):
    from compiler.codegen.toolchain import find_tool
    if find_tool("ptxas") is None:
        pytest.skip("no ptxas")
    from tests.cpu.codegen_kernels import compile_ttgir
    compiled = compile_ttgir(_kernel(x, y, "f16"), build_cubin=True)
    assert compiled.asm["cubin"]


def test_a_conversion_that_cannot_be_lowered_names_the_op_and_both_layouts():
    from compiler.codegen.lowering import LoweringError
    eight = ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = "
             "[4, 2], order = [1, 0]}>")
    text = _kernel("rows", "cols", "f32").replace(LAYOUTS["cols"], eight)
    with pytest.raises(LoweringError) as err:
        lower_module(parse_module(text), LoweringOptions(optimize=False))
    message = str(err.value)
    assert "ttg.convert_layout" in message and ".ttgir:" in message      # file:line
    assert "warpsPerCTA = [4, 2]" in message and "warpsPerCTA = [4, 1]" in message
    assert "spreads over 8 warps but the kernel has 4" in message


EPILOGUE = ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
            "order = [1, 0]}>")


@pytest.mark.parametrize("acc", ["mma_v2", "mma_v3"])
@pytest.mark.parametrize("arch", [90, 80])
def test_epilogue_conversion_stores_by_stmatrix_on_sm90(acc, arch):
    """An f16 accumulator into a layout that reads 8 elements a thread (the matmul epilogue's
    conversion): on sm_90 one stmatrix.x4 writes what took eight 4-byte stores (Triton writes
    those 16 bytes a lane with st.shared.v4 and reads them by ldmatrix), and the loads stay
    16 bytes wide; sm_80 has no stmatrix and keeps its stores. Every element comes back."""
    text = _kernel(acc, "rows", "f16").replace(f"#y = {LOAD}", f"#y = {EPILOGUE}")
    text = text.replace('ttg.target = "cuda:90"', f'ttg.target = "cuda:{arch}"')
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False, arch=arch))
    ir_text = str(kernel.llvm_ir)
    # the #x -> #y conversion (64x64 f16, 4 warps: 32 registers a thread, 4 x4 matrices)
    assert ir_text.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == (4 if arch == 90 else 0)
    data = np.arange(M * N).reshape(M, N).astype(np.float16)
    out = np.zeros_like(data)
    memory = run_kernel(kernel, (1,), [data, out])
    np.testing.assert_array_equal(memory.read(1, out), data)
