"""Tensor-core codegen on the CPU: matmuls through accelerate-matmul compile to PTX that uses
mma.sync m16n8k16 and ldmatrix and that ptxas accepts with few or no spills; and the lowered
kernels compute the right numbers on the SIMT evaluator, whose ldmatrix and mma.sync follow the
PTX ISA (tests/cpu/simt.py), against numpy at awkward sizes."""
from __future__ import annotations

import shutil
import textwrap

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.compiler import compile as compile_source
from compiler.ir import parse_module, print_module
from compiler.runtime.specialization import ASTSource
from sample_kernels.matmul import matmul_kernel
from tests.cpu.mma_cases import MMA_V2_TARGET, WITH_MMA, compile_jit, run_on_simt
from tests.cpu.test_frontend_reference import ref  # noqa: F401  (fixture)
from tests.kernels_zoo import BY_NAME, check_outputs, make_case


@triton.jit
def small_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                     OUT: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, out_dtype=OUT))

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")


def _assert_tensor_core_ptx(compiled, max_spill_bytes: int):
    ptx = compiled.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4" in ptx
    info = compiled.trace.cubin_info
    assert info["registers"] > 0
    assert info["spill_stores"] <= max_spill_bytes, info["report"]


def _sample_matmul_args(m=256, n=256, k=256):
    return [np.zeros(m * k, np.float16), np.zeros(k * n, np.float16),
            np.zeros(m * n, np.float16), m, n, k, k, 1, n, 1, n, 1]


# With 4 warps each thread holds a 64x64 / 32 fp32 accumulator slice (128 registers) beside the
# loads' pointers: it fits in 255 registers only because the staging stores into shared memory
# are 16-byte vectors (scalar stores needed 128 more address registers and spilled).
SPILLS = {4: 0, 8: 0}


@needs_ptxas
@pytest.mark.parametrize("num_warps", [4, 8])
def test_sample_matmul_128x128x64_uses_tensor_cores(num_warps):
    compiled, _ = compile_jit(matmul_kernel, _sample_matmul_args(),
                              {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64,
                               "GROUP_SIZE_M": 8}, {"num_warps": num_warps}, WITH_MMA,
                              stop_after=None)
    _assert_tensor_core_ptx(compiled, SPILLS[num_warps])
    # 64 K / 16 per step x (128 x 128) / (16 x 8) tiles, spread over the warps
    assert compiled.asm["ptx"].count("mma.sync.aligned") == 4 * 128 // num_warps


@needs_ptxas
@pytest.mark.parametrize("num_warps", [4, 8])
def test_reference_matmul_kernel_uses_tensor_cores(ref, num_warps):  # noqa: F811
    sig = dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16", M="i32", N="i32", K="i32",
               sam="i32", sbk="i32", scm="i32")
    source = ASTSource(ref.matmul_kernel, sig,
                       dict(sak=1, sbn=1, scn=1, BM=128, BN=128, BK=64, GROUP_M=8),
                       {"divisibility_16": ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "sam",
                                            "sbk", "scm"]})
    compiled = compile_source(source, options={"num_warps": num_warps, **MMA_V2_TARGET},
                              pipelines={"ttgir": WITH_MMA})
    _assert_tensor_core_ptx(compiled, SPILLS[num_warps])
    # the final ttgir still parses back (every ttgir pass was verified by the pass manager)
    assert "nvidia_mma" in print_module(parse_module(compiled.asm["ttgir"]))


# Without reduce-data-duplication the operands reach the dot as registers, converted from their
# blocked load layouts through shared memory (the generic exchange), not read by ldmatrix.
IN_REGISTERS = WITH_MMA.replace("reduce-data-duplication,", "")


@needs_ptxas
@pytest.mark.parametrize("element", ["fp16", "bf16"])
def test_tile_dot_instruction_matches_the_operand_type(element):
    from tests.cpu.mma_cases import tile_dot_source
    compiled = compile_source(tile_dot_source(element, 64, 64, 32),
                              options={"num_warps": 4, **MMA_V2_TARGET},
                              pipelines={"ttgir": WITH_MMA})
    ir_type = {"fp16": "f16", "bf16": "bf16"}[element]
    ptx = compiled.asm["ptx"]
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{ir_type}.{ir_type}.f32" in ptx
    # warps [2, 2] on 64x64: 2 x 4 tiles per warp, 2 K steps
    assert ptx.count("mma.sync.aligned") == 2 * 4 * 2
    assert compiled.trace.cubin_info["spill_stores"] == 0


@pytest.mark.parametrize("m,n,k,block,num_warps,pipeline", [
    (40, 36, 48, (32, 32, 32), 4, WITH_MMA),
    (70, 50, 40, (64, 32, 16), 8, WITH_MMA),
    (33, 65, 64, (32, 64, 64), 4, WITH_MMA),
    (20, 18, 40, (16, 16, 16), 1, WITH_MMA),
    (40, 36, 48, (32, 32, 32), 4, IN_REGISTERS),
])
def test_sample_matmul_on_the_simt_evaluator(m, n, k, block, num_warps, pipeline):
    rng = np.random.default_rng(m * n * k)
    a = rng.standard_normal(m * k).astype(np.float16)
    b = rng.standard_normal(k * n).astype(np.float16)
    c = np.zeros(m * n, np.float16)
    bm, bn, bk = block
    compiled, runtime_args = compile_jit(
        matmul_kernel, [a, b, c, m, n, k, k, 1, n, 1, n, 1],
        {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 2},
        {"num_warps": num_warps}, pipeline)
    text = print_module(compiled.ttgir_module)
    assert "nvidia_mma" in text and ("ttg.local_load" in text) == (pipeline == WITH_MMA)
    grid = (-(-m // bm) * -(-n // bn),)
    (got,) = run_on_simt(compiled, grid, runtime_args, [runtime_args[2]])
    expected = a.reshape(m, k).astype(np.float32) @ b.reshape(k, n).astype(np.float32)
    np.testing.assert_allclose(got.reshape(m, n).astype(np.float32), expected,
                               rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("name", ["dot_f16", "dot_trans_b", "matmul_f32_bf16",
                                  "matmul_block16", "matmul_block32"])
def test_zoo_dots_on_the_simt_evaluator(name):
    """The zoo's fp16/bf16 dots (transposed B, bf16 operands, loops) on tensor cores."""
    entry = BY_NAME[name]
    case = make_case(entry, 1234)
    args = case.fresh_args()
    compiled, runtime_args = compile_jit(entry.kernel, args, case.constexprs, case.options,
                                         WITH_MMA)
    assert "nvidia_mma" in print_module(compiled.ttgir_module)
    outputs = {i: args[i] for i in case.expected}
    got = run_on_simt(compiled, case.grid, runtime_args, list(outputs.values()))
    check_outputs(dict(zip(outputs, got)), case.expected, entry.gpu, f"{name} on the SIMT")


@pytest.mark.parametrize("num_warps", [2, 4])
def test_chained_dots_on_the_simt_evaluator(num_warps):
    """With warps [2, 1] the accumulator already is the next dot's A operand register for
    register; with [2, 2] the conversion goes through shared memory."""
    from tests.cpu.mma_cases import chained_dot_kernel
    m, n, k = 64, 32, 32
    rng = np.random.default_rng(num_warps)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n)))
    v = rng.standard_normal((n, k)).astype(np.float16)
    o = np.zeros((m, k), np.float32)
    compiled, runtime_args = compile_jit(chained_dot_kernel, [a, b, v, o],
                                         {"M": m, "N": n, "K": k}, {"num_warps": num_warps},
                                         WITH_MMA)
    text = print_module(compiled.ttgir_module)
    assert text.count("nvidia_mma<") == 1 and text.count("tt.dot") == 2
    (got,) = run_on_simt(compiled, (1,), runtime_args, [runtime_args[3]])
    p = ((a.astype(np.float32) @ b.astype(np.float32)) * 0.5).astype(np.float16)
    # an element of P may round to the neighbouring fp16 value (sums in another order)
    np.testing.assert_allclose(got, p.astype(np.float32) @ v.astype(np.float32),
                               rtol=1e-3, atol=2e-2)


def _staging_ttgir(op_idx: int, order: tuple, per_phase: int, max_phase: int) -> str:
    """Load a 32x32 f16 tile, stage it through a swizzled shared buffer, read it back into a
    tensor-core operand layout with ttg.local_load (ldmatrix), convert to blocked and store."""
    blocked = ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], "
               "warpsPerCTA = [4, 1], order = [1, 0]}>")
    return textwrap.dedent(f"""
    #b = {blocked}
    #s0 = #ttg.slice<{{dim = 0, parent = #b}}>
    #s1 = #ttg.slice<{{dim = 1, parent = #b}}>
    #mma = #ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}}>
    #op = #ttg.dot_op<{{opIdx = {op_idx}, parent = #mma, kWidth = 2}}>
    #shared = #ttg.swizzled_shared<{{vec = 8, perPhase = {per_phase}, maxPhase = {max_phase}, order = [{order[0]}, {order[1]}]}}>
    #smem = #ttg.shared_memory
    module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
      tt.func public @stage(%x: !tt.ptr<f16> {{tt.divisibility = 16 : i32}}, %y: !tt.ptr<f16> {{tt.divisibility = 16 : i32}}) {{
        %c32 = arith.constant dense<32> : tensor<32x1xi32, #b>
        %r = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #s1>
        %c = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #s0>
        %r2 = tt.expand_dims %r {{axis = 1 : i32}} : tensor<32xi32, #s1> -> tensor<32x1xi32, #b>
        %rs = arith.muli %r2, %c32 : tensor<32x1xi32, #b>
        %c2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<32xi32, #s0> -> tensor<1x32xi32, #b>
        %rb = tt.broadcast %rs : tensor<32x1xi32, #b> -> tensor<32x32xi32, #b>
        %cb = tt.broadcast %c2 : tensor<1x32xi32, #b> -> tensor<32x32xi32, #b>
        %off = arith.addi %rb, %cb : tensor<32x32xi32, #b>
        %xs = tt.splat %x : !tt.ptr<f16> -> tensor<32x32x!tt.ptr<f16>, #b>
        %xp = tt.addptr %xs, %off : tensor<32x32x!tt.ptr<f16>, #b>, tensor<32x32xi32, #b>
        %v = tt.load %xp : tensor<32x32x!tt.ptr<f16>, #b>
        %buf = ttg.local_alloc %v : (tensor<32x32xf16, #b>) -> !ttg.memdesc<32x32xf16, #shared, #smem>
        %o = ttg.local_load %buf : !ttg.memdesc<32x32xf16, #shared, #smem> -> tensor<32x32xf16, #op>
        %back = ttg.convert_layout %o : tensor<32x32xf16, #op> -> tensor<32x32xf16, #b>
        %ys = tt.splat %y : !tt.ptr<f16> -> tensor<32x32x!tt.ptr<f16>, #b>
        %yp = tt.addptr %ys, %off : tensor<32x32x!tt.ptr<f16>, #b>, tensor<32x32xi32, #b>
        tt.store %yp, %back : tensor<32x32x!tt.ptr<f16>, #b>
        tt.return
      }}
    }}
    """)


@pytest.mark.parametrize("op_idx", [0, 1])
@pytest.mark.parametrize("order,per_phase,max_phase", [((1, 0), 2, 4), ((0, 1), 2, 4),
                                                       ((1, 0), 1, 1), ((0, 1), 1, 1)])
def test_ldmatrix_reads_swizzled_buffers_in_either_order(op_idx, order, per_phase, max_phase):
    """A and B operands read by ldmatrix (plain where K is contiguous in shared memory,
    .trans where it is not) from row- and column-major, swizzled and plain buffers."""
    from compiler.codegen.lowering import LoweringOptions, lower_module
    from tests.cpu.simt import run_kernel
    text = _staging_ttgir(op_idx, order, per_phase, max_phase)
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
    assert "ldmatrix.sync.aligned.m8n8.x4" in kernel.llvm_ir
    reads = "\n".join(line for line in kernel.llvm_ir.splitlines() if "ldmatrix" in line)
    assert ((".trans" in reads) == (order[0] != (1 if op_idx == 0 else 0)))
    x = np.random.default_rng(op_idx).standard_normal((32, 32)).astype(np.float16)
    y = np.zeros_like(x)
    memory = run_kernel(kernel, (1,), [x, y])
    np.testing.assert_array_equal(memory.read(1, y), x)


@pytest.mark.parametrize("m,n,k,warps,arch,out", [
    (32, 32, 32, 4, 80, "f16"), (32, 32, 32, 4, 90, "f16"),     # the f16-accumulator form
    (16, 16, 16, 4, 90, "f16"), (32, 32, 128, 16, 90, "f32"),   # more warps than tiles
    (16, 64, 32, 8, 80, "f32")])
def test_small_dots_run_on_mma_sync(m, n, k, warps, arch, out):
    """Dots that used to stay on FMA run on mma.sync as Triton's do: out_dtype=float16 with f16
    operands through the `.f16.f16.f16.f16` form (the accumulator as two f16x2 words), tiles
    too small for wgmma on sm_90, and tiles with fewer instruction tiles than warps (Triton's
    warpsPerTileV2 then places warps past the shape, which compute copies). Checked on the
    SIMT evaluator against numpy."""
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not on the PATH")
    rng = np.random.default_rng(m + n + k)
    a = (rng.integers(-3, 4, (m, k)) / 4).astype(np.float16)
    b = (rng.integers(-3, 4, (k, n)) / 4).astype(np.float16)
    c = np.zeros((m, n), np.float16 if out == "f16" else np.float32)
    compiled, runtime = compile_jit(small_dot_kernel, [a, b, c],
                                    {"M": m, "N": n, "K": k,
                                     "OUT": tl.float16 if out == "f16" else tl.float32},
                                    {"num_warps": warps}, None, stop_after=None,
                                    target={"arch": arch})
    assert f"mma.sync.aligned.m16n8k16.row.col.{out}.f16.f16.{out}" in compiled.asm["ptx"]
    out_array, = run_on_simt(compiled, (1, 1), runtime, [c])
    np.testing.assert_allclose(out_array.astype(np.float32),
                               a.astype(np.float32) @ b.astype(np.float32), rtol=0, atol=1e-2)
