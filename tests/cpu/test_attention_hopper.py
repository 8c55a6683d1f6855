"""The flash-attention forward of sample_kernels/attention.py on sm_90, instruction by
instruction against what Triton 3.6 makes of the same source (its ttgir / PTX / SASS for the
three configs below, dumped on the H200; the counts here are read off those dumps):

- q.k^T is waited for at once (the softmax reads it); p.v stays in flight into the next
  iteration and is waited for in q.k^T's wait, so ptxas never serializes the wgmmas (C7514)
  and each dot is one unbroken chain of HGMMAs (one WARPGROUP.ARRIVE / DEPBAR each);
- p goes to the second wgmma from registers, packed before `wgmma.fence` (no injected
  warpgroup.arrive, C7519); a zero accumulator is not read (scale-d 0);
- the loop has two bar.sync, one cp.async wait, exp2 as `ex2.approx.ftz.f32` (one MUFU.EX2 per
  element, no denormal wrapper) and one column-mask compare per 16 columns;
- the loop's SASS is no longer than Triton's, with no spills.
bench/bench_attention.py measures the result on the H200 (bench/RESULTS.md)."""
from __future__ import annotations

import re
import shutil

import pytest

from compiler.analysis.layouts import equal_value_registers
from compiler.codegen.loop_stats import opcodes, ptx_loop, sass_loop
from compiler.codegen.toolchain import find_tool
from compiler.dialects.ttg import NvidiaMmaEncoding
from tests.cpu.filecheck import filecheck
from tests.cpu.mma_cases import compile_attention_sm90

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")

#: (HEAD_DIM, BLOCK_M, BLOCK_N, warps) -> what Triton 3.6's loop has for it: ex2 (MUFU.EX2),
#: setp.lt (the column mask's compares, one per 16 columns, and the cp.async masks), SASS
#: instructions of the loop
TRITON_LOOP = {(64, 128, 64, 4): (68, 10, 666), (128, 128, 64, 8): (34, 10, 443),
               (128, 128, 128, 8): (66, 18, 711)}
#: our loop's SASS may exceed Triton's by this much (scheduling noise between ptxas inputs)
SASS_SLACK = 8


def _compile(head_dim, block_m, block_n, warps, causal=False):
    return compile_attention_sm90(head_dim, block_m, block_n, warps, causal)


_CACHE: dict = {}


def _compiled(config):
    if config not in _CACHE:
        _CACHE[config] = _compile(*config)
    return _CACHE[config]


def test_qk_is_waited_for_at_once_and_pv_in_the_next_iterations_wait():
    ttgir = _compiled((128, 128, 64, 8)).asm["ttgir"]
    loop = ttgir[ttgir.index("scf.for"):]
    filecheck(loop, """
        CHECK: scf.for
        CHECK: ttg.async_wait %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} {num = 2 : i32}
        CHECK: [[QK:%[a-z_0-9]+]] = ttng.warp_group_dot {{.*}} {isAsync = true} : !ttg.memdesc<128x128xf16
        CHECK-NEXT: ttng.warp_group_dot_wait [[QK]], %{{[a-z_0-9]+}} {pendings = 0 : i32}
        CHECK: ttng.warp_group_dot {{.*}} {isAsync = true} : tensor<128x64xf16, #dot_op>
        CHECK-NOT: ttng.warp_group_dot_wait
        CHECK: gpu.barrier
        CHECK: ttg.async_copy_global_to_local
        CHECK-NOT: ttng.warp_group_dot_wait
        CHECK: scf.yield
        CHECK: ttng.warp_group_dot_wait {{.*}} {pendings = 0 : i32}
    """)


@needs_ptxas
@pytest.mark.parametrize("config", sorted(TRITON_LOOP))
def test_the_loop_ptx_has_tritons_synchronization_and_math(config):
    compiled = _compiled(config)
    loop = ptx_loop(compiled.asm["ptx"])
    text = "\n".join(loop)
    ops = opcodes(loop)
    ex2, compares, _ = TRITON_LOOP[config]
    assert ops["bar.sync"] == 2
    assert ops["wgmma.fence.sync.aligned"] == 2 and ops["wgmma.commit_group.sync.aligned"] == 2
    assert re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", text) == ["0"]
    assert re.findall(r"cp\.async\.wait_group (\d+)", text) == ["2"]     # k's and v's groups
    assert ops["ex2.approx.ftz.f32"] == ex2 and "ex2.approx.f32" not in ops
    assert ops["setp.lt.s32"] <= compares
    # p reaches the second wgmma from registers, packed before its fence
    fences = [i for i, line in enumerate(loop) if line.startswith("wgmma.fence")]
    packs = [i for i, line in enumerate(loop) if line.startswith("cvt.rn.f16x2.f32")]
    assert packs and fences[0] < min(packs) and max(packs) < fences[1]
    # q.k^T's zero accumulator is not read: scale-d 0 on the first K step of each 64-row
    # repetition of the warp group, 1 everywhere else
    wgmmas = [line for line in loop if line.startswith("wgmma.mma_async")]
    scale_d = [re.search(r", ([01]), 1, 1\b", w).group(1) for w in wgmmas]
    reps = config[1] // (16 * config[3])
    assert scale_d.count("0") == reps, scale_d
    report = compiled.trace.cubin_info["report"]
    assert "C7514" not in report and "C7519" not in report, report
    assert compiled.trace.cubin_info["spill_stores"] == 0


@needs_ptxas
@pytest.mark.parametrize("config", [(64, 64, 64, 4), (128, 128, 64, 8)])
def test_causal_attention_keeps_the_schedule(config):
    """The causal mask (rows >= cols, per element) changes the softmax, not the waits."""
    compiled = _compile(*config, causal=True)
    loop = ptx_loop(compiled.asm["ptx"])
    ops = opcodes(loop)
    assert ops["bar.sync"] == 2 and ops["wgmma.fence.sync.aligned"] == 2
    assert re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", "\n".join(loop)) == ["0"]
    report = compiled.trace.cubin_info["report"]
    assert "C7514" not in report and "C7519" not in report, report
    assert compiled.trace.cubin_info["spill_stores"] == 0


@needs_ptxas
@pytest.mark.skipif(find_tool("nvdisasm") is None, reason="nvdisasm is not installed")
@pytest.mark.parametrize("config", sorted(TRITON_LOOP))
def test_the_loop_sass_is_one_hgmma_chain_per_dot_and_no_longer_than_tritons(config):
    sass = _compiled(config).asm.get("sass")
    loop = sass_loop(sass)
    ops = opcodes(loop)
    ex2, _, triton_total = TRITON_LOOP[config]
    assert ops["WARPGROUP.ARRIVE"] == 2 and ops["WARPGROUP.DEPBAR.LE"] == 1
    assert ops["MUFU.EX2"] == ex2 and "FSETP.GEU.AND" not in ops
    assert not ops["STL"] and not ops["LDL"]
    assert len(loop) <= triton_total + SASS_SLACK, (len(loop), triton_total)


def test_a_column_mask_is_one_value_per_16_columns_of_an_mma_tile():
    """cols < n over a 1 x 128 slice of a wgmma accumulator, n a multiple of 16: each thread
    holds columns 8j + 2t + {0, 1} (both rows), 16 of its 64 registers per distinct value."""
    mma = NvidiaMmaEncoding(3, 0, (8, 1), (16, 128, 16))
    same = equal_value_registers(mma, (1, 128), (1, 16))
    assert len(same) == 64 and len(set(same)) == 8
    assert equal_value_registers(mma, (1, 128), (1, 1)) is None
    assert equal_value_registers(mma, (1, 128), (1, 12)) is None       # not a power of two


#: resident CTAs per SM of Triton 3.6's kernel per config (bench/attention_loops.md): the first
#: three from its dumps (ptxas registers of its PTX, its ttgir's shared buffers); the other two
#: hold the same buffers (q, three stages of k and v), so D128 64x64 is bound to 2 by shared
#: memory whatever its registers, and D64 128x64 8 warps to 2 by registers (86 to 128)
TRITON_CTAS = {(64, 128, 64, 4): 2, (128, 128, 64, 8): 1, (128, 128, 128, 8): 1,
               (128, 64, 64, 4): 2, (64, 128, 64, 8): 2}


@needs_ptxas
@pytest.mark.parametrize("config", sorted(TRITON_CTAS))
def test_as_many_ctas_per_sm_as_triton(config):
    """Our registers and shared memory hold as many CTAs on an SM as Triton's. The margins are
    thin: above 128 registers D64 128x64 with 8 warps holds one CTA, and D128 64x64 has 1 KB of
    shared memory to spare before it does."""
    from compiler.codegen.occupancy import ctas_per_sm
    head_dim, block_m, block_n, warps = config
    compiled = _compiled(config)
    buffers = 2 * (block_m * head_dim + 2 * 3 * block_n * head_dim)
    assert compiled.metadata.shared == buffers
    occupancy = ctas_per_sm(compiled.trace.cubin_info["registers"], warps, buffers)
    assert occupancy["ctas_per_sm"] == TRITON_CTAS[config]
