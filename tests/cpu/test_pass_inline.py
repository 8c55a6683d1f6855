"""inline: tt.call of module functions, call-site locations, removal of dead private functions."""
from compiler.ir import parse_module
from compiler.ir.location import CallSiteLoc
from tests.cpu.pass_helpers import check_pass, patterns_fired, run_pipeline

IR = """
#loc1 = loc("k.py":3:4)
#loc2 = loc("k.py":10:8)
module {
  tt.func private @helper(%x: i32, %y: i32) -> i32 {
    %s = arith.addi %x, %y : i32 loc(#loc1)
    %m = arith.muli %s, %s : i32 loc(#loc1)
    tt.return %m : i32
  }
  tt.func public @k(%p: !tt.ptr<i32>, %n: i32) {
    %r = tt.call @helper(%n, %n) : (i32, i32) -> (i32) loc(#loc2)
    %r2 = tt.call @helper(%r, %n) : (i32, i32) -> (i32) loc(#loc2)
    tt.store %p, %r2 : !tt.ptr<i32>
    tt.return
  }
}
"""


def test_calls_are_inlined_and_private_function_removed():
    trace = check_pass(IR, "inline", """
        CHECK-NOT: @helper
        CHECK: tt.func public @k
        CHECK-NEXT: arith.addi %n, %n
        CHECK-NEXT: arith.muli
        CHECK-NEXT: arith.addi
        CHECK-NEXT: arith.muli
        CHECK-NEXT: tt.store
    """)
    assert patterns_fired(trace) == {"inline-call": 2, "erase-unused-private-function": 1}


def test_inlined_ops_carry_call_site_locations():
    text, _ = run_pipeline(IR, "inline")
    module = parse_module(text)
    ops = [op for op in module.walk() if op.name in ("arith.addi", "arith.muli")]
    assert ops and all(isinstance(op.loc, CallSiteLoc) for op in ops)
    assert ops[0].loc.callee.file_line_col().line == 3
    assert ops[0].loc.caller.file_line_col().line == 10


def test_public_and_noinline_functions_stay():
    ir = IR.replace("tt.func private @helper(%x: i32, %y: i32) -> i32 {",
                    "tt.func public @helper(%x: i32, %y: i32) -> i32 attributes {noinline = true} {")
    check_pass(ir, "inline", "CHECK: tt.func public @helper\nCHECK: tt.call @helper")


def test_recursive_function_is_not_inlined():
    ir = """
    module {
      tt.func private @f(%x: i32) -> i32 {
        %r = tt.call @f(%x) : (i32) -> (i32)
        tt.return %r : i32
      }
      tt.func public @k(%p: !tt.ptr<i32>, %n: i32) {
        %r = tt.call @f(%n) : (i32) -> (i32)
        tt.store %p, %r : !tt.ptr<i32>
        tt.return
      }
    }
    """
    check_pass(ir, "inline", "CHECK: tt.func private @f\nCHECK: tt.call @f(%n)")
