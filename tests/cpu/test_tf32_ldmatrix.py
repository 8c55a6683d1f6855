"""tf32 mma.sync operands read from shared memory by `ldmatrix` (the b16 form: a matrix row of
eight b16 is four tf32 words, lane l receiving word (l / 4, l % 4), the m16n8k8 fragment's
(groupID, threadID_in_group)), behind the `tf32_ldmatrix` option (TILE_TF32_LDMATRIX,
knobs.nvidia.tf32_ldmatrix; on by default since the H200 verified it:
tests/gpu/test_tf32_ldmatrix_gpu.py).

The bench's matmul (bench/bench_wgmma.py, the 2-warp tf32 configs that stay on mma.sync on
sm_90) with row- and column-major operands: which operands go through ldmatrix (those whose K
is the buffer's contiguous dim; a transposed A keeps its scalar loads), the values on the SIMT
evaluator (tests/cpu/simt.py, whose ldmatrix hands out the 32-bit words the PTX ISA gives)
against numpy, and PTX with the instruction in the loop that ptxas assembles for sm_80 and
sm_90a."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.codegen.matrix_memory import operand_offsets, word_matrix_fits
from compiler.dialects.ttg import (DotOperandEncoding, NvidiaMmaEncoding,
                                   SwizzledSharedEncoding)
from compiler.ir.types import FloatType, TensorType
from tests.cpu.mma_cases import compile_jit, run_on_simt

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")

TF32_MMA = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
LDMATRIX_X4 = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"


def _bench_kernel():
    from bench.bench_wgmma import load
    return load(True).matmul_kernel


def _tf32_exact(rng, shape) -> np.ndarray:
    """Random fp32 values tf32 holds exactly (10 mantissa bits), so the dot is exact in fp64
    up to the accumulation order."""
    x = rng.standard_normal(shape).astype(np.float32)
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def compile_matmul(m: int, n: int, k: int, block: tuple, num_warps: int, num_stages: int,
                   col_a: bool, col_b: bool, tf32_ldmatrix: bool = True, arch: int = 90,
                   stop_after: str | None = "ttgir"):
    """The bench matmul for (m, n, k) fp32 operands, A (B) column-major where asked; returns
    (compiled, runtime args, (a, b, c))."""
    rng = np.random.default_rng(m + 3 * n + 7 * k + col_a + 2 * col_b)
    a, b = _tf32_exact(rng, (m, k)), _tf32_exact(rng, (k, n))
    c = np.zeros((m, n), np.float32)
    a_mem = np.ascontiguousarray(a.T if col_a else a).reshape(-1)
    b_mem = np.ascontiguousarray(b.T if col_b else b).reshape(-1)
    sam, sak = (1, m) if col_a else (k, 1)
    sbk, sbn = (1, k) if col_b else (n, 1)
    bm, bn, bk = block
    compiled, args = compile_jit(
        _bench_kernel(), [a_mem, b_mem, c, m, n, k, sam, sak, sbk, sbn, n, 1],
        dict(BM=bm, BN=bn, BK=bk, GROUP_M=8, PRECISION="tf32", ACC_F16=False, IMPRECISE=None),
        {"num_warps": num_warps, "num_stages": num_stages}, None, stop_after=stop_after,
        target={"arch": arch, "tf32_ldmatrix": tf32_ldmatrix})
    return compiled, args, (a, b, c)


# (m, n, k, block, warps, stages, col_a, col_b, ldmatrix.x4 in the lowered kernel): A row-major
# reads one x4 per M tile and K step, a column-major B one per two N tiles and K step
CASES = [
    (64, 64, 96, (32, 64, 32), 2, 5, False, False, 2 * 4),      # the H200 config, two programs
    (64, 128, 128, (64, 128, 64), 2, 3, False, False, 4 * 8),   # larger, 64-wide K buffers
    (32, 64, 64, (32, 64, 32), 2, 5, False, True, 2 * 4 + 2 * 4),   # B too (x4 over N pairs)
    (64, 64, 64, (32, 32, 32), 4, 3, False, True, 1 * 4 + 1 * 4),   # 4 warps [2, 2]
    (32, 64, 64, (32, 64, 32), 2, 5, True, False, 0),            # transposed A: scalar loads
    (32, 64, 64, (32, 64, 32), 2, 5, True, True, 2 * 4),         # B only
]
IDS = ["32x64x32", "64x128x64", "col-B", "4-warps-col-B", "col-A", "col-A-col-B"]


def _lowered(compiled, tf32_ldmatrix: bool):
    return lower_module(compiled.ttgir_module,
                        LoweringOptions(optimize=False, tf32_ldmatrix=tf32_ldmatrix))


@pytest.mark.parametrize("m,n,k,block,warps,stages,col_a,col_b,x4", CASES, ids=IDS)
def test_values_on_the_simt_evaluator(m, n, k, block, warps, stages, col_a, col_b, x4):
    compiled, args, (a, b, _) = compile_matmul(m, n, k, block, warps, stages, col_a, col_b)
    assert "versionMajor = 2" in compiled.asm["ttgir"]
    ir_on = _lowered(compiled, True).llvm_ir
    assert ir_on.count(LDMATRIX_X4) == x4 and "ldmatrix" not in ir_on.replace(LDMATRIX_X4, "")
    assert "ldmatrix" not in _lowered(compiled, False).llvm_ir
    grid = ((m // block[0]) * (n // block[1]),)
    (got,) = run_on_simt(compiled, grid, args, [args[2]],
                         LoweringOptions(optimize=False, tf32_ldmatrix=True))
    np.testing.assert_allclose(got.reshape(m, n), a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-5, atol=1e-4)


def _loop(ptx: str) -> list:
    """The PTX lines of the loop holding the mma.sync instructions (its first block's label to
    the backward branch)."""
    lines = ptx.splitlines()
    mma = [i for i, line in enumerate(lines) if "mma.sync" in line]
    start = max(i for i in range(mma[0]) if re.match(r"\$L__BB\d+_\d+:", lines[i]))
    end = next(i for i in range(mma[-1], len(lines)) if re.search(r"\bbra", lines[i]))
    return lines[start:end + 1]


def _ptxas(ptx: str, arch: str, tmp_path) -> None:
    source = tmp_path / f"k_{arch}.ptx"
    source.write_text(ptx)
    done = subprocess.run(["ptxas", f"-arch={arch}", str(source), "-o",
                           str(tmp_path / f"k_{arch}.cubin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@needs_ptxas
@pytest.mark.parametrize("arch,ptxas_arch", [(80, "sm_80"), (90, "sm_90a")])
def test_ptx_reads_a_by_ldmatrix_in_the_loop_and_assembles(arch, ptxas_arch, tmp_path):
    """The H200's 32x64x32 config (2 warps, 5 stages): per iteration 2 M tiles x 4 K steps of A
    by ldmatrix.x4 instead of 32 scalar ld.shared; row-major B keeps its 32."""
    counts = {}
    for on in (False, True):
        compiled, _, _ = compile_matmul(4096, 4096, 4096, (32, 64, 32), 2, 5, False, False,
                                        tf32_ldmatrix=on, arch=arch, stop_after=None)
        ptx = compiled.asm["ptx"]
        loop = "\n".join(_loop(ptx))
        counts[on] = (len(re.findall(r"ld\.shared", loop)), loop.count(LDMATRIX_X4),
                      loop.count(TF32_MMA))
        assert "ldmatrix" not in ptx.replace(LDMATRIX_X4, "")
        assert compiled.trace.cubin_info["spill_stores"] == 0
        _ptxas(ptx, ptxas_arch, tmp_path)
    assert counts[False] == (64, 0, 32)
    assert counts[True] == (32, 8, 32)


# ---- which buffers pass ------------------------------------------------------------------------
MMA = NvidiaMmaEncoding(2, 0, (1, 2), (16, 8))


@pytest.mark.parametrize("op_idx,shape,vec,order,fits", [
    (0, (32, 32), 4, (1, 0), True),     # A, K contiguous, the bench's swizzle
    (0, (32, 32), 1, (1, 0), True),     # unswizzled (perPhase/maxPhase 1)
    (0, (32, 32), 2, (1, 0), False),    # an 8-byte swizzle unit splits the 16-byte rows
    (0, (32, 32), 4, (0, 1), False),    # A with M contiguous (transposed)
    (1, (32, 64), 4, (0, 1), True),     # B with K contiguous ("col")
    (1, (32, 64), 4, (1, 0), False),    # B with N contiguous
])
def test_word_matrix_fits(op_idx, shape, vec, order, fits):
    max_phase = 1 if vec == 1 else 8
    shared = SwizzledSharedEncoding(vec, 1, max_phase, order)
    operand = TensorType(shape, FloatType("f32"), DotOperandEncoding(op_idx, MMA, 1))
    assert word_matrix_fits(shared, operand) is fits
    if fits:
        # lane l's register 0 is word l % 4 of row l / 4 of matrix 0, as ldmatrix hands out
        offsets = operand_offsets(shared, operand)
        regs = to_linear_layout(operand.encoding, operand.shape)
        assert regs.in_dim_size("register") == offsets.in_dim_size("register")
        for lane in range(32):
            row = offsets.apply(lane=4 * (lane // 4))["offset"]
            assert offsets.apply(lane=lane)["offset"] == row + lane % 4


# ---- the loop's shared addressing, as Triton 3.6 has it ----------------------------------------
def _address_registers(loop: str, instruction: str) -> list:
    """The base register of each `instruction` address in the loop ([%r] or [%r+imm])."""
    return re.findall(instruction + r"[^\[]*\[(%r\d+)(?:\+\d+)?\]", loop)


@needs_ptxas
def test_loop_addresses_share_registers_and_fold_constants():
    """The H200's 32x64x32 config: Triton 3.6's loop reads B (row-major, 32 scalar loads)
    from two address registers and A (8 ldmatrix.x4) from four, the rest immediates; ours was
    at one register a load (a swizzle constant XORed whole, and each typed GEP scaling its
    offset inside the loop) and a remainder per stage index. Now: a swizzle constant's bits
    outside the lane term are an add folded into the instruction (`[%r+imm]`), offsets are
    scaled to bytes once, and the stage indices wrap by a compare and select."""
    compiled, _, _ = compile_matmul(4096, 4096, 4096, (32, 64, 32), 2, 5, False, False,
                                    stop_after=None)
    ttgir, loop = compiled.asm["ttgir"], "\n".join(_loop(compiled.asm["ptx"]))
    # B's buffer (N contiguous, read a K row per quad lane): 8-element groups over 4 phases
    assert "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 4, order = [1, 0]}>" in ttgir
    loads = _address_registers(loop, r"ld\.shared")
    matrices = _address_registers(loop, r"ldmatrix")
    assert len(loads) == 32 and len(set(loads)) <= 6, sorted(set(loads))
    assert len(matrices) == 8 and len(set(matrices)) == 4, matrices     # one per K step
    assert re.search(r"ldmatrix[^\[]*\[%r\d+\+2048\]", loop)             # the second M tile
    assert "rem.s32" not in loop and "arith.remsi" not in ttgir.split("scf.for")[1]
