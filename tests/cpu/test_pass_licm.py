"""licm: hoisting pure invariant ops; loads only when no write in the loop may alias them."""
from tests.cpu.pass_helpers import check_pass, kernel

HEADER = """
%ps = tt.splat %p : !tt.ptr<f32> -> tensor<2x!tt.ptr<f32>>
%c0 = arith.constant 0 : i32
%c1 = arith.constant 1 : i32
%c4 = arith.constant 4 : i32
%z = arith.constant dense<0.000000e+00> : tensor<2xf32>
"""


def loop(body: str, ub: str = "%c4") -> str:
    return kernel(HEADER + f"""
        %r = scf.for %i = %c0 to {ub} step %c1 iter_args(%acc = %z) -> (tensor<2xf32>) : i32 {{
        {body}
        }}
        tt.store %ps, %r : tensor<2x!tt.ptr<f32>>
    """)


def test_pure_invariant_ops_move_out():
    ir = loop("""
          %m = arith.muli %n, %n : i32
          %s = tt.splat %m : i32 -> tensor<2xi32>
          %q = tt.addptr %ps, %s : tensor<2x!tt.ptr<f32>>, tensor<2xi32>
          %si = tt.splat %i : i32 -> tensor<2xi32>
          %qi = tt.addptr %q, %si : tensor<2x!tt.ptr<f32>>, tensor<2xi32>
          %v = tt.load %qi : tensor<2x!tt.ptr<f32>>
          %a = arith.addf %acc, %v : tensor<2xf32>
          scf.yield %a : tensor<2xf32>
    """)
    check_pass(ir, "licm", """
        CHECK: %m = arith.muli %n, %n
        CHECK-NEXT: %s = tt.splat %m
        CHECK-NEXT: %q = tt.addptr %ps, %s
        CHECK-NEXT: scf.for
        CHECK-NEXT: %si = tt.splat %i
    """)


def test_invariant_load_hoists_when_loop_has_no_writes():
    ir = loop("""
          %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
          %a = arith.addf %acc, %v : tensor<2xf32>
          scf.yield %a : tensor<2xf32>
    """)
    check_pass(ir, "licm", "CHECK: %v = tt.load %ps\nCHECK-NEXT: scf.for")


def test_load_stays_when_a_store_in_the_loop_may_alias():
    ir = loop("""
          %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
          %a = arith.addf %acc, %v : tensor<2xf32>
          tt.store %ps, %a : tensor<2x!tt.ptr<f32>>
          scf.yield %a : tensor<2xf32>
    """)
    check_pass(ir, "licm", "CHECK: scf.for\nCHECK-NEXT: %v = tt.load %ps")


def test_load_stays_when_an_atomic_is_in_the_loop():
    ir = loop("""
          %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
          %a = arith.addf %acc, %v : tensor<2xf32>
          %o = "tt.atomic_rmw"(%ps, %a) <{atomic_rmw_op = "fadd", sem = "acq_rel", scope = "gpu"}> : (tensor<2x!tt.ptr<f32>>, tensor<2xf32>) -> tensor<2xf32>
          scf.yield %o : tensor<2xf32>
    """)
    check_pass(ir, "licm", "CHECK: scf.for\nCHECK-NEXT: %v = tt.load %ps")


def test_load_stays_when_the_loop_may_not_run():
    ir = loop("""
          %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
          %a = arith.addf %acc, %v : tensor<2xf32>
          scf.yield %a : tensor<2xf32>
    """, ub="%n")
    check_pass(ir, "licm", "CHECK: scf.for\nCHECK-NEXT: %v = tt.load %ps")


def test_hoist_loads_option_off():
    ir = loop("""
          %v = tt.load %ps : tensor<2x!tt.ptr<f32>>
          %a = arith.addf %acc, %v : tensor<2xf32>
          scf.yield %a : tensor<2xf32>
    """)
    check_pass(ir, "licm{hoist-loads=false}", "CHECK: scf.for\nCHECK-NEXT: %v = tt.load %ps")


def test_nested_loops_hoist_through_both_levels():
    ir = kernel(HEADER + """
        %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %z) -> (tensor<2xf32>) : i32 {
          %r2 = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc2 = %acc) -> (tensor<2xf32>) : i32 {
            %m = arith.muli %n, %c4 : i32
            %sj = arith.addi %j, %m : i32
            %s = tt.splat %sj : i32 -> tensor<2xi32>
            %q = tt.addptr %ps, %s : tensor<2x!tt.ptr<f32>>, tensor<2xi32>
            %v = tt.load %q : tensor<2x!tt.ptr<f32>>
            %a = arith.addf %acc2, %v : tensor<2xf32>
            scf.yield %a : tensor<2xf32>
          }
          scf.yield %r2 : tensor<2xf32>
        }
        tt.store %ps, %r : tensor<2x!tt.ptr<f32>>
    """)
    check_pass(ir, "licm", """
        CHECK: %m = arith.muli %n, %c4
        CHECK-NEXT: scf.for %i
        CHECK-NEXT: scf.for %j
        CHECK-NEXT: %sj = arith.addi %j, %m
    """)
