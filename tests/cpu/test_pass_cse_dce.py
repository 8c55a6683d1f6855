"""cse and dce: region-aware merging of pure ops; removal of dead code."""
from tests.cpu.pass_helpers import check_pass, kernel, patterns_fired

PTRS = "%ps = tt.splat %p : !tt.ptr<f32> -> tensor<2x!tt.ptr<f32>>"


def test_cse_merges_pure_duplicates():
    ir = kernel(f"""
        {PTRS}
        %a = tt.make_range {{end = 2 : i32, start = 0 : i32}} : tensor<2xi32>
        %b = tt.make_range {{end = 2 : i32, start = 0 : i32}} : tensor<2xi32>
        %q1 = tt.addptr %ps, %a : tensor<2x!tt.ptr<f32>>, tensor<2xi32>
        %q2 = tt.addptr %ps, %b : tensor<2x!tt.ptr<f32>>, tensor<2xi32>
        %v = tt.load %q1 : tensor<2x!tt.ptr<f32>>
        tt.store %q2, %v : tensor<2x!tt.ptr<f32>>
    """)
    trace = check_pass(ir, "cse", """
        CHECK: %a = tt.make_range
        CHECK-NOT: tt.make_range
        CHECK: %q1 = tt.addptr %ps, %a
        CHECK-NOT: tt.addptr
        CHECK: tt.store %q1, %v
    """)
    assert patterns_fired(trace) == {"merge tt.make_range": 1, "merge tt.addptr": 1}


def test_cse_keeps_loads_and_different_attributes():
    ir = kernel(f"""
        {PTRS}
        %v1 = tt.load %ps : tensor<2x!tt.ptr<f32>>
        tt.store %ps, %v1 : tensor<2x!tt.ptr<f32>>
        %v2 = tt.load %ps : tensor<2x!tt.ptr<f32>>
        %a = tt.make_range {{end = 2 : i32, start = 0 : i32}} : tensor<2xi32>
        %b = tt.make_range {{end = 4 : i32, start = 2 : i32}} : tensor<2xi32>
        %s = arith.addi %a, %b : tensor<2xi32>
        %q = tt.addptr %ps, %s : tensor<2x!tt.ptr<f32>>, tensor<2xi32>
        tt.store %q, %v2 : tensor<2x!tt.ptr<f32>>
    """)
    check_pass(ir, "cse", """
        CHECK: %v1 = tt.load
        CHECK: %v2 = tt.load
        CHECK: tt.make_range {end = 2
        CHECK: tt.make_range {end = 4
    """)


def test_cse_keeps_zero_and_negative_zero_apart():
    # 0.0 and -0.0 are equal as Python floats but are different constants (x * -0.0 keeps a
    # sign that x * 0.0 loses): their attributes compare by bits, so cse merges neither.
    ir = kernel("""
        %z = arith.constant 0.000000e+00 : f32
        %m = arith.constant -0.000000e+00 : f32
        %zs = arith.constant dense<0.000000e+00> : tensor<2xf32>
        %ns = arith.constant dense<-0.000000e+00> : tensor<2xf32>
        tt.store %p, %z : !tt.ptr<f32>
        tt.store %p, %m : !tt.ptr<f32>
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<2x!tt.ptr<f32>>
        tt.store %ps, %zs : tensor<2x!tt.ptr<f32>>
        tt.store %ps, %ns : tensor<2x!tt.ptr<f32>>
    """)
    check_pass(ir, "cse", """
        CHECK: arith.constant 0.000000e+00
        CHECK: arith.constant -0.000000e+00
        CHECK: arith.constant dense<0.000000e+00>
        CHECK: arith.constant dense<-0.000000e+00>
        CHECK: tt.store %p, %z
        CHECK: tt.store %p, %m
        CHECK: tt.store %ps, %zs
        CHECK: tt.store %ps, %ns
    """)


def test_cse_uses_outer_values_but_not_sibling_regions():
    ir = kernel(f"""
        {PTRS}
        %c0 = arith.constant 0 : i32
        %cond = arith.cmpi sgt, %n, %c0 : i32
        %x = arith.muli %n, %n : i32
        %r = scf.if %cond -> (i32) {{
          %y = arith.muli %n, %n : i32
          %t = arith.addi %y, %n : i32
          scf.yield %t : i32
        }} else {{
          %t2 = arith.addi %x, %n : i32
          scf.yield %t2 : i32
        }}
        %z = arith.addi %x, %n : i32
        %s = arith.addi %r, %z : i32
        %ss = tt.splat %s : i32 -> tensor<2xi32>
        %q = tt.addptr %ps, %ss : tensor<2x!tt.ptr<f32>>, tensor<2xi32>
        %v = tt.load %q : tensor<2x!tt.ptr<f32>>
        tt.store %q, %v : tensor<2x!tt.ptr<f32>>
    """)
    # %y merges with the outer %x; the else arm's %t2 must not replace the outer %z.
    check_pass(ir, "cse", """
        CHECK: %x = arith.muli %n, %n
        CHECK: scf.if
        CHECK-NOT: arith.muli
        CHECK: arith.addi %x, %n
        CHECK: else
        CHECK: arith.addi %x, %n
        CHECK: %z = arith.addi %x, %n
    """)


def test_dce_removes_unused_pure_ops_keeps_effects():
    ir = kernel(f"""
        {PTRS}
        %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
        %dead1 = arith.addf %v, %v : tensor<2xf32>
        %dead2 = arith.mulf %dead1, %v : tensor<2xf32>
        %old = "tt.atomic_rmw"(%ps, %v) <{{atomic_rmw_op = "fadd", sem = "acq_rel", scope = "gpu"}}> : (tensor<2x!tt.ptr<f32>>, tensor<2xf32>) -> tensor<2xf32>
        tt.store %ps, %v : tensor<2x!tt.ptr<f32>>
    """)
    check_pass(ir, "dce", """
        CHECK-NOT: arith.addf
        CHECK-NOT: arith.mulf
        CHECK: tt.atomic_rmw
        CHECK: tt.store
    """)


def test_dce_drops_dead_loop_carried_values():
    ir = kernel(f"""
        {PTRS}
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %z = arith.constant dense<0.000000e+00> : tensor<2xf32>
        %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z, %junk = %c0) -> (tensor<2xf32>, i32) : i32 {{
          %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
          %a = arith.addf %acc, %v : tensor<2xf32>
          %j = arith.addi %junk, %i : i32
          scf.yield %a, %j : tensor<2xf32>, i32
        }}
        tt.store %ps, %r#0 : tensor<2x!tt.ptr<f32>>
    """)
    trace = check_pass(ir, "dce", """
        CHECK: scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<2xf32>)
        CHECK-NOT: arith.addi
        CHECK: scf.yield %a : tensor<2xf32>
    """)
    assert patterns_fired(trace)["drop-dead-iter-arg"] == 1


def test_dce_keeps_loop_values_that_feed_a_store():
    ir = kernel(f"""
        {PTRS}
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %z = arith.constant dense<0.000000e+00> : tensor<2xf32>
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<2xf32>) : i32 {{
          %a = arith.addf %acc, %acc : tensor<2xf32>
          tt.store %ps, %a : tensor<2x!tt.ptr<f32>>
          scf.yield %a : tensor<2xf32>
        }}
    """)
    check_pass(ir, "dce", "CHECK: iter_args(%acc = %z)\nCHECK: tt.store %ps, %a")
