"""The pipeliner's vector loads: a 1-D load in a loop whose dot operands are pipelined is copied
into a ring of its own and read back with `ttg.local_load` (tutorial 06's backward loads M and
Delta rows so), unless its address cannot run ahead (it is computed from another load's value):
then it stays a synchronous load and the dot operands are pipelined as before."""
from __future__ import annotations

import numpy as np
import pytest

import compiler as triton
import compiler.language as tl
from compiler.runtime.interpreter import interpret
from tests.cpu.filecheck import filecheck
from tests.cpu.mma_cases import compile_jit


@triton.jit
def scaled_matmul(a_ptr, b_ptr, s_ptr, j_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, INDIRECT: tl.constexpr, COLUMNS: tl.constexpr = False):
    """c = sum over k blocks of (a_k @ b_k) * s_k[:, None], s_k a row of BM per-row scales
    loaded each step, through an index row j_k when INDIRECT (s[j_k] instead of s_k); with
    COLUMNS, s_k is a row of BN per-column scales instead (a_k @ b_k * s_k[None, :])."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        if COLUMNS:
            acc += tl.dot(a, b) * tl.load(s_ptr + (k // BK) * BN + rn)[None, :]
        else:
            rows = (k // BK) * BM + rm
            if INDIRECT:
                s = tl.load(s_ptr + tl.load(j_ptr + rows))
            else:
                s = tl.load(s_ptr + rows)
            acc += tl.dot(a, b) * s[:, None]
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def _compile(indirect: bool, arch: int):
    m, n, k, bk = 64, 32, 128, 32
    steps = k // bk
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    s = rng.uniform(0.5, 1.5, steps * m).astype(np.float32)
    j = rng.permutation(steps * m).astype(np.int32)
    c = np.zeros((m, n), np.float32)
    compiled, runtime = compile_jit(scaled_matmul, [a, b, s, j, c, k],
                                    {"BM": m, "BN": n, "BK": bk, "INDIRECT": indirect},
                                    {"num_warps": 4, "num_stages": 3}, None,
                                    target={"arch": arch})
    scale = (s[j] if indirect else s).reshape(steps, m)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    ref = sum((af[:, i * bk:(i + 1) * bk] @ bf[i * bk:(i + 1) * bk]) * scale[i][:, None]
              for i in range(steps))
    return compiled, runtime, c, ref


@pytest.mark.parametrize("arch", [90, 80])
def test_a_scale_row_is_copied_into_a_ring_and_read_back(arch):
    compiled, runtime, c, ref = _compile(False, arch)
    text = compiled.asm["ttgir"]
    filecheck(text, """
        CHECK: ttg.local_alloc {{.*}}: () -> !ttg.memdesc<3x64xf32, [[VEC:#shared[0-9]*]], #smem, mutable>
        CHECK: scf.for
        CHECK-NOT: tt.load
        CHECK: scf.yield
    """)
    # (sm_90 refills the slots after the wgmma wait, sm_80 at the top of the body)
    vec = text[text.index("ttg.local_alloc {"):].split("<3x64xf32, ")[1].split(",")[0]
    loop = text[text.index("scf.for"):text.index("scf.yield")]
    assert f": !ttg.memdesc<64xf32, {vec}, #smem, mutable> -> tensor<64xf32" in loop
    assert f"-> !ttg.memdesc<64xf32, {vec}, #smem, mutable>" in loop
    interpret(compiled.ttgir_module, (1,), runtime)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("arch", [90, 80])
def test_a_row_loaded_through_an_index_stays_synchronous(arch):
    compiled, runtime, c, ref = _compile(True, arch)
    text = compiled.asm["ttgir"]
    loop = text[text.index("scf.for"):text.index("scf.yield")]
    # the index row rides along (its address runs ahead); the scales it selects cannot
    assert loop.count("tt.load") == 1 and "tensor<64x!tt.ptr<f32>" in loop
    assert loop.count("ttg.async_copy_global_to_local") == 3        # a, b and the index row
    interpret(compiled.ttgir_module, (1,), runtime)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=5e-2)


def test_a_column_row_in_a_slice_of_the_accumulator_is_copied_8_bytes_at_a_time():
    """The scale row lives in the slice of the wgmma accumulator along its columns, where each
    thread holds two adjacent columns per 8: the ring's copies move 8 bytes (Triton's too; the
    width used to be one element for every non-blocked layout), and every thread's copies put
    each global element at its own place in the slot (evaluated per thread from the PTX)."""
    from compiler.codegen.ptx_addresses import parse, run_block
    m, n, k, bk = 64, 32, 128, 32
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    s = rng.uniform(0.5, 1.5, (k // bk) * n).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    compiled, _ = compile_jit(scaled_matmul, [a, b, s, s, c, k],
                              {"BM": m, "BN": n, "BK": bk, "INDIRECT": False, "COLUMNS": True},
                              {"num_warps": 4, "num_stages": 3}, None, stop_after="ptx",
                              target={"arch": 90})
    program = parse(compiled.asm["ptx"])
    base = {"a": 1 << 40, "b": 2 << 40, "s": 3 << 40, "c": 4 << 40}
    params = dict(zip(program.params, [base["a"], base["b"], base["s"], 0, base["c"], k]))
    accesses = run_block(program, 128, (0, 0, 0), params)
    copies = {}                    # (instruction, visit, tid) -> (global, shared, size)
    for (kind, index, visit), lanes in accesses.items():
        if not kind.startswith("cp.async"):
            continue
        for tid, access in lanes.items():
            entry = copies.setdefault((index, visit, tid), [None, None, access.size])
            entry[0 if kind == "cp.async.global" else 1] = access.address
    scale = [(g - base["s"], sh, size) for g, sh, size in copies.values()
             if base["s"] <= g < base["c"]]
    assert scale and {size for _, _, size in scale} == {8}
    # one slot per step: the element at global offset x lands at slot start + x % (4 n)
    slot_bytes = 4 * n
    starts = {}
    for g, sh, _ in scale:
        starts.setdefault(g // slot_bytes, set()).add(sh - g % slot_bytes)
    assert all(len(at) == 1 for at in starts.values())
    slots = sorted(at.pop() for at in starts.values())
    assert all((x - slots[0]) % slot_bytes == 0 for x in slots)
    for step in starts:
        covered = {g % slot_bytes + i for g, _, size in scale if g // slot_bytes == step
                   for i in range(size)}
        assert covered == set(range(slot_bytes))
