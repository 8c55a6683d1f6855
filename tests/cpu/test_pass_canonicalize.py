"""canonicalize: folding, identities, splat/broadcast folding, dead control flow."""
from tests.cpu.pass_helpers import check_pass, kernel, patterns_fired, run_pipeline


def test_folds_scalar_arithmetic_and_identities():
    ir = kernel("""
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %c7 = arith.constant 7 : i32
        %a = arith.addi %c1, %c7 : i32
        %b = arith.muli %a, %c7 : i32
        %x = arith.addi %n, %c0 : i32
        %y = arith.muli %c1, %x : i32
        %z = arith.addi %y, %b : i32
        %s = tt.splat %z : i32 -> tensor<4xi32>
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
        %q = tt.addptr %ps, %s : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
        %v = tt.load %q : tensor<4x!tt.ptr<f32>>
        tt.store %q, %v : tensor<4x!tt.ptr<f32>>
    """)
    trace = check_pass(ir, "canonicalize", """
        CHECK: arith.constant 56 : i32
        CHECK-NOT: arith.muli
        CHECK: arith.addi %n, %{{.*}} : i32
        CHECK-NOT: arith.constant 0 : i32
    """)
    fired = patterns_fired(trace)
    assert fired["fold-constant-binary"] == 2 and fired["fold-identity"] == 2


def test_wrapping_and_signed_division():
    ir = kernel("""
        %big = arith.constant 2147483647 : i32
        %one = arith.constant 1 : i32
        %m7 = arith.constant -7 : i32
        %two = arith.constant 2 : i32
        %w = arith.addi %big, %one : i32
        %d = arith.divsi %m7, %two : i32
        %r = arith.remsi %m7, %two : i32
        %u = arith.divui %m7, %two : i32
        tt.store %out, %w : !tt.ptr<i32>
        tt.store %out, %d : !tt.ptr<i32>
        tt.store %out, %r : !tt.ptr<i32>
        tt.store %out, %u : !tt.ptr<i32>
    """)
    check_pass(ir, "canonicalize", """
        CHECK: arith.constant -2147483648 : i32
        CHECK: arith.constant -3 : i32
        CHECK: arith.constant -1 : i32
        CHECK: arith.constant 2147483644 : i32
        CHECK-NOT: arith.addi
        CHECK-NOT: arith.div
    """)


def test_division_by_zero_is_not_folded():
    ir = kernel("""
        %c0 = arith.constant 0 : i32
        %c5 = arith.constant 5 : i32
        %d = arith.divsi %c5, %c0 : i32
        tt.store %out, %d : !tt.ptr<i32>
    """)
    check_pass(ir, "canonicalize", "CHECK: arith.divsi")


def test_float_folding_respects_nan_semantics():
    ir = kernel("""
        %a = arith.constant 1.500000e+00 : f32
        %b = arith.constant 2.500000e+00 : f32
        %c = arith.mulf %a, %b : f32
        %zero = arith.constant 0.000000e+00 : f32
        %x = tt.splat %c : f32 -> tensor<2xf32>
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<2x!tt.ptr<f32>>
        %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
        %zs = tt.splat %zero : f32 -> tensor<2xf32>
        %m = arith.mulf %v, %zs : tensor<2xf32>
        %y = arith.addf %m, %x : tensor<2xf32>
        tt.store %ps, %y : tensor<2x!tt.ptr<f32>>
    """)
    # x * 0.0 is not 0.0 (NaN, -0.0): it must stay.
    check_pass(ir, "canonicalize", """
        CHECK: dense<3.750000e+00>
        CHECK: arith.mulf %v, %{{.*}} : tensor<2xf32>
    """)


def test_compare_and_select_with_constant_condition():
    ir = kernel("""
        %c1 = arith.constant 1 : i32
        %c2 = arith.constant 2 : i32
        %lt = arith.cmpi slt, %c1, %c2 : i32
        %s = arith.select %lt, %n, %c2 : i1, i32
        tt.store %out, %s : !tt.ptr<i32>
    """)
    check_pass(ir, "canonicalize", """
        CHECK-NOT: arith.cmpi
        CHECK-NOT: arith.select
        CHECK: tt.store %out, %n
    """)


def test_select_with_unknown_condition_stays():
    ir = kernel("""
        %c2 = arith.constant 2 : i32
        %lt = arith.cmpi slt, %n, %c2 : i32
        %s = arith.select %lt, %n, %c2 : i1, i32
        tt.store %out, %s : !tt.ptr<i32>
    """)
    check_pass(ir, "canonicalize", "CHECK: arith.cmpi slt\nCHECK-NEXT: arith.select")


def test_splat_and_broadcast_folding():
    ir = kernel("""
        %c3 = arith.constant 3 : i32
        %s = tt.splat %c3 : i32 -> tensor<1x8xi32>
        %b = tt.broadcast %s : tensor<1x8xi32> -> tensor<4x8xi32>
        %sn = tt.splat %n : i32 -> tensor<4x1xi32>
        %bn = tt.broadcast %sn : tensor<4x1xi32> -> tensor<4x8xi32>
        %e = arith.addi %b, %bn : tensor<4x8xi32>
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x8x!tt.ptr<f32>>
        %q = tt.addptr %ps, %e : tensor<4x8x!tt.ptr<f32>>, tensor<4x8xi32>
        %v = tt.load %q : tensor<4x8x!tt.ptr<f32>>
        tt.store %q, %v : tensor<4x8x!tt.ptr<f32>>
    """)
    trace = check_pass(ir, "canonicalize", """
        CHECK: arith.constant dense<3> : tensor<4x8xi32>
        CHECK-NOT: tt.broadcast
        CHECK: tt.splat %n : i32 -> tensor<4x8xi32>
    """)
    fired = patterns_fired(trace)
    assert fired["splat-of-constant"] == 1 and fired["splat-through-broadcast"] == 1


def test_dead_if_arm_is_removed():
    ir = kernel("""
        %false = arith.constant false : i1
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<2x!tt.ptr<f32>>
        %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
        %w = scf.if %false -> (tensor<2xf32>) {
          %d = arith.mulf %v, %v : tensor<2xf32>
          scf.yield %d : tensor<2xf32>
        } else {
          %e = arith.addf %v, %v : tensor<2xf32>
          scf.yield %e : tensor<2xf32>
        }
        tt.store %ps, %w : tensor<2x!tt.ptr<f32>>
    """)
    check_pass(ir, "canonicalize", """
        CHECK-NOT: scf.if
        CHECK-NOT: arith.mulf
        CHECK: %e = arith.addf %v, %v
        CHECK-NEXT: tt.store %ps, %e
    """)


def test_if_with_unknown_condition_and_side_effects_stays():
    ir = kernel("""
        %c0 = arith.constant 0 : i32
        %c = arith.cmpi sgt, %n, %c0 : i32
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<2x!tt.ptr<f32>>
        %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
        scf.if %c {
          tt.store %ps, %v : tensor<2x!tt.ptr<f32>>
          scf.yield
        }
    """)
    check_pass(ir, "canonicalize", "CHECK: scf.if %c\nCHECK-NEXT: tt.store")


def test_zero_trip_loop_folds_to_its_initial_values():
    ir = kernel("""
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %init = arith.constant 5 : i32
        %r = scf.for %i = %c1 to %c0 step %c1 iter_args(%a = %init) -> (i32) : i32 {
          %b = arith.addi %a, %n : i32
          scf.yield %b : i32
        }
        tt.store %out, %r : !tt.ptr<i32>
    """)
    check_pass(ir, "canonicalize", "CHECK-NOT: scf.for\nCHECK: [[C:%[a-z0-9_]+]] = arith.constant 5 : i32\nCHECK-NEXT: tt.store %out, [[C]]")


def test_unused_store_is_never_erased():
    ir = kernel("""
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<2x!tt.ptr<f32>>
        %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
        %unused = arith.addf %v, %v : tensor<2xf32>
        tt.store %ps, %v : tensor<2x!tt.ptr<f32>>
    """)
    check_pass(ir, "canonicalize", "CHECK-NOT: arith.addf\nCHECK: tt.store")


def test_nothing_to_do_is_recorded_as_unchanged(reference_dir):
    text = (reference_dir / "add.ttir").read_text()
    _, trace = run_pipeline(text, "canonicalize")
    assert trace.passes[0].changed is False and trace.passes[0].patterns == {}
