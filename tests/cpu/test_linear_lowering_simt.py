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


REDUCE_LAYOUTS = {
    "mma_v2": ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
               "instrShape = [16, 8]}>", 32, 32),
    "mma_v3_n16": ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
                   "instrShape = [16, 16, 16]}>", 64, 32),
    "dot_a_v2": ("#ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 2, "
                 "versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>",
                 32, 32),
    "dot_b_v2": ("#ttg.dot_op<{opIdx = 1, parent = #ttg.nvidia_mma<{versionMajor = 2, "
                 "versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>",
                 32, 32),
    "dot_a_v3": ("#ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 3, "
                 "versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 32, 16]}>, "
                 "kWidth = 2}>", 64, 32),
    "blocked_wrapped": ("#ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [4, 8], "
                        "warpsPerCTA = [2, 2], order = [0, 1]}>", 8, 16),
}


def _loaded(layout: str, m: int, n: int, extra_aliases: str, name: str, body: str) -> str:
    """A one-CTA, 4-warp kernel @name(%x, %out) that loads the row-major [m, n] f32 tile %x
    into %v in `layout` (alias #l), then runs `body`."""
    t = f"tensor<{m}x{n}xf32, #l>"
    return textwrap.dedent(f"""
    #b = {BLOCKED}
    #b0 = #ttg.slice<{{dim = 0, parent = #b}}>
    #b1 = #ttg.slice<{{dim = 1, parent = #b}}>
    #l = {layout}
    {extra_aliases}
    module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
      tt.func public @{name}(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>) {{
        {_offsets("b", "b", m, n)}
        %xs = tt.splat %x : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #b>
        %xp = tt.addptr %xs, %boff : tensor<{m}x{n}x!tt.ptr<f32>, #b>, tensor<{m}x{n}xi32, #b>
        %xb = tt.load %xp : tensor<{m}x{n}x!tt.ptr<f32>, #b>
        %v = ttg.convert_layout %xb : tensor<{m}x{n}xf32, #b> -> {t}
        {body}
        tt.return
      }}
    }}
    """)


def _reduce_kernel(layout: str, m: int, n: int, axis: int) -> str:
    keep = m if axis == 1 else n
    t = f"tensor<{m}x{n}xf32, #l>"
    body = f"""{_reduce("s", "v", axis, "arith.addf", t, f"tensor<{keep}xf32, #r>")}
        %i = tt.make_range {{end = {keep} : i32, start = 0 : i32}} : tensor<{keep}xi32, #r>
        %os = tt.splat %out : !tt.ptr<f32> -> tensor<{keep}x!tt.ptr<f32>, #r>
        %op = tt.addptr %os, %i : tensor<{keep}x!tt.ptr<f32>, #r>, tensor<{keep}xi32, #r>
        tt.store %op, %s : tensor<{keep}x!tt.ptr<f32>, #r>"""
    return _loaded(layout, m, n, f"#r = #ttg.slice<{{dim = {axis}, parent = #l}}>", "red", body)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("name", list(REDUCE_LAYOUTS))
def test_reduce_on_each_axis(name, axis):
    layout, m, n = REDUCE_LAYOUTS[name]
    text = _reduce_kernel(layout, m, n, axis)
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
    x = np.random.default_rng(axis).integers(-8, 8, (m, n)).astype(np.float32)
    out = np.zeros(m if axis == 1 else n, np.float32)
    memory = run_kernel(kernel, (1,), [x, out])
    np.testing.assert_array_equal(memory.read(1, out), x.sum(axis=axis))


def test_layout_with_other_warp_count_is_a_lowering_error():
    from compiler.codegen.lowering import LoweringError
    layout = ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 2], "
              "instrShape = [16, 16, 16]}>")
    with pytest.raises(LoweringError, match="spreads over 8 warps but the kernel has 4"):
        lower_module(parse_module(_reduce_kernel(layout, 64, 32, 1)),
                     LoweringOptions(optimize=False))


def _scan_kernel(layout: str, m: int, n: int, axis: int, reverse: bool, combine: str) -> str:
    t = f"tensor<{m}x{n}xf32, #l>"
    body = f"""%s = "tt.scan"(%v) <{{axis = {axis} : i32, reverse = {str(reverse).lower()}}}> ({{
        ^bb0(%a: f32, %c: f32):
          %t = {combine} %a, %c : f32
          tt.scan.return %t : f32
        }}) : ({t}) -> {t}
        %back = ttg.convert_layout %s : {t} -> tensor<{m}x{n}xf32, #b>
        %os = tt.splat %out : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #b>
        %op = tt.addptr %os, %boff : tensor<{m}x{n}x!tt.ptr<f32>, #b>, tensor<{m}x{n}xi32, #b>
        tt.store %op, %back : tensor<{m}x{n}x!tt.ptr<f32>, #b>"""
    return _loaded(layout, m, n, "", "scan", body)


SCAN_LAYOUTS = {k: REDUCE_LAYOUTS[k] for k in ("mma_v2", "mma_v3_n16", "dot_a_v2")}
SCAN_LAYOUTS["linear"] = MMAS["linear"]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("name", list(SCAN_LAYOUTS))
def test_scan_on_each_axis(name, axis, reverse):
    layout, m, n = SCAN_LAYOUTS[name]
    text = _scan_kernel(layout, m, n, axis, reverse, "arith.addf")
    kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
    x = np.random.default_rng(axis).integers(-8, 8, (m, n)).astype(np.float32)
    out = np.zeros_like(x)
    memory = run_kernel(kernel, (1,), [x, out])
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    np.testing.assert_array_equal(memory.read(1, out), flip(np.cumsum(flip(x), axis=axis)))


def test_scan_keeps_the_combine_order():
    # a non-commutative combine, "keep the earlier operand": every element's scan is the first
    # element in scan order, only if each combine gets (earlier, later) in that order
    layout, m, n = REDUCE_LAYOUTS["mma_v3_n16"]
    for axis in (0, 1):
        for reverse in (False, True):
            text = _scan_kernel(layout, m, n, axis, reverse, "arith.addf")
            text = text.replace("%t = arith.addf %a, %c : f32",
                                "%true = arith.constant true : i1\n"
                                "          %t = arith.select %true, %a, %c : f32")
            kernel = lower_module(parse_module(text), LoweringOptions(optimize=False))
            x = np.random.default_rng(3).standard_normal((m, n)).astype(np.float32)
            out = np.zeros_like(x)
            first = np.take(x, [-1 if reverse else 0], axis=axis)
            np.testing.assert_array_equal(run_kernel(kernel, (1,), [x, out]).read(1, out),
                                          np.broadcast_to(first, x.shape))
