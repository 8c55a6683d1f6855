"""Ops on tensor-core layouts lowered from their linear layouts, run on the CPU SIMT evaluator
(tests/cpu/simt.py) and checked against numpy: an online-softmax-like step on an mma v2 / v3
accumulator (row max, subtract its broadcast, column sum, stores from the mma layout and its
slices), the part of flash attention that had no lowering."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.ir import parse_module

from .simt import run_kernel

BLOCKED = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
           "order = [1, 0]}>")
MMAS = {
    "v2_2x2": ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
               "instrShape = [16, 8]}>", 32, 32),
    "v2_4x1": ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], "
               "instrShape = [16, 8]}>", 64, 16),
    "v3_4x1": ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
               "instrShape = [16, 32, 16]}>", 64, 64),
    "v3_small": ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
                 "instrShape = [16, 64, 16]}>", 32, 32),
    "linear": ("#ttg.linear<{register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], "
               "[1, 0], [2, 0], [4, 0]], warp = [[16, 0], [0, 0]], block = []}>", 32, 16),
}


def _reduce(name, value, axis, op, ty, result):
    return f"""
    %{name} = "tt.reduce"(%{value}) <{{axis = {axis} : i32}}> ({{
    ^bb0(%a: f32, %b: f32):
      %t = {op} %a, %b : f32
      tt.reduce.return %t : f32
    }}) : ({ty}) -> {result}"""


def _offsets(p: str, layout: str, m: int, n: int) -> str:
    """%{p}r, %{p}c (row and column ranges) and %{p}off = row * n + column, in `layout`."""
    return f"""
        %{p}n = arith.constant dense<{n}> : tensor<{m}x1xi32, #{layout}>
        %{p}r = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32, #{layout}1>
        %{p}c = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32, #{layout}0>
        %{p}r2 = tt.expand_dims %{p}r {{axis = 1 : i32}} : tensor<{m}xi32, #{layout}1> -> tensor<{m}x1xi32, #{layout}>
        %{p}rs = arith.muli %{p}r2, %{p}n : tensor<{m}x1xi32, #{layout}>
        %{p}c2 = tt.expand_dims %{p}c {{axis = 0 : i32}} : tensor<{n}xi32, #{layout}0> -> tensor<1x{n}xi32, #{layout}>
        %{p}rb = tt.broadcast %{p}rs : tensor<{m}x1xi32, #{layout}> -> tensor<{m}x{n}xi32, #{layout}>
        %{p}cb = tt.broadcast %{p}c2 : tensor<1x{n}xi32, #{layout}> -> tensor<{m}x{n}xi32, #{layout}>
        %{p}off = arith.addi %{p}rb, %{p}cb : tensor<{m}x{n}xi32, #{layout}>"""


def _kernel(mma: str, m: int, n: int) -> str:
    t = f"tensor<{m}x{n}xf32, #mma>"
    body = f"""
    #b = {BLOCKED}
    #b0 = #ttg.slice<{{dim = 0, parent = #b}}>
    #b1 = #ttg.slice<{{dim = 1, parent = #b}}>
    #mma = {mma}
    #mma0 = #ttg.slice<{{dim = 0, parent = #mma}}>
    #mma1 = #ttg.slice<{{dim = 1, parent = #mma}}>
    module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
      tt.func public @step(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %rmax: !tt.ptr<f32>, %csum: !tt.ptr<f32>) {{
        {_offsets("b", "b", m, n)}
        %xs = tt.splat %x : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #b>
        %xp = tt.addptr %xs, %boff : tensor<{m}x{n}x!tt.ptr<f32>, #b>, tensor<{m}x{n}xi32, #b>
        %xb = tt.load %xp : tensor<{m}x{n}x!tt.ptr<f32>, #b>
        %v = ttg.convert_layout %xb : tensor<{m}x{n}xf32, #b> -> {t}
        {_reduce("mx", "v", 1, "arith.maxnumf", t, f"tensor<{m}xf32, #mma1>")}
        %mx2 = tt.expand_dims %mx {{axis = 1 : i32}} : tensor<{m}xf32, #mma1> -> tensor<{m}x1xf32, #mma>
        %mxb = tt.broadcast %mx2 : tensor<{m}x1xf32, #mma> -> {t}
        %e = arith.subf %v, %mxb : {t}
        {_reduce("cs", "e", 0, "arith.addf", t, f"tensor<{n}xf32, #mma0>")}
        {_offsets("m", "mma", m, n)}
        %ys = tt.splat %y : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #mma>
        %yp = tt.addptr %ys, %moff : tensor<{m}x{n}x!tt.ptr<f32>, #mma>, tensor<{m}x{n}xi32, #mma>
        tt.store %yp, %e : tensor<{m}x{n}x!tt.ptr<f32>, #mma>
        %rms = tt.splat %rmax : !tt.ptr<f32> -> tensor<{m}x!tt.ptr<f32>, #mma1>
        %rmp = tt.addptr %rms, %mr : tensor<{m}x!tt.ptr<f32>, #mma1>, tensor<{m}xi32, #mma1>
        tt.store %rmp, %mx : tensor<{m}x!tt.ptr<f32>, #mma1>
        %css = tt.splat %csum : !tt.ptr<f32> -> tensor<{n}x!tt.ptr<f32>, #mma0>
        %csp = tt.addptr %css, %mc : tensor<{n}x!tt.ptr<f32>, #mma0>, tensor<{n}xi32, #mma0>
        tt.store %csp, %cs : tensor<{n}x!tt.ptr<f32>, #mma0>
        tt.return
      }}
    }}
    """
    return textwrap.dedent(body)


@pytest.mark.parametrize("name", list(MMAS))
def test_softmax_step_on_an_mma_accumulator(name):
    mma, m, n = MMAS[name]
    kernel = lower_module(parse_module(_kernel(mma, m, n)), LoweringOptions(optimize=False))
    rng = np.random.default_rng(7)
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = np.zeros_like(x)
    rmax = np.zeros(m, np.float32)
    csum = np.zeros(n, np.float32)
    memory = run_kernel(kernel, (1,), [x, y, rmax, csum])
    want_max = x.max(axis=1)
    want_e = x - want_max[:, None]
    np.testing.assert_array_equal(memory.read(2, rmax), want_max)
    np.testing.assert_array_equal(memory.read(1, y), want_e)
    np.testing.assert_allclose(memory.read(3, csum), want_e.sum(axis=0), rtol=1e-5, atol=1e-5)
