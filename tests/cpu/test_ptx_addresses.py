"""compiler.codegen.ptx_addresses: the per-thread evaluation of a PTX kernel's integer code
(addresses of cp.async / ld / st, branches, loops) and the warp-level coalescing and
bank-conflict counts bench/attention_static_compare.py prints."""
from __future__ import annotations

from compiler.codegen.ptx_addresses import (global_sectors, parse, run_block, run_thread,
                                            shared_wavefronts)
from tests.cpu.mma_cases import attention_accesses, compile_attention_sm90

#: each thread copies 16 B of row tid/8, chunk tid%8 (a 128 B row per 8 threads) from
#: param_0 + tid*16 into shared at the chunk xor-swizzled by the row, twice (a two-trip loop),
#: and thread 0 also stores one b32 to global
KERNEL = """.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 smem[];
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .u32 k_param_1
)
.reqntid 64
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<10>;
	ld.param.b64 	%rd1, [k_param_0];
	ld.param.b32 	%r1, [k_param_1];
	mov.u32 	%r2, %tid.x;
	mul.wide.u32 	%rd2, %r2, 16;
	add.s64 	%rd3, %rd1, %rd2;
	shr.u32 	%r3, %r2, 3;
	and.b32 	%r4, %r2, 7;
	xor.b32 	%r5, %r4, %r3;
	and.b32 	%r5, %r5, 7;
	shl.b32 	%r6, %r3, 7;
	shl.b32 	%r7, %r5, 4;
	or.b32 	%r8, %r6, %r7;
	mov.b32 	%r9, smem;
	add.s32 	%r10, %r9, %r8;
	setp.lt.s32 	%p1, %r2, %r1;
	selp.b32 	%r11, 16, 0, %p1;
	mov.b32 	%r12, 0;
$L__BB0_1:
	cp.async.cg.shared.global [ %r10 + 0 ], [ %rd3 + 0 ], 16, %r11;
	add.s32 	%r12, %r12, 1;
	add.s32 	%r10, %r10, 1024;
	setp.lt.s32 	%p2, %r12, 2;
	@%p2 bra 	$L__BB0_1;
	setp.ne.s32 	%p3, %r2, 0;
	@%p3 bra 	$L__BB0_2;
	st.global.b32 	[ %rd1 + 4 ], %r12;
$L__BB0_2:
	ret;
}
"""


def test_parse_reads_params_labels_and_shared_symbols():
    program = parse(KERNEL)
    assert program.params == ["k_param_0", "k_param_1"]
    assert set(program.labels) == {"$L__BB0_1", "$L__BB0_2"}
    assert program.shared_symbols == {"smem"}
    assert program.instructions[0].opcode == "ld.param.b64"
    assert [i.guard for i in program.instructions if i.opcode == "bra"] == ["%p2", "%p3"]


def test_one_thread_follows_the_loop_and_the_branch():
    program = parse(KERNEL)
    params = {"k_param_0": 1 << 40, "k_param_1": 48}
    accesses = run_thread(program, 9, (0, 0, 0), params)
    copies = [a for a in accesses if a.opcode == "cp.async.shared"]
    # row 1, chunk 1 ^ 1 = 0: shared byte 128, then 1024 further on the loop's second trip
    assert [(a.address, a.visit, a.src_size) for a in copies] == [(128, 0, 16), (1152, 1, 16)]
    sources = [a.address for a in accesses if a.opcode == "cp.async.global"]
    assert sources == [(1 << 40) + 9 * 16] * 2
    assert not [a for a in accesses if a.opcode == "st.global"]          # tid 9 skips it
    stores = [a for a in run_thread(program, 0, (0, 0, 0), params) if a.opcode == "st.global"]
    assert [(a.address, a.size) for a in stores] == [((1 << 40) + 4, 4)]
    masked = run_thread(program, 50, (0, 0, 0), params)                  # tid >= param_1
    assert {a.src_size for a in masked if a.opcode.startswith("cp.async")} == {0}


def test_unknown_values_stop_only_what_needs_them():
    program = parse(KERNEL)
    # without param_1 the mask is unknown: the copies still have addresses, src-size unknown
    accesses = run_thread(program, 3, (0, 0, 0), {"k_param_0": 0})
    assert {a.src_size for a in accesses if a.opcode.startswith("cp.async")} == {None}
    # without param_0 no address is known: nothing is recorded
    assert run_thread(program, 3, (0, 0, 0), {"k_param_1": 64}) == []


def test_the_swizzled_copy_is_coalesced_and_conflict_free():
    program = parse(KERNEL)
    block = run_block(program, 64, (0, 0, 0), {"k_param_0": 1 << 40, "k_param_1": 64})
    for (kind, _, _), lanes in block.items():
        if not kind.startswith("cp.async"):
            continue                                    # the one thread's st.global
        for warp in (0, 1):
            addresses = [lanes[t].address for t in range(32 * warp, 32 * warp + 32)]
            if kind == "cp.async.global":
                assert global_sectors(addresses, 16) == 16
            elif kind == "cp.async.shared":
                assert shared_wavefronts(addresses, 16) == 4


def test_wavefront_and_sector_counts():
    assert global_sectors([4 * lane for lane in range(32)], 4) == 4
    assert global_sectors([128 * lane for lane in range(32)], 4) == 32
    # 16 B per lane, rows of 128 B without a swizzle but 8 lanes per row: conflict-free
    assert shared_wavefronts([16 * lane for lane in range(32)], 16) == 4
    # the same 16 B chunk column of 8 rows in one phase: 8-way conflict in each of 4 phases
    assert shared_wavefronts([128 * (lane % 8) for lane in range(32)], 16) == 32
    # 4 B per lane with a stride of 2 words: 2-way
    assert shared_wavefronts([8 * lane for lane in range(32)], 4) == 2
    # every lane reading one word is a broadcast: one wavefront
    assert shared_wavefronts([0] * 32, 4) == 1


def test_our_attention_copies_are_coalesced_and_conflict_free():
    """The sample's K/V pipeline as our compiler emits it: every warp's cp.async reads 16 full
    sectors and writes shared memory in 4 wavefronts, and the q tile goes to shared the same
    way."""
    compiled = compile_attention_sm90(128, 64, 64, 4, shape=(1, 2, 128, 128), stop_after="ptx")
    program = parse(compiled.asm["ptx"])
    strides = [2 * 128 * 128, 128 * 128, 128]
    params = dict(zip(program.params, [1 << 40, 2 << 40, 3 << 40, 4 << 40, None] +
                      strides * 4 + [2, 128]))
    block = run_block(program, 128, (1, 1, 0), params)
    kinds = {kind for kind, _, _ in block}
    assert {"cp.async.global", "cp.async.shared", "ld.global", "st.shared"} <= kinds
    for (kind, _, _), lanes in block.items():
        for warp in range(4):
            accesses = [lanes[t] for t in range(32 * warp, 32 * warp + 32) if t in lanes]
            if len(accesses) < 32 or kind not in ("cp.async.global", "cp.async.shared",
                                                  "ld.global"):
                continue
            addresses = [a.address for a in accesses]
            if kind == "cp.async.shared":
                assert shared_wavefronts(addresses, 16) == 4
                assert max(addresses) < compiled.metadata.shared
            else:
                assert global_sectors(addresses, 16) == 16


#: LLVM IR -> PTX by llvmlite's NVPTX backend with only the options named on the command line
#: (none: 64-bit shared pointers, no mad.wide), in a fresh process since options are process-wide
_PTX_WITH_OPTIONS = """
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
for option in sys.argv[1:]:
    llvm.set_option("test", option)
module = llvm.parse_assembly(sys.stdin.read())
machine = llvm.Target.from_triple("nvptx64-nvidia-cuda").create_target_machine(
    cpu="sm_90a", features="+ptx80", opt=3)
sys.stdout.write(machine.emit_assembly(module))
"""


def _ptx_with_options(llir: str, *options: str) -> str:
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-c", _PTX_WITH_OPTIONS, *options], input=llir,
                          capture_output=True, text=True, check=True).stdout


def test_short_shared_pointers_keep_every_address():
    """The NVPTX target uses 32-bit shared pointers (compiler.codegen.target): our attention
    PTX computes shared addresses in 32 bits (CHECK: `mov.b32 %r.., global_smem`, CHECK-NOT:
    `cvt.u32.u64`), and every thread's cp.async / ld / st addresses and masks are those of the
    same LLVM IR compiled with 64-bit shared pointers."""
    compiled = compile_attention_sm90(128, 64, 64, 4, shape=(1, 2, 128, 128), stop_after="ptx")
    ptx = compiled.asm["ptx"]
    assert "cvt.u32.u64" not in ptx
    assert "mov.b32 \t%r" in ptx.split("global_smem;")[0].splitlines()[-1]
    long_ptx = _ptx_with_options(compiled.asm["llir"], "--nvptx-mad-wide-opt")
    assert "cvt.u32.u64" in long_ptx                     # the form before the option

    short = attention_accesses(ptx)
    assert len(short) > 4000
    assert short == attention_accesses(long_ptx)


def test_mad_wide_addresses_keep_every_address():
    """The NVPTX target fuses each single-use `mul.wide.s32` into its add (`mad.wide.s32`, as
    Triton's does; compiler.codegen.target): our attention PTX has the fused form (CHECK:
    `mad.wide.s32`; CHECK-NOT: a `mul.wide.s32` whose product is only added to a base), and
    every thread's addresses and masks are those of the same LLVM IR compiled unfused."""
    compiled = compile_attention_sm90(128, 64, 64, 4, shape=(1, 2, 128, 128), stop_after="ptx")
    ptx = compiled.asm["ptx"]
    unfused = _ptx_with_options(compiled.asm["llir"], "--nvptx-short-ptr")
    assert ptx.count("mad.wide.s32") > 20
    assert "mad.wide.s32" not in unfused                 # the form before the option
    assert unfused.count("mul.wide.s32") > ptx.count("mul.wide.s32")

    fused = attention_accesses(ptx)
    assert len(fused) > 4000
    assert fused == attention_accesses(unfused)


def test_integer_ops_follow_ptx_semantics():
    """Each result is stored at the address it computes, so the accesses read it back."""
    body = """
	mov.u32 	%r1, %tid.x;
	sub.s32 	%r2, %r1, 7;
	div.s32 	%r3, %r2, 2;
	rem.s32 	%r4, %r2, 2;
	shr.s32 	%r5, %r2, 1;
	bfe.u32 	%r6, %r1, 1, 2;
	cvt.s64.s32 	%rd1, %r3;
	cvt.s64.s32 	%rd2, %r4;
	cvt.s64.s32 	%rd3, %r5;
	cvt.u64.u32 	%rd4, %r6;
	mad.wide.s32 	%rd5, %r2, 4, %rd9;
	st.global.b32 	[%rd1], %r1;
	st.global.b32 	[%rd2], %r1;
	st.global.b32 	[%rd3], %r1;
	st.global.b32 	[%rd4], %r1;
	st.global.b32 	[%rd5+8], %r1;
	ret;
"""
    ptx = (".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\tld.param.b64 \t%rd9, [k_param_0];"
           + body + "}\n")
    accesses = run_thread(parse(ptx), 2, (0, 0, 0), {"k_param_0": 1000})
    # tid 2: 2 - 7 = -5; -5 / 2 = -2 (toward zero), -5 % 2 = -1, -5 >> 1 = -3 (arithmetic),
    # bits 1..2 of 2 = 1, 1000 + (-5) * 4 + 8 = 988; registers hold two's-complement bits
    mask = (1 << 64) - 1
    assert [a.address for a in accesses] == [-2 & mask, -1 & mask, -3 & mask, 1, 988]
