"""ttgir -> LLVM IR -> PTX -> cubin: Triton's reference kernels and a wide set of small kernels
lower to PTX that ptxas accepts, with Triton's instruction choices (vector widths, shuffles,
fast math) and no spills."""
from __future__ import annotations

import re

import pytest

from compiler.codegen.cubin import parse_ptxas_info
from compiler.codegen.lowering import LoweringError, lower_module
from compiler.codegen.toolchain import find_tool
from compiler.ir.parser import parse_module

from .codegen_kernels import KERNELS, compile_ttgir, module

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas is not installed")


def _count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


def _instruction_count(ptx: str) -> int:
    from compiler.codegen.linemap import instruction_lines
    return len(instruction_lines(ptx))


@needs_ptxas
def test_add_matches_triton_vector_widths(reference_dir):
    result = compile_ttgir((reference_dir / "add.ttgir").read_text())
    ptx = result.asm["ptx"]
    # like Triton's add.ptx: two 16-byte loads per input and two 16-byte stores per thread
    assert _count(ptx, r"@%p\d+ ld\.global\.v4\.b32") == 4
    assert _count(ptx, r"@%p\d+ st\.global\.v4\.b32") == 2
    assert _count(ptx, r"\badd\.f32") == 8
    assert re.search(r"^\.target sm_90$", ptx, re.MULTILINE)
    assert ".reqntid 128" in ptx          # exactly num_warps * 32 threads, as Triton says
    assert result.asm.get("cubin") and result.trace.cubin_info["spill_stores"] == 0
    triton = (reference_dir / "add.ptx").read_text()
    assert _instruction_count(ptx) <= _instruction_count(triton) + 4


@needs_ptxas
def test_softmax_uses_butterfly_shuffles_and_fast_exp(reference_dir):
    result = compile_ttgir((reference_dir / "softmax.ttgir").read_text())
    ptx = result.asm["ptx"]
    assert _count(ptx, r"ld\.global\.v4\.b32") == 2
    assert _count(ptx, r"st\.global\.v4\.b32") == 2
    assert _count(ptx, r"shfl\.sync\.bfly\.b32") == 10          # 5 per reduction
    assert _count(ptx, r"ex2\.approx\.f32") == 8
    assert _count(ptx, r"div\.full\.f32") == 8
    assert "mul.f32" in ptx and "0f3FB8AA3B" in ptx             # x * log2(e)
    assert result.metadata.shared == 16 * 4                  # one f32 per warp
    assert result.trace.cubin_info["spill_stores"] == 0
    triton = (reference_dir / "softmax.ptx").read_text()
    assert _instruction_count(ptx) <= _instruction_count(triton) * 1.1


@needs_ptxas
def test_layernorm_f16_vector_loads_and_sqrt(reference_dir):
    result = compile_ttgir((reference_dir / "layernorm.ttgir").read_text())
    ptx = result.asm["ptx"]
    # 8 halves per thread per tile repetition = one 16-byte access; X, W, B loads, Y store
    assert _count(ptx, r"ld\.global\.v4\.b32") == 12
    assert _count(ptx, r"st\.global\.v4\.b32") == 4
    assert _count(ptx, r"sqrt\.approx\.ftz\.f32") == 1
    assert "cvt.f32.f16" in ptx and re.search(r"cvt\.rn\.f16(x2)?\.f32", ptx)
    assert result.trace.cubin_info["spill_stores"] == 0
    triton = (reference_dir / "layernorm.ptx").read_text()
    assert _instruction_count(ptx) <= _instruction_count(triton) * 1.1


@needs_ptxas
def test_without_divisibility_loads_are_scalar(reference_dir):
    text = (reference_dir / "add.ttgir").read_text().replace(" {tt.divisibility = 16 : i32}", "")
    ptx = compile_ttgir(text).asm["ptx"]
    assert "ld.global.v4" not in ptx
    assert _count(ptx, r"@%p\d+ ld\.global\.b32") == 16


@needs_ptxas
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_small_kernels_reach_ptxas(name):
    result = compile_ttgir(KERNELS[name]())
    assert result.asm.get("cubin"), result.trace.notes
    assert result.trace.cubin_info["registers"] > 0
    assert result.trace.cubin_info["spill_stores"] == 0


def _ptx(name: str) -> str:
    return compile_ttgir(KERNELS[name](), build_cubin=False).asm["ptx"]


def test_reduce_across_warps_goes_through_shared_memory():
    ptx = _ptx("reduce_axis0")
    # dim 0 spans 4 lanes (2 butterfly steps per output register) and 4 warps
    assert _count(ptx, r"shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, 16,") == 8
    assert _count(ptx, r"shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, 8,") == 8
    assert "bar.sync" in ptx and "st.shared" in ptx and "ld.shared" in ptx
    # along dim 1 everything stays in one warp: no shared memory
    ptx1 = _ptx("reduce_axis1")
    assert "bar.sync" not in ptx1 and "shfl.sync.bfly" in ptx1


def test_convert_layout_uses_shared_memory_and_barriers():
    ptx = _ptx("convert")
    assert _count(ptx, r"bar\.sync") >= 2
    assert "st.shared" in ptx and "ld.shared" in ptx


def test_half_and_bfloat_conversions_round_to_nearest():
    ptx = _ptx("half_types")
    assert re.search(r"cvt\.rn\.bf16(x2)?\.f32", ptx) and re.search(r"cvt\.rn\.f16(x2)?\.f32", ptx)
    assert "cvt.f32.f16" in ptx
    assert "ex2.approx" in ptx
    assert _count(ptx, r"ld\.global\.v4\.b32") == 1             # 8 halves = 16 bytes


def test_integer_ops_keep_signedness():
    ptx = _ptx("int_ops")
    # division by constants becomes multiply-high: signed for divsi, unsigned for divui
    for instr in ("mul.hi.s32", "mul.hi.u32", "shr.s32", "max.u32", "setp.gt.s32", "xor.b32",
                  "cvt.rzi.s32.f32"):
        assert instr in ptx, instr
    assert re.search(r"cvt\.rn\.f32\.s(32|64)", ptx)


def test_loops_and_ifs_become_branches_with_phis():
    kernel = lower_module(parse_module(KERNELS["loop_if"]()))
    assert "phi" in kernel.llvm_ir and "br i1" in kernel.llvm_ir
    ptx = _ptx("loop_if")
    assert _count(ptx, r"@%p\d+ bra") >= 1


def test_scan_uses_shuffle_up_and_shared_memory():
    ptx = _ptx("scan")
    assert "shfl.sync.up.b32" in ptx and "shfl.sync.idx.b32" in ptx and "bar.sync" in ptx


def test_atomics_emit_predicated_atom():
    ptx = _ptx("atomics")
    # Triton's qualifier order: scope then ordering for read-modify-writes, the reverse for CAS
    assert _count(ptx, r"atom\.global\.gpu\.acq_rel\.add\.f32") == 8
    assert _count(ptx, r"atom\.global\.gpu\.acq_rel\.add\.u32") == 8
    assert _count(ptx, r"atom\.global\.acq_rel\.gpu\.cas\.b32") == 1


def test_an_unread_scalar_atomic_is_not_broadcast():
    # Triton's lock release: only a scalar atomic whose old value is read goes to shared memory
    # (thread 0 stores it between two barriers); the release is one predicated atom
    ptx = _ptx("lock_release")
    assert _count(ptx, r"@%p\d+ atom\.global\.acq_rel\.gpu\.cas\.b32") == 1
    assert _count(ptx, r"@%p\d+ atom\.global\.gpu\.acq_rel\.exch\.b32") == 1
    assert _count(ptx, r"bar\.sync") == 2
    assert _count(ptx, r"st\.shared") == 1


def test_dot_through_fma():
    ptx = _ptx("dot")
    # 32x32 accumulator over 128 threads = 8 registers each: 8 FMAs in a k-loop (not unrolled)
    assert _count(ptx, r"fma\.rn\.f32") == 8
    assert _count(ptx, r"@%p\d+ bra") == 1
    assert "ld.shared" in ptx


def test_dot_reads_local_buffers_directly():
    kernel = lower_module(parse_module(KERNELS["dot_shared"]()))
    # two 32x32 f32 buffers and no scratch copy of the dot operands
    assert kernel.shared_bytes == 2 * 32 * 32 * 4


def test_print_and_assert():
    ptx = _ptx("while_print_assert")
    assert "vprintf" in ptx and "__assertfail" in ptx


def test_kernel_metadata(reference_dir):
    kernel = lower_module(parse_module((reference_dir / "layernorm.ttgir").read_text()))
    assert kernel.name == "layernorm_kernel"
    assert kernel.num_warps == 8
    assert kernel.arg_kinds == ["ptr<f16>", "ptr<f16>", "ptr<f16>", "ptr<f16>", "i32", "i32", "f32"]
    assert kernel.ttgir_file == "layernorm_kernel.ttgir"
    # the nvvm.annotations entry (LLVM upgrades it to a function attribute)
    assert '"nvvm.reqntid"="256"' in kernel.llvm_ir or '!"reqntidx", i32 256' in kernel.llvm_ir


def test_unsupported_op_names_the_ttgir_line(monkeypatch):
    text = KERNELS["int_ops"]().replace("tt.get_program_id x : i32", "tt.get_program_id x : i32\n"
                                        '    "tt.mystery"() : () -> ()')
    from compiler.ir.core import Operation, OP_REGISTRY
    monkeypatch.setitem(OP_REGISTRY, "tt.mystery",
                        type("MysteryOp", (Operation,), {"name": "tt.mystery"}))
    with pytest.raises(LoweringError, match=r"no lowering for tt.mystery \(ttgir line \d+\)"):
        lower_module(parse_module(text))


def test_parse_ptxas_report():
    report = ("ptxas info    : Used 26 registers, used 0 barriers, 8 bytes smem, 380 bytes cmem[0]\n"
              "ptxas info    : Function properties for k\n"
              "    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n")
    info = parse_ptxas_info(report)
    assert info == {"registers": 26, "shared_memory": 8, "constant_memory": 380,
                    "stack_frame": 16, "spill_stores": 4, "spill_loads": 8}


def _accesses(func):
    """(pointer, mask or None, bytes per element) of every tt.load / tt.store of a function."""
    from compiler.codegen.llvm_helpers import byte_width
    for op in func.walk():
        if op.name not in ("tt.load", "tt.store"):
            continue
        mask_index = 1 if op.name == "tt.load" else 2
        mask = op.operands[mask_index] if len(op.operands) > mask_index else None
        value = op.results[0] if op.results else op.operands[1]
        yield op.operands[0], mask, byte_width(value.type)


def test_lowering_vector_widths_come_from_the_axis_analysis(reference_dir):
    """On every access of the test kernels the lowering's width is the axis analysis's,
    narrowed only where the thread's registers are not contiguous; many accesses vectorize."""
    from compiler.analysis import axis_info
    from compiler.codegen import vector_width as vw
    from compiler.dialects.ttg import BlockedEncoding
    texts = [KERNELS[name]() for name in sorted(KERNELS)]
    texts += [(reference_dir / f"{n}.ttgir").read_text() for n in ("add", "softmax", "layernorm")]
    checked, wide = 0, 0
    for text in texts:
        func = parse_module(text).functions()[0]
        info = vw.analyze(func)
        for ptr, mask, elem_bytes in _accesses(func):
            width = vw.vector_width(info, ptr, mask, elem_bytes)
            analysed = axis_info.vector_width(ptr, info, mask=mask)
            assert width & (width - 1) == 0 and width * elem_bytes <= 16
            assert width <= analysed
            if isinstance(getattr(ptr.type, "encoding", None), BlockedEncoding):
                assert width == analysed
            checked += 1
            wide += width > 1
    assert checked > 20 and wide > 30


def test_lowering_vectorizes_a_slice_by_its_linear_registers():
    """A slice that drops its parent's fastest dim keeps the parent's registers along the other
    dim, in the linear layout's register order (the lowering's): four consecutive elements per
    thread, one 16-byte access, though the slice's blocked root runs along the dropped dim."""
    from compiler.analysis import layouts
    from compiler.codegen import vector_width as vw
    layout = "#ttg.slice<{dim = 1, parent = #blocked}>"
    body = f"""  tt.func public @k(%x: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}) {{
    %r = tt.make_range {{end = 64 : i32, start = 0 : i32}} : tensor<64xi32, {layout}>
    %p = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>, {layout}>
    %pp = tt.addptr %p, %r : tensor<64x!tt.ptr<f32>, {layout}>, tensor<64xi32, {layout}>
    %v = tt.load %pp : tensor<64x!tt.ptr<f32>, {layout}>
    tt.return
  }}
"""
    parent = ("#ttg.blocked<{sizePerThread = [4, 4], threadsPerWarp = [4, 8], "
              "warpsPerCTA = [4, 1], order = [1, 0]}>")
    func = parse_module(module(body, {"blocked": parent})).functions()[0]
    info = vw.analyze(func)
    [(ptr, mask, elem_bytes)] = list(_accesses(func))
    assert layouts.thread_elements(ptr.type.encoding, (64,), 0, 8)[:4] == [(4,), (5,), (6,), (7,)]
    assert vw.register_run(ptr.type) == (0, 4)
    assert vw.vector_width(info, ptr, mask, elem_bytes) == 4


def test_sass_needs_a_disassembler(reference_dir):
    from compiler.codegen.sass import disassemble
    result = compile_ttgir((reference_dir / "add.ttgir").read_text())
    sass = disassemble(result.asm.get("cubin"))
    if find_tool("nvdisasm") is None and find_tool("cuobjdump") is None:
        assert sass is None
    else:
        assert "add_kernel" in sass


def _elementwise_kernel(dtype: str) -> str:
    """A kernel applying every float math op and binary op to one tensor (chained)."""
    from compiler.codegen.lower_elementwise import FLOAT_BINARY, MATH_UNARY
    T = f"tensor<128x{dtype}, #blocked>"
    lines, prev = [], "%x"
    for i, name in enumerate(sorted(MATH_UNARY)):
        lines.append(f"    %u{i} = math.{name} {prev} : {T}")
        prev = f"%u{i}"
    for i, name in enumerate(sorted(FLOAT_BINARY)):
        lines.append(f"    %b{i} = arith.{name} {prev}, %x : {T}")
        prev = f"%b{i}"
    lines.append(f"    %f = math.fma {prev}, %x, %x : {T}")
    lines.append(f"    %ng = arith.negf %f : {T}")
    body = "\n".join(lines)
    layout = "#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
    return f"""#blocked = {layout}
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @every_op(%p: !tt.ptr<{dtype}>) {{
    %offs = tt.make_range {{end = 128 : i32, start = 0 : i32}} : tensor<128xi32, #blocked>
    %ps = tt.splat %p : !tt.ptr<{dtype}> -> tensor<128x!tt.ptr<{dtype}>, #blocked>
    %pp = tt.addptr %ps, %offs : tensor<128x!tt.ptr<{dtype}>, #blocked>, tensor<128xi32, #blocked>
    %x = tt.load %pp : tensor<128x!tt.ptr<{dtype}>, #blocked>
{body}
    tt.store %pp, %ng : tensor<128x!tt.ptr<{dtype}>, #blocked>
    tt.return
  }}
}}
"""


@needs_ptxas
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_every_float_lowering_reaches_ptxas(dtype):
    result = compile_ttgir(_elementwise_kernel(dtype))
    assert result.asm.get("cubin") and result.trace.cubin_info["spill_stores"] == 0
    assert "ex2.approx.f32" in result.asm["ptx"] and "lg2.approx.f32" in result.asm["ptx"]
