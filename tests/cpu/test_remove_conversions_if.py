"""remove-layout-conversions carries values through a runtime scf.if in the layout its
branches compute them in (both branches yield converted values), so a loop around the if
(attention's K loop with `if start_n >= causal_start:`) pays no conversion per iteration."""
from __future__ import annotations

from tests.cpu.filecheck import filecheck
from tests.cpu.test_ttgir_passes import ARG16, B1, B4, run, ttgir

# a K-loop-like body: a load (the anchor, in #b4), a runtime if whose two branches compute in
# #b4 and yield in the default #b1, and a loop-carried sum of the if's result
IF_IN_LOOP = """
%c0 = arith.constant 0 : i32
%c1 = arith.constant 1 : i32
%zero = arith.constant dense<0.000000e+00> : tensor<512xf32, #b1>
%r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b4>
%base = tt.splat %x : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #b4>
%ptrs = tt.addptr %base, %r : tensor<512x!tt.ptr<f32>, #b4>, tensor<512xi32, #b4>
%acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %zero) -> (tensor<512xf32, #b1>) : i32 {
  %v = tt.load %ptrs : tensor<512x!tt.ptr<f32>, #b4>
  %late = arith.cmpi sge, %i, %k : i32
  %w = scf.if %late -> (tensor<512xf32, #b1>) {
    %sq = arith.mulf %v, %v : tensor<512xf32, #b4>
    %sq1 = ttg.convert_layout %sq : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
    scf.yield %sq1 : tensor<512xf32, #b1>
  } else {
    %db = arith.addf %v, %v : tensor<512xf32, #b4>
    %db1 = ttg.convert_layout %db : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
    scf.yield %db1 : tensor<512xf32, #b1>
  }
  %s = arith.addf %a, %w : tensor<512xf32, #b1>
  scf.yield %s : tensor<512xf32, #b1>
}
%r1 = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b1>
%ybase = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #b1>
%yptrs = tt.addptr %ybase, %r1 : tensor<512x!tt.ptr<f32>, #b1>, tensor<512xi32, #b1>
tt.store %yptrs, %acc : tensor<512x!tt.ptr<f32>, #b1>
"""


def _if_in_loop() -> str:
    return ttgir(IF_IN_LOOP, f"%x: !tt.ptr<f32> {ARG16}, %y: !tt.ptr<f32> {ARG16}, "
                 f"%n: i32, %k: i32", {"b1": B1, "b4": B4})


def test_if_results_take_the_layout_their_branches_yield_from():
    text, fired = run(_if_in_loop(), "remove-layout-conversions")
    # the only layout left is the load's #b4 (sizePerThread 4); no conversion anywhere
    filecheck(text, """
        CHECK: [[B4:#[a-z0-9]+]] = #ttg.blocked<{sizePerThread = [4]
        CHECK-NOT: ttg.convert_layout
        CHECK: scf.for
        CHECK-SAME: -> (tensor<512xf32, [[B4]]>)
        CHECK: scf.if %late -> (tensor<512xf32, [[B4]]>)
        CHECK-NEXT: %sq = arith.mulf
        CHECK-NEXT: scf.yield %sq : tensor<512xf32, [[B4]]>
        CHECK: %db = arith.addf
        CHECK-NEXT: scf.yield %db : tensor<512xf32, [[B4]]>
        CHECK: arith.addf %a, %w : tensor<512xf32, [[B4]]>
        CHECK-NEXT: scf.yield %s
        CHECK-NOT: ttg.convert_layout
        CHECK: tt.store
    """)
    assert fired.get("carry scf.if value in its yielded layout") == 1


def test_if_with_a_branch_yielding_an_unconverted_value_keeps_its_layout():
    # the else branch yields the loop-carried value itself (#b1, nothing to rebuild): there is
    # no one layout both branches yield from, so the if keeps its result type and the then
    # branch its conversion
    ir = _if_in_loop().replace("scf.yield %db1 : tensor<512xf32, #b1>",
                               "scf.yield %a : tensor<512xf32, #b1>")
    assert "scf.yield %a :" in ir
    text, fired = run(ir, "remove-layout-conversions")
    assert "carry scf.if value in its yielded layout" not in fired
    filecheck(text, """
        CHECK: scf.if %late -> (tensor<512xf32, [[B1:#[a-z0-9]+]]>)
        CHECK: ttg.convert_layout %sq
        CHECK-SAME: -> tensor<512xf32, [[B1]]>
        CHECK: scf.yield %a : tensor<512xf32, [[B1]]>
    """)
