"""combine: addptr chains, select of equal operands, dot + add into the accumulator."""
from tests.cpu.pass_helpers import check_pass, kernel, patterns_fired

DOT_ARGS = "%a: !tt.ptr<f16>, %b: !tt.ptr<f16>, %c: !tt.ptr<f32>"
DOT_HEADER = """
%pa = tt.splat %a : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
%pb = tt.splat %b : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
%pc = tt.splat %c : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
%x = tt.load %pa : tensor<16x16x!tt.ptr<f16>>
%y = tt.load %pb : tensor<16x16x!tt.ptr<f16>>
%d = tt.load %pc : tensor<16x16x!tt.ptr<f32>>
"""


def test_addptr_chain_becomes_one_addptr():
    ir = kernel("""
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
        %o1 = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
        %o2 = tt.splat %n : i32 -> tensor<4xi32>
        %q1 = tt.addptr %ps, %o1 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %q2 = tt.addptr %q1, %o2 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %v = tt.load %q2 : tensor<4x!tt.ptr<f32>>
        tt.store %q2, %v : tensor<4x!tt.ptr<f32>>
    """)
    trace = check_pass(ir, "combine", """
        CHECK: [[SUM:%[0-9]+]] = arith.addi %o1, %o2
        CHECK-NEXT: [[PTR:%[0-9]+]] = tt.addptr %ps, [[SUM]]
        CHECK-NEXT: tt.load [[PTR]]
        CHECK-NOT: tt.addptr
    """)
    assert patterns_fired(trace)["combine-addptr-chain"] == 1


def test_addptr_chain_with_different_offset_types_stays():
    ir = kernel("""
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
        %o1 = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
        %o2 = arith.extsi %o1 : tensor<4xi32> to tensor<4xi64>
        %q1 = tt.addptr %ps, %o1 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %q2 = tt.addptr %q1, %o2 : tensor<4x!tt.ptr<f32>>, tensor<4xi64>
        %v = tt.load %q2 : tensor<4x!tt.ptr<f32>>
        tt.store %q2, %v : tensor<4x!tt.ptr<f32>>
    """)
    check_pass(ir, "combine", "CHECK: %q1 = tt.addptr %ps, %o1\nCHECK: %q2 = tt.addptr %q1, %o2")


def test_select_of_equal_operands():
    ir = kernel("""
        %c0 = arith.constant 0 : i32
        %cond = arith.cmpi sgt, %n, %c0 : i32
        %s = arith.select %cond, %n, %n : i1, i32
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
        %t = tt.splat %s : i32 -> tensor<4xi32>
        %q = tt.addptr %ps, %t : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %v = tt.load %q : tensor<4x!tt.ptr<f32>>
        tt.store %q, %v : tensor<4x!tt.ptr<f32>>
    """)
    check_pass(ir, "combine", "CHECK-NOT: arith.select\nCHECK: tt.splat %n : i32")


def test_dot_plus_add_folds_into_accumulator():
    ir = kernel(DOT_HEADER + """
        %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
        %m = tt.dot %x, %y, %zero, inputPrecision = tf32 : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
        %s = arith.addf %d, %m : tensor<16x16xf32>
        tt.store %pc, %s : tensor<16x16x!tt.ptr<f32>>
    """, args=DOT_ARGS)
    check_pass(ir, "combine", """
        CHECK: [[R:%[0-9]+]] = tt.dot %x, %y, %d, inputPrecision = tf32
        CHECK-NOT: arith.addf
        CHECK: tt.store %pc, [[R]]
    """)


def test_dot_with_nonzero_accumulator_or_other_users_stays():
    ir = kernel(DOT_HEADER + """
        %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
        %m = tt.dot %x, %y, %d : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
        %s = arith.addf %d, %m : tensor<16x16xf32>
        %m2 = tt.dot %x, %y, %zero : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
        %s2 = arith.addf %s, %m2 : tensor<16x16xf32>
        %s3 = arith.addf %s2, %m2 : tensor<16x16xf32>
        tt.store %pc, %s3 : tensor<16x16x!tt.ptr<f32>>
    """, args=DOT_ARGS)
    check_pass(ir, "combine", """
        CHECK: %m = tt.dot %x, %y, %d
        CHECK: %s = arith.addf %d, %m
        CHECK: %m2 = tt.dot %x, %y, %zero
        CHECK: %s2 = arith.addf %s, %m2
    """)
