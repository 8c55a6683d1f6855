"""The interpreter's control flow, calls, reductions, scans, dot, print and assert, on
hand-written ttir checked against numpy."""
from __future__ import annotations

import io

import numpy as np
import pytest

from compiler.runtime.interpreter import KernelAssertionError, interpret

from ._interp_ir import kernel, tile_pointers, vector_pointers

RNG = np.random.default_rng(99)
M, N = 8, 16
TILE = f"tensor<{M}x{N}"


def test_scf_for_carries_values_and_pointers():
    lines = [
        "%c0 = arith.constant 0 : i32",
        "%c1 = arith.constant 1 : i32",
        "%zero = arith.constant dense<0.000000e+00> : tensor<16xf32>",
        "%step = arith.constant dense<16> : tensor<16xi32>",
        *vector_pointers("x", "f32", 16, "p"),
        "%res:2 = scf.for %k = %c0 to %K step %c1 iter_args(%acc = %zero, %ptr = %p) -> "
        "(tensor<16xf32>, tensor<16x!tt.ptr<f32>>) : i32 {",
        "  %v = tt.load %ptr : tensor<16x!tt.ptr<f32>>",
        "  %acc2 = arith.addf %acc, %v : tensor<16xf32>",
        "  %ptr2 = tt.addptr %ptr, %step : tensor<16x!tt.ptr<f32>>, tensor<16xi32>",
        "  scf.yield %acc2, %ptr2 : tensor<16xf32>, tensor<16x!tt.ptr<f32>>",
        "}",
        *vector_pointers("out", "f32", 16, "o"),
        "tt.store %o, %res#0 : tensor<16x!tt.ptr<f32>>",
    ]
    module = kernel("%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %K: i32", lines)
    for k in (0, 1, 7):
        x = RNG.standard_normal((max(k, 1), 16)).astype(np.float32)
        out = np.full(16, -1.0, dtype=np.float32)
        interpret(module, (1,), [x, out, k])
        expected = np.zeros(16, np.float32)
        for row in x[:k]:
            expected = expected + row          # float32, in loop order
        np.testing.assert_array_equal(out, expected)


def test_scf_if_yields_per_program():
    lines = [
        "%pid = tt.get_program_id x : i32",
        "%c2 = arith.constant 2 : i32",
        "%c0 = arith.constant 0 : i32",
        "%rem = arith.remsi %pid, %c2 : i32",
        "%even = arith.cmpi eq, %rem, %c0 : i32",
        "%c16 = arith.constant 16 : i32",
        "%rowoff = arith.muli %pid, %c16 : i32",
        "%xrow = tt.addptr %x, %rowoff : !tt.ptr<f32>, i32",
        *vector_pointers("xrow", "f32", 16, "p"),
        "%v = tt.load %p : tensor<16x!tt.ptr<f32>>",
        "%r = scf.if %even -> (tensor<16xf32>) {",
        "  %two = arith.constant dense<2.000000e+00> : tensor<16xf32>",
        "  %d = arith.mulf %v, %two : tensor<16xf32>",
        "  scf.yield %d : tensor<16xf32>",
        "} else {",
        "  %one = arith.constant dense<1.000000e+00> : tensor<16xf32>",
        "  %i = arith.addf %v, %one : tensor<16xf32>",
        "  scf.yield %i : tensor<16xf32>",
        "}",
        "tt.store %p, %r : tensor<16x!tt.ptr<f32>>",
    ]
    module = kernel("%x: !tt.ptr<f32>", lines)
    x = RNG.standard_normal((5, 16)).astype(np.float32)
    expected = x.copy()
    expected[0::2] *= 2
    expected[1::2] += 1
    interpret(module, (5,), [x])
    np.testing.assert_array_equal(x, expected)


def test_scf_while_counts_collatz_steps():
    lines = [
        "%c0 = arith.constant 0 : i32",
        "%c1 = arith.constant 1 : i32",
        "%c2 = arith.constant 2 : i32",
        "%c3 = arith.constant 3 : i32",
        '%w:2 = "scf.while"(%n, %c0) ({',
        "^bb0(%v: i32, %steps: i32):",
        "  %go = arith.cmpi ne, %v, %c1 : i32",
        "  scf.condition %go, %v, %steps : i1, i32, i32",
        "}, {",
        "^bb0(%v2: i32, %s2: i32):",
        "  %half = arith.divsi %v2, %c2 : i32",
        "  %t = arith.muli %v2, %c3 : i32",
        "  %t1 = arith.addi %t, %c1 : i32",
        "  %bit = arith.remsi %v2, %c2 : i32",
        "  %isodd = arith.cmpi eq, %bit, %c1 : i32",
        "  %next = arith.select %isodd, %t1, %half : i32",
        "  %s3 = arith.addi %s2, %c1 : i32",
        "  scf.yield %next, %s3 : i32, i32",
        "}) : (i32, i32) -> (i32, i32)",
        "tt.store %out, %w#1 : !tt.ptr<i32>",
    ]
    module = kernel("%out: !tt.ptr<i32>, %n: i32", lines)

    def collatz(n):
        steps = 0
        while n != 1:
            n = 3 * n + 1 if n % 2 else n // 2
            steps += 1
        return steps

    for n in (1, 6, 27, 97):
        out = np.zeros(1, np.int32)
        interpret(module, (1,), [out, n])
        assert out[0] == collatz(n)


def test_tt_call_runs_a_private_function():
    callee = """  tt.func private @axpy(%a: tensor<16xf32>, %s: f32) -> tensor<16xf32> {
    %ss = tt.splat %s : f32 -> tensor<16xf32>
    %m = arith.mulf %a, %ss : tensor<16xf32>
    %r = arith.addf %m, %a : tensor<16xf32>
    tt.return %r : tensor<16xf32>
  }"""
    lines = [*vector_pointers("x", "f32", 16, "p"),
             "%v = tt.load %p : tensor<16x!tt.ptr<f32>>",
             "%y = tt.call @axpy(%v, %s) : (tensor<16xf32>, f32) -> tensor<16xf32>",
             "%z = tt.call @axpy(%y, %s) : (tensor<16xf32>, f32) -> tensor<16xf32>",
             "tt.store %p, %z : tensor<16x!tt.ptr<f32>>"]
    module = kernel("%x: !tt.ptr<f32>, %s: f32", lines, callee)
    x = RNG.standard_normal(16).astype(np.float32)
    s = np.float32(0.37)
    expected = x * s + x
    expected = expected * s + expected
    interpret(module, (1,), [x, 0.37])
    np.testing.assert_array_equal(x, expected)


def reduce_lines(source: str, axis: int, combine: list[str], elem: str, name: str) -> list[str]:
    """A single-operand tt.reduce of the 8x16 tile %source along `axis`."""
    out = f"tensor<{N if axis == 0 else M}x{elem}>"
    return [f'%{name} = "tt.reduce"(%{source}) <{{axis = {axis} : i32}}> ({{',
            f"^bb0(%l: {elem}, %r: {elem}):",
            *["  " + c for c in combine],
            "}) : (" + f"{TILE}x{elem}>) -> {out}"]


def store_vector(value: str, ptr: str, elem: str, n: int, name: str) -> list[str]:
    return [*vector_pointers(ptr, elem, n, name),
            f"tt.store %{name}, %{value} : tensor<{n}x!tt.ptr<{elem}>>"]


@pytest.mark.parametrize("axis", [0, 1])
def test_reduce_sum_and_max_along_each_axis(axis):
    n_out = N if axis == 0 else M
    add = ["%c = arith.addi %l, %r : i32", "tt.reduce.return %c : i32"]
    fmax = ["%c = arith.maxnumf %l, %r : f32", "tt.reduce.return %c : f32"]
    lines = [*tile_pointers("x", "i32", M, N, "px"), f"%xv = tt.load %px : {TILE}x!tt.ptr<i32>>",
             *tile_pointers("y", "f32", M, N, "py"), f"%yv = tt.load %py : {TILE}x!tt.ptr<f32>>",
             *reduce_lines("xv", axis, add, "i32", "s"),
             *reduce_lines("yv", axis, fmax, "f32", "m"),
             *store_vector("s", "so", "i32", n_out, "ps"),
             *store_vector("m", "mo", "f32", n_out, "pm")]
    module = kernel("%x: !tt.ptr<i32>, %y: !tt.ptr<f32>, %so: !tt.ptr<i32>, %mo: !tt.ptr<f32>",
                    lines)
    x = RNG.integers(-2 ** 31, 2 ** 31 - 1, (M, N)).astype(np.int32)
    y = RNG.standard_normal((M, N)).astype(np.float32)
    so, mo = np.zeros(n_out, np.int32), np.zeros(n_out, np.float32)
    interpret(module, (1,), [x, y, so, mo])
    np.testing.assert_array_equal(so, x.sum(axis=axis, dtype=np.int32))   # wraps like i32
    np.testing.assert_array_equal(mo, y.max(axis=axis))


ARGMAX_COMBINE = [
    "^bb0(%v1: f32, %i1: i32, %v2: f32, %i2: i32):",
    "  %gt = arith.cmpf ogt, %v1, %v2 : f32",
    "  %eq = arith.cmpf oeq, %v1, %v2 : f32",
    "  %lt = arith.cmpi slt, %i1, %i2 : i32",
    "  %tie = arith.andi %eq, %lt : i1",
    "  %pick = arith.ori %gt, %tie : i1",
    "  %v = arith.select %pick, %v1, %v2 : f32",
    "  %i = arith.select %pick, %i1, %i2 : i32",
    "  tt.reduce.return %v, %i : f32, i32",
]


@pytest.mark.parametrize("axis", [0, 1])
def test_argmax_picks_the_lowest_index_on_ties(axis):
    n_out = N if axis == 0 else M
    index = "px_rows" if axis == 0 else "px_cols"
    lines = [*tile_pointers("x", "f32", M, N, "px"), f"%xv = tt.load %px : {TILE}x!tt.ptr<f32>>",
             f'%am:2 = "tt.reduce"(%xv, %{index}) <{{axis = {axis} : i32}}> ({{',
             *ARGMAX_COMBINE,
             f"}}) : ({TILE}xf32>, {TILE}xi32>) -> (tensor<{n_out}xf32>, tensor<{n_out}xi32>)",
             *vector_pointers("out", "i32", n_out, "po"),
             f"tt.store %po, %am#1 : tensor<{n_out}x!tt.ptr<i32>>"]
    module = kernel("%x: !tt.ptr<f32>, %out: !tt.ptr<i32>", lines)
    for _ in range(5):
        x = RNG.integers(0, 3, (M, N)).astype(np.float32)      # many ties
        out = np.full(n_out, -1, np.int32)
        interpret(module, (1,), [x, out])
        np.testing.assert_array_equal(out, np.argmax(x, axis=axis))


@pytest.mark.parametrize("take, expected_index", [("l", 0), ("r", -1)])
def test_reduce_passes_earlier_elements_as_the_left_operand(take, expected_index):
    combine = [f"tt.reduce.return %{take} : i32"]
    lines = [*tile_pointers("x", "i32", M, N, "px"), f"%xv = tt.load %px : {TILE}x!tt.ptr<i32>>",
             *reduce_lines("xv", 1, combine, "i32", "s"), *store_vector("s", "out", "i32", M, "po")]
    module = kernel("%x: !tt.ptr<i32>, %out: !tt.ptr<i32>", lines)
    x = RNG.integers(0, 1000, (M, N)).astype(np.int32)
    out = np.zeros(M, np.int32)
    interpret(module, (1,), [x, out])
    np.testing.assert_array_equal(out, x[:, expected_index])


def scan_lines(source: str, axis: int, reverse: bool, combine: list[str], name: str):
    return [f'%{name} = "tt.scan"(%{source}) <{{axis = {axis} : i32, reverse = '
            f'{"true" if reverse else "false"}}}> ({{',
            "^bb0(%l: i32, %r: i32):", *["  " + c for c in combine],
            f"}}) : ({TILE}xi32>) -> {TILE}xi32>"]


@pytest.mark.parametrize("axis, reverse", [(0, False), (1, False), (1, True), (0, True)])
def test_cumsum_scan(axis, reverse):
    add = ["%c = arith.addi %l, %r : i32", "tt.scan.return %c : i32"]
    lines = [*tile_pointers("x", "i32", M, N, "px"), f"%xv = tt.load %px : {TILE}x!tt.ptr<i32>>",
             *scan_lines("xv", axis, reverse, add, "s"),
             *tile_pointers("out", "i32", M, N, "po"), f"tt.store %po, %s : {TILE}x!tt.ptr<i32>>"]
    module = kernel("%x: !tt.ptr<i32>, %out: !tt.ptr<i32>", lines)
    x = RNG.integers(-100, 100, (M, N)).astype(np.int32)
    out = np.zeros((M, N), np.int32)
    interpret(module, (1,), [x, out])
    if reverse:
        expected = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    else:
        expected = np.cumsum(x, axis=axis)
    np.testing.assert_array_equal(out, expected)


def test_scan_passes_earlier_elements_as_the_left_operand():
    first = ["tt.scan.return %l : i32"]
    lines = [*tile_pointers("x", "i32", M, N, "px"), f"%xv = tt.load %px : {TILE}x!tt.ptr<i32>>",
             *scan_lines("xv", 1, False, first, "s"),
             *tile_pointers("out", "i32", M, N, "po"), f"tt.store %po, %s : {TILE}x!tt.ptr<i32>>"]
    module = kernel("%x: !tt.ptr<i32>, %out: !tt.ptr<i32>", lines)
    x = RNG.integers(0, 100, (M, N)).astype(np.int32)
    out = np.zeros((M, N), np.int32)
    interpret(module, (1,), [x, out])
    np.testing.assert_array_equal(out, np.repeat(x[:, :1], N, axis=1))


def test_combine_region_with_control_flow_falls_back_per_element():
    combine = ["%gt = arith.cmpi sgt, %l, %r : i32",
               "%c = scf.if %gt -> (i32) {", "  scf.yield %l : i32", "} else {",
               "  scf.yield %r : i32", "}", "tt.reduce.return %c : i32"]
    lines = [*tile_pointers("x", "i32", M, N, "px"), f"%xv = tt.load %px : {TILE}x!tt.ptr<i32>>",
             *reduce_lines("xv", 0, combine, "i32", "s"), *store_vector("s", "out", "i32", N, "po")]
    module = kernel("%x: !tt.ptr<i32>, %out: !tt.ptr<i32>", lines)
    x = RNG.integers(-1000, 1000, (M, N)).astype(np.int32)
    out = np.zeros(N, np.int32)
    interpret(module, (1,), [x, out])
    np.testing.assert_array_equal(out, x.max(axis=0))


def dot_kernel(in_elem: str, acc_elem: str, m: int, k: int, n: int):
    lines = [*tile_pointers("a", in_elem, m, k, "pa"),
             f"%av = tt.load %pa : tensor<{m}x{k}x!tt.ptr<{in_elem}>>",
             *tile_pointers("b", in_elem, k, n, "pb"),
             f"%bv = tt.load %pb : tensor<{k}x{n}x!tt.ptr<{in_elem}>>",
             *tile_pointers("c", acc_elem, m, n, "pc"),
             f"%cv = tt.load %pc : tensor<{m}x{n}x!tt.ptr<{acc_elem}>>",
             f"%d = tt.dot %av, %bv, %cv, inputPrecision = ieee : tensor<{m}x{k}x{in_elem}> * "
             f"tensor<{k}x{n}x{in_elem}> -> tensor<{m}x{n}x{acc_elem}>",
             f"tt.store %pc, %d : tensor<{m}x{n}x!tt.ptr<{acc_elem}>>"]
    return kernel(f"%a: !tt.ptr<{in_elem}>, %b: !tt.ptr<{in_elem}>, %c: !tt.ptr<{acc_elem}>",
                  lines)


def test_dot_fp16_accumulates_in_fp32():
    a = RNG.standard_normal((16, 32)).astype(np.float16)
    b = RNG.standard_normal((32, 16)).astype(np.float16)
    c = RNG.standard_normal((16, 16)).astype(np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64) + c
    interpret(dot_kernel("f16", "f32", 16, 32, 16), (1,), [a, b, c])
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)
    # a long fp16 accumulation would be far off; fp32 keeps it within fp32 rounding
    ones_a = np.full((16, 512), 1.0, np.float16)
    ones_b = np.full((512, 16), 1.0, np.float16)
    acc = np.full((16, 16), 4096.0, np.float32)
    interpret(dot_kernel("f16", "f32", 16, 512, 16), (1,), [ones_a, ones_b, acc])
    assert (acc == 4608.0).all()


def test_dot_int8_is_exact():
    a = RNG.integers(-128, 127, (16, 64)).astype(np.int8)
    b = RNG.integers(-128, 127, (64, 16)).astype(np.int8)
    c = np.zeros((16, 16), np.int32)
    interpret(dot_kernel("i8", "i32", 16, 64, 16), (1,), [a, b, c])
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


def test_print_formats_like_device_print():
    lines = [*vector_pointers("x", "i32", 16, "p"), "%v = tt.load %p : tensor<16x!tt.ptr<i32>>",
             '"tt.print"(%v) <{hex = false, isSigned = array<i32: 1>, prefix = " x: "}> : '
             "(tensor<16xi32>) -> ()",
             '"tt.print"(%s) <{hex = true, isSigned = array<i32: 0>, prefix = " s: "}> : '
             "(i32) -> ()"]
    module = kernel("%x: !tt.ptr<i32>, %s: i32", lines)
    x = np.arange(-8, 8, dtype=np.int32)
    stream = io.StringIO()
    interpret(module, (2,), [x, 255], stdout=stream)
    out = stream.getvalue().splitlines()
    assert len(out) == 2 * 17
    assert out[0] == "pid (0, 0, 0) idx ( 0) x: -8"
    assert out[15] == "pid (0, 0, 0) idx (15) x: 7"
    assert out[16] == "pid (0, 0, 0) idx () s: 0x000000ff"
    assert out[17] == "pid (1, 0, 0) idx ( 0) x: -8"


def test_assert_raises_with_message_and_program():
    lines = ["%pid = tt.get_program_id x : i32",
             "%c2 = arith.constant 2 : i32",
             "%ok = arith.cmpi slt, %pid, %c2 : i32",
             '"tt.assert"(%ok) <{message = "pid must be below 2"}> : (i1) -> ()']
    module = kernel("%x: !tt.ptr<i32>", lines)
    interpret(module, (2,), [np.zeros(1, np.int32)])
    with pytest.raises(KernelAssertionError) as info:
        interpret(module, (4,), [np.zeros(1, np.int32)])
    assert "pid must be below 2" in str(info.value)
    assert info.value.pid == (2, 0, 0)


def test_every_op_of_the_ttir_dialects_has_semantics():
    import compiler.dialects  # noqa: F401
    from compiler.ir.core import OP_REGISTRY
    from compiler.runtime.interp.registry import SEMANTICS

    from compiler.ir.traits import Terminator

    structural = {"tt.func"}
    missing = [name for name, cls in OP_REGISTRY.items()
               if name.split(".")[0] in ("arith", "math", "tt", "scf")
               and name not in structural and not cls.class_has_trait(Terminator)
               and cls not in SEMANTICS]
    assert missing == []
