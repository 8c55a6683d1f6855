"""A `ttg.convert_layout` through shared memory whose buffer would exceed the target's shared
memory (`compiler.analysis.conversion.SHARED_LIMIT_BYTES`) goes in rounds through a smaller
buffer: the case is Triton's test_convert_mma2mma with mma v2 warps [1, 4] <-> [4, 1] on a
256 x 256 tile (its i32 offsets alone would need 262144 bytes). The allocation stays within the
limit, every element arrives (CPU SIMT evaluator), and ptxas accepts the PTX."""
from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from compiler.analysis.conversion import SHARED_LIMIT_BYTES, plan_conversion
from compiler.analysis.layout_to_linear import to_linear_layout
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.dialects import ttg
from compiler.ir import parse_module

from .simt import run_kernel


def _mma(warps, version: int = 2, instr=(16, 8)) -> ttg.NvidiaMmaEncoding:
    return ttg.NvidiaMmaEncoding(version, 0, tuple(warps), tuple(instr))


def _kernel(m: int, n: int, src, dst, num_warps: int = 4) -> str:
    """Triton's test_convert_mma2mma kernel: offsets and an f16 tile, both converted."""
    def t(ty, enc):
        return f"tensor<{m}x{n}x{ty}, #{enc}>"
    return textwrap.dedent(f"""
    #src = {src}
    #dst = {dst}
    module attributes {{"ttg.num-warps" = {num_warps} : i32, "ttg.num-ctas" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "cuda:90"}} {{
    tt.func public @kernel_0d1d(%arg0: !tt.ptr<f16> {{tt.divisibility = 16 : i32}}, %arg1: !tt.ptr<f16> {{tt.divisibility = 16 : i32}}) {{
      %cst = arith.constant dense<{n}> : tensor<{m}x1xi32, #src>
      %0 = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32, #ttg.slice<{{dim = 1, parent = #src}}>>
      %1 = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32, #ttg.slice<{{dim = 0, parent = #src}}>>
      %2 = tt.splat %arg0 : !tt.ptr<f16> -> {t("!tt.ptr<f16>", "src")}
      %3 = tt.splat %arg1 : !tt.ptr<f16> -> {t("!tt.ptr<f16>", "dst")}
      %4 = tt.expand_dims %0 {{axis = 1 : i32}} : tensor<{m}xi32, #ttg.slice<{{dim = 1, parent = #src}}>> -> tensor<{m}x1xi32, #src>
      %5 = arith.muli %4, %cst : tensor<{m}x1xi32, #src>
      %6 = tt.expand_dims %1 {{axis = 0 : i32}} : tensor<{n}xi32, #ttg.slice<{{dim = 0, parent = #src}}>> -> tensor<1x{n}xi32, #src>
      %7 = tt.broadcast %6 : tensor<1x{n}xi32, #src> -> {t("i32", "src")}
      %8 = tt.broadcast %5 : tensor<{m}x1xi32, #src> -> {t("i32", "src")}
      %9 = arith.addi %8, %7 : {t("i32", "src")}
      %10 = tt.addptr %2, %9 : {t("!tt.ptr<f16>", "src")}, {t("i32", "src")}
      %11 = tt.load %10 : {t("!tt.ptr<f16>", "src")}
      %12 = ttg.convert_layout %9 : {t("i32", "src")} -> {t("i32", "dst")}
      %13 = ttg.convert_layout %11 : {t("f16", "src")} -> {t("f16", "dst")}
      %14 = tt.addptr %3, %12 : {t("!tt.ptr<f16>", "dst")}, {t("i32", "dst")}
      tt.store %14, %13 : {t("!tt.ptr<f16>", "dst")}
      tt.return
    }}
    }}
    """)


WIDE, TALL = _mma([1, 4]), _mma([4, 1])
#: Triton's test_convert_mma2mma pairs whose 256 x 256 i32 conversion needs rounds: (a, b, warps)
ROUND_PAIRS = {
    "v2": (WIDE, TALL, 4),
    "v2-16-warps": (_mma([2, 8]), _mma([8, 2]), 16),
    "v3": (_mma([1, 4], 3, (16, 32, 32)), _mma([4, 1], 3, (16, 64, 32)), 4),
}


def _layout(encoding, shape):
    return to_linear_layout(encoding, shape)


def test_a_plan_over_the_limit_goes_in_rounds_within_it():
    shape = (256, 256)
    plan = plan_conversion(_layout(WIDE, shape), _layout(TALL, shape), 4)
    assert plan.strategy == "shared"
    assert 256 * 256 * 4 > SHARED_LIMIT_BYTES >= plan.scratch_bytes
    assert plan.swizzle.rounds == 2 and plan.scratch_bytes == 256 * 256 * 2
    assert "2 rounds" in plan.describe()


@pytest.mark.parametrize("pair", ["v2", "v3"])
def test_rounds_keep_the_conversion_free_of_bank_conflicts(pair):
    from compiler.analysis.bank_conflicts import conversion_conflicts
    shape = (256, 256)
    a, b, _ = ROUND_PAIRS[pair]
    for src, dst in ((a, b), (b, a)):
        s, d = _layout(src, shape), _layout(dst, shape)
        plan = plan_conversion(s, d, 4)
        assert plan.swizzle.rounds == 2
        counts = conversion_conflicts(s, d, plan.swizzle, 4)
        assert sum(counts["store"]) == 0 and sum(counts["load"]) == 0, counts


def test_a_plan_under_the_limit_is_one_round():
    shape = (256, 256)
    plan = plan_conversion(_layout(WIDE, shape), _layout(TALL, shape), 2)
    assert plan.swizzle.rounds == 1 and plan.scratch_bytes == 256 * 256 * 2


def test_a_smaller_limit_gives_more_rounds_and_a_smaller_buffer():
    shape = (64, 64)
    plan = plan_conversion(_layout(WIDE, shape), _layout(TALL, shape), 4, limit_bytes=2048)
    assert plan.swizzle.rounds == 8 and plan.scratch_bytes == 2048


@pytest.mark.parametrize("pair", list(ROUND_PAIRS))
@pytest.mark.parametrize("backwards", [False, True])
def test_conversion_in_rounds_moves_every_element(pair, backwards):
    m = n = 256
    src, dst, warps = ROUND_PAIRS[pair]
    if backwards:
        src, dst = dst, src
    kernel = lower_module(parse_module(_kernel(m, n, src, dst, warps)),
                          LoweringOptions(optimize=False))
    assert kernel.shared_bytes <= SHARED_LIMIT_BYTES
    assert len(re.findall(r"; convert_layout: shared .*2 rounds", str(kernel.llvm_ir))) == 1
    data = np.random.default_rng(0).standard_normal((m, n)).astype(np.float16)
    out = np.zeros_like(data)
    memory = run_kernel(kernel, (1,), [data, out])
    np.testing.assert_array_equal(memory.read(1, out), data)


def test_conversion_in_rounds_is_accepted_by_ptxas():
    from compiler.codegen.toolchain import find_tool
    if find_tool("ptxas") is None:
        pytest.skip("no ptxas")
    from tests.cpu.codegen_kernels import compile_ttgir
    compiled = compile_ttgir(_kernel(256, 256, WIDE, TALL), build_cubin=True)
    assert compiled.asm["cubin"]
    assert compiled.metadata.shared <= SHARED_LIMIT_BYTES


def test_too_few_shared_register_bits_is_a_plan_error():
    shape = (64, 64)
    with pytest.raises(ValueError, match="more than the 64 the target has"):
        plan_conversion(_layout(WIDE, shape), _layout(TALL, shape), 4, limit_bytes=64)


def test_a_conversion_that_cannot_fit_is_a_located_lowering_error(monkeypatch):
    from compiler.analysis import conversion
    from compiler.codegen.lowering import LoweringError
    monkeypatch.setattr(conversion, "SHARED_LIMIT_BYTES", 64)
    with pytest.raises(LoweringError) as err:
        lower_module(parse_module(_kernel(64, 64, WIDE, TALL)), LoweringOptions(optimize=False))
    message = str(err.value)
    assert "ttg.convert_layout" in message and "more than the 64 the target has" in message
    assert ".ttgir:" in message
