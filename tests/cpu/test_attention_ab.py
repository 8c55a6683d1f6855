"""The CPU half of bench/attention_ab.py (the H200 experiment that launches ours' and Triton's
attention cubins through one raw cuLaunchKernel): parameter types read off the PTX, the packed
argument buffer (Triton's two trailing scratch pointers left null), the shared-alignment
variant, and the runtime values both kernels take."""
from __future__ import annotations

import ctypes
import shutil
import struct

import pytest

from bench.attention_ab import (RawArgs, fuse_mad_wide, kernel_values, ptx_param_types,
                                split_mad_wide, with_shared_align)
from sample_kernels.attention import _strides
from tests.cpu.mma_cases import attention_accesses, compile_attention_sm90

#: Triton 3.6's entry for the same source: our 19 parameters plus its two scratch pointers
TRITON_HEADER = """.extern .shared .align 16 .b8 global_smem[];
.visible .entry attention_kernel(
	.param .u64 .ptr .global .align 1 attention_kernel_param_0,
	.param .f32 attention_kernel_param_1,
	.param .u32 attention_kernel_param_2,
	.param .u64 .ptr .global .align 1 attention_kernel_param_3,
	.param .u64 .ptr .global .align 1 attention_kernel_param_4
)
.reqntid 128
{
"""


def test_param_types_of_a_triton_style_entry():
    assert ptx_param_types(TRITON_HEADER) == ["u64", "f32", "u32", "u64", "u64"]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")
def test_param_types_of_our_attention_ptx():
    compiled = compile_attention_sm90(128, 64, 64, 4, shape=(1, 2, 128, 128), stop_after="ptx")
    # 4 pointers, sm_scale, 12 strides (each tensor's last, 1, is specialized away), H, N_CTX
    assert ptx_param_types(compiled.asm["ptx"]) == ["u64"] * 4 + ["f32"] + ["u32"] * 14


def test_raw_args_pack_one_cell_per_parameter_and_null_the_rest():
    args = RawArgs(["u64", "f32", "u32", "u64", "u64"], [0x1234_5678_9ABC, 0.5, 7])
    cells = [ctypes.c_void_p.from_address(args.address + 8 * i).value for i in range(5)]
    assert ctypes.c_uint64.from_address(cells[0]).value == 0x1234_5678_9ABC
    assert struct.unpack("f", ctypes.string_at(cells[1], 4))[0] == 0.5
    assert ctypes.c_uint32.from_address(cells[2]).value == 7
    assert [ctypes.c_uint64.from_address(c).value for c in cells[3:]] == [0, 0]
    with pytest.raises(ValueError):
        RawArgs(["u64"], [1, 2])


def test_shared_alignment_variant_changes_only_the_declaration():
    ptx = TRITON_HEADER.replace("align 16 .b8", "align 1024 .b8")
    out = with_shared_align(ptx, 16)
    assert out == TRITON_HEADER
    assert ".param .u64 .ptr .global .align 1" in out      # parameter alignments untouched


class _Tensor:
    """The two methods kernel_values reads of a torch tensor."""

    def __init__(self, pointer: int, shape: tuple):
        self.pointer, self.shape = pointer, shape

    def data_ptr(self) -> int:
        return self.pointer

    def stride(self) -> tuple:
        return _strides(self.shape)


def test_kernel_values_follow_the_signature():
    shape = (4, 32, 4096, 128)
    q, k, v, o = (_Tensor(p, shape) for p in (16, 32, 48, 64))
    values = kernel_values(q, k, v, o, 128)
    assert values[:4] == [16, 32, 48, 64] and values[4] == 128 ** -0.5
    assert values[5:8] == list(_strides(shape)[:3]) and len(values) == 19
    assert values[-2:] == [32, 4096]


#: the two address forms: llvmlite's LLVM (ours) and Triton 3.6's LLVM
PAIR = """{
\tmul.wide.s32 \t%rd82, %r163, 2;
\t.loc\t1 94 0
\tadd.s64 \t%rd21, %rd10, %rd82;
\tmul.wide.s32 \t%rd83, %r165, 2;
\tadd.s64 \t%rd22, %rd83, %rd10;
\tmul.wide.s32 \t%rd84, %r167, 2;
\tadd.s64 \t%rd23, %rd10, %rd84;
\tst.global.b64 \t[%rd1], %rd84;
}"""


def test_fuse_mad_wide_fuses_single_use_pairs_only():
    out = fuse_mad_wide(".visible .entry k()\n" + PAIR)
    # CHECK: mad.wide.s32 %rd21, %r163, 2, %rd10  (across a .loc line)
    assert "mad.wide.s32 \t%rd21, %r163, 2, %rd10;" in out
    # CHECK: the operand order of the add does not matter
    assert "mad.wide.s32 \t%rd22, %r165, 2, %rd10;" in out
    # CHECK-NOT: a product with another use (the store of %rd84) stays a pair
    assert "mul.wide.s32 \t%rd84, %r167, 2;" in out and "%rd23, %rd10, %rd84" in out
    assert out.count("mad.wide") == 2


def test_split_mad_wide_declares_its_temporaries():
    ptx = ".visible .entry k()\n{\n\tmad.wide.s32 \t%rd86, %r572, 2, %rd2;\n}"
    out = split_mad_wide(ptx)
    assert "\t.reg .b64 \t%wide<1>;" in out
    assert "mul.wide.s32 \t%wide0, %r572, 2;\n\tadd.s64 \t%rd86, %rd2, %wide0;" in out
    assert "mad.wide" not in out
    assert split_mad_wide(PAIR) == PAIR                       # nothing to split


def test_fused_and_split_ptx_compute_the_same_addresses():
    """Value check of both rewrites on our attention PTX: every thread's cp.async, ld/st
    addresses and masks are those of the original, evaluated per thread."""
    ptx = compile_attention_sm90(128, 64, 64, 4, shape=(1, 2, 128, 128),
                                 stop_after="ptx").asm["ptx"]
    fused = fuse_mad_wide(ptx)
    assert fused.count("mad.wide.s32") > 20
    original = attention_accesses(ptx)
    assert len(original) > 4000
    assert attention_accesses(fused) == original
    assert attention_accesses(split_mad_wide(fused)) == original


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")
def test_rewritten_ptx_assembles():
    from compiler.codegen.cubin import assemble
    ptx = compile_attention_sm90(128, 64, 64, 4, shape=(1, 2, 128, 128),
                                 stop_after="ptx").asm["ptx"]
    for text in (fuse_mad_wide(ptx), split_mad_wide(fuse_mad_wide(ptx))):
        cubin, info = assemble(text, "sm_90a")
        assert cubin and info["spill_stores"] == 0
